package org.ddp4j.examples;

import java.util.Locale;
import org.ddp4j.distributed.ProcessGroup;
import org.ddp4j.distributed.algorithms.ddpcommhooks.DefaultHooks;
import org.ddp4j.distributed.algorithms.ddpcommhooks.PowerSGD;
import org.ddp4j.distributed.algorithms.ddpcommhooks.PowerSGDState;
import org.ddp4j.nn.parallel.DistributedDataParallel;

/**
 * The demos' {@code --comm-hook allreduce|bf16|fp16|powersgd[:RANK]}: which DDP communication hook
 * to register (PowerSGD's rank defaults to 1, PyTorch's {@code matrix_approximation_rank}).
 *
 * @param name allreduce, bf16, fp16 or powersgd
 * @param rank PowerSGD's matrix approximation rank (1 for the others)
 */
record CommHookChoice(String name, int rank) {
    /**
     * Parses the flag's value.
     *
     * @throws IllegalArgumentException naming the accepted values for anything else
     */
    static CommHookChoice parse(String value) {
        String v = value.trim().toLowerCase(Locale.ROOT);
        String[] parts = v.split(":", -1);
        String name = parts[0];
        boolean known = name.equals("allreduce") || name.equals("bf16") || name.equals("fp16") || name.equals("powersgd");
        if (!known || parts.length > 2 || (parts.length == 2 && !name.equals("powersgd"))) {
            throw new IllegalArgumentException("--comm-hook must be allreduce, bf16, fp16 or powersgd[:RANK] (e.g."
                    + " powersgd:4), got '" + value + "'");
        }
        int rank = 1;
        if (parts.length == 2) {
            try {
                rank = Integer.parseInt(parts[1]);
            } catch (NumberFormatException e) {
                rank = 0;
            }
            if (rank < 1) {
                throw new IllegalArgumentException("--comm-hook powersgd:RANK needs a positive rank, got '" + value + "'");
            }
        }
        return new CommHookChoice(name, rank);
    }

    /**
     * Registers the hook on ddp over group. PowerSGD: rank {@link #rank()}, plain all-reduce for
     * the first {@code startPowerSGDIter} iterations, PyTorch's other defaults (compression rate 2,
     * error feedback, warm start, epsilon 0, seed 0). Returns the hook's state (the group, or the
     * PowerSGDState, which a checkpoint saves).
     */
    Object register(DistributedDataParallel ddp, ProcessGroup group, long startPowerSGDIter) {
        switch (name) {
            case "allreduce" -> ddp.registerCommHook(group, DefaultHooks.ALLREDUCE);
            case "bf16" -> ddp.registerCommHook(group, DefaultHooks.BF16_COMPRESS);
            case "fp16" -> ddp.registerCommHook(group, DefaultHooks.FP16_COMPRESS);
            default -> ddp.registerCommHook(new PowerSGDState(group, rank, startPowerSGDIter, 2, true, true, 0f, 0),
                    PowerSGD.POWER_SGD);
        }
        return ddp.commHookState();
    }

    @Override
    public String toString() {
        return name.equals("powersgd") ? name + ":" + rank : name;
    }
}

package org.ddp4j.amp;

import java.util.Arrays;
import org.ddp4j.distributed.Distributed;
import org.ddp4j.nn.Linear;
import org.ddp4j.nn.parallel.DistributedDataParallel;
import org.ddp4j.optim.SGD;
import org.ddp4j.tensor.Generator;
import org.ddp4j.tensor.Tensor;
import org.ddp4j.tensor.Tensors;

/**
 * One rank of {@link GradScalerDdpTest}: 3 steps of a DDP-wrapped Linear(3, 2) with a GradScaler;
 * at step 1, rank 1's input holds an inf. Args: {@code ddp|nosync} (backward all-reduced by DDP, or
 * inside noSync) and {@code sync|nosync} (the scaler's syncFoundInf). Prints
 * {@code step rank=R i=I stepped=B scale=S} per step and {@code params rank=R [..]} at the end.
 */
public final class GradScalerDdpMain {
    private GradScalerDdpMain() {}

    public static void main(String[] args) throws Exception {
        boolean allReduce = args[0].equals("ddp");
        boolean syncFoundInf = args[1].equals("sync");
        Distributed.initProcessGroup("gloo");
        int rank = Distributed.getRank();
        try (Linear net = new Linear(3, 2, true, new Generator(1))) {
            DistributedDataParallel ddp = new DistributedDataParallel(net);
            SGD opt = new SGD(ddp.parameters(), 0.1);
            GradScaler scaler = new GradScaler(new GradScaler.Options().syncFoundInf(syncFoundInf));
            for (int i = 0; i < 3; i++) {
                try (var scope = Tensors.scope()) {
                    opt.zeroGrad();
                    float bad = rank == 1 && i == 1 ? Float.POSITIVE_INFINITY : 0.5f;
                    Tensor x = Tensor.of(new float[] {1f, -2f, bad, 0.25f + rank, 3f, -1f}, 2, 3);
                    if (allReduce) {
                        scaler.scale(ddp.forward(x).sum()).backward();
                    } else {
                        try (var ns = ddp.noSync()) {
                            scaler.scale(ddp.forward(x).sum()).backward();
                        }
                    }
                    boolean stepped = scaler.step(opt);
                    scaler.update();
                    System.out.println("step rank=" + rank + " i=" + i + " stepped=" + stepped + " scale=" + scaler.getScale());
                }
            }
            StringBuilder params = new StringBuilder();
            for (Tensor p : net.parameters()) {
                params.append(Arrays.toString(p.toFloatArray()));
            }
            System.out.println("params rank=" + rank + " " + params);
        }
        Distributed.barrier();
        Distributed.destroyProcessGroup();
    }
}

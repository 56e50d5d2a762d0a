package org.ddp4j.debug;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import org.ddp4j.distributed.Distributed;
import org.ddp4j.distributed.ReduceOp;
import org.ddp4j.tensor.Tensor;

/**
 * A launcher worker for the flight-recorder tests. {@code FlightRecorderTestWorker MODE DIR STEPS}
 * joins the Gloo group (env://), writes {@code DIR/pid-<RANK>}, then runs STEPS steps 100 ms apart,
 * each an all-reduce(SUM) of 1 float32 element followed by a broadcast from rank 0 of 2 float32
 * elements (two different calls, so that a skipped one is a disagreement, not a shift).
 * <ul>
 *   <li>{@code steps}: every rank runs every step (the test stops one with SIGSTOP).
 *   <li>{@code skip}: RANK 1 leaves out the broadcast of step 3; the next call then disagrees.
 * </ul>
 * A failed collective throws: the JVM exits 1, as a training rank would.
 */
public final class FlightRecorderTestWorker {
    private FlightRecorderTestWorker() {}

    public static void main(String[] args) throws Exception {
        String mode = args[0];
        Path dir = Path.of(args[1]);
        int steps = Integer.parseInt(args[2]);
        int rank = Integer.parseInt(System.getenv("RANK"));
        Distributed.initProcessGroup("gloo");
        writeAtomically(dir.resolve("pid-" + rank), Long.toString(ProcessHandle.current().pid()));
        for (int step = 1; step <= steps; step++) {
            try (Tensor sum = Tensor.of(new float[] {rank + 1}, 1); Tensor shared = Tensor.of(new float[] {step, rank}, 2)) {
                Distributed.allReduce(sum, ReduceOp.SUM);
                if (!(mode.equals("skip") && rank == 1 && step == 3)) {
                    Distributed.broadcast(shared, 0);
                }
            }
            Thread.sleep(100);
        }
        Distributed.destroyProcessGroup();
    }

    private static void writeAtomically(Path file, String text) throws IOException {
        Path tmp = file.resolveSibling(file.getFileName() + ".tmp");
        Files.writeString(tmp, text, StandardCharsets.UTF_8);
        Files.move(tmp, file, StandardCopyOption.ATOMIC_MOVE);
    }
}

package org.ddp4j.distributed;

import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.ddp4j.tensor.Tensor;

/**
 * A launcher worker for repeated-init tests: on each rank, init #1 and #2 run in this JVM (each
 * init, all-reduce, destroy), then a child JVM (a new process under the same launcher, as a JMH
 * fork) does init #3. Init #k sums {@code 10^(k-1) * (rank + 1)} over all ranks and prints
 * {@code reinit ok init=k rank=R sum=S}. Exits 1 on a wrong sum, 2 on an error, the child's code
 * if the child fails.
 */
public final class RepeatedInitMain {
    private RepeatedInitMain() {}

    /** One init, all-reduce and destroy; returns whether the sum was right. */
    private static boolean initReduceDestroy(int init) {
        ProcessGroup group = Distributed.initProcessGroup("gloo");
        int rank = group.rank();
        int world = group.size();
        float scale = (float) Math.pow(10, init - 1);
        float sum;
        try (Tensor t = Tensor.of(new float[] {scale * (rank + 1)}, 1)) {
            Distributed.allReduce(t);
            sum = t.toFloatArray()[0];
        }
        Distributed.destroyProcessGroup();
        float expected = scale * world * (world + 1) / 2;
        System.out.println((sum == expected ? "reinit ok" : "reinit WRONG") + " init=" + init + " rank=" + rank
                + " sum=" + sum + (sum == expected ? "" : " expected=" + expected));
        System.out.flush();
        return sum == expected;
    }

    /** No arguments: inits #1, #2 here and #3 in a child JVM; {@code child}: init #3 only. */
    public static void main(String[] args) {
        int exit = 0;
        try {
            if (args.length > 0 && args[0].equals("child")) {
                exit = initReduceDestroy(3) ? 0 : 1;
            } else {
                boolean ok = initReduceDestroy(1) & initReduceDestroy(2);
                // The child inherits the launcher's environment and store: only the init count tells it apart.
                Process child = new ProcessBuilder(List.of(Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                        "-cp", System.getProperty("java.class.path"), RepeatedInitMain.class.getName(), "child"))
                        .inheritIO().start();
                if (!child.waitFor(120, TimeUnit.SECONDS)) {
                    child.destroyForcibly();
                    System.out.println("reinit FAILED: the child JVM did not finish within 120 s");
                    exit = 2;
                } else {
                    exit = child.exitValue() != 0 ? child.exitValue() : ok ? 0 : 1;
                }
            }
        } catch (Throwable e) {
            System.out.println("reinit FAILED: " + e);
            e.printStackTrace(System.out);
            exit = 2;
        }
        System.out.flush();
        System.exit(exit);
    }
}

package org.ddp4j.distributed;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.time.Duration;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * A rank outside the world that came from SLURM (SLURM_PROCID) or a world size that did (SLURM_NTASKS...) is
 * refused before any store is opened, naming the variable each came from, its value, and the fix.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class SlurmRankOutOfRangeTest {
    private static final Duration TIMEOUT = Duration.ofSeconds(5);

    private static String refused(String initMethod, Map<String, String> env) {
        return assertThrows(IllegalArgumentException.class,
                () -> Distributed.createProcessGroup("gloo", initMethod, -1, -1, TIMEOUT, env)).getMessage();
    }

    @Test
    void bothFromSlurmNamesBothVariables() {
        Map<String, String> task = ClusterEnvironmentTest.srunTask(5, 1, 2); // a 4-task step
        assertEquals("rank 5 is not in [0, 4) (world size 4): the rank came from SLURM_PROCID=5 and the world size"
                + " from SLURM_STEP_NUM_TASKS=4; srun numbers the tasks of a job step 0 to its task count - 1, so these"
                + " two were not set by one srun (set or exported by hand, or left from another step?): start each"
                + " task with srun, which sets both, or set RANK and WORLD_SIZE yourself", refused("env://", task));

        task.remove("SLURM_STEP_NUM_TASKS"); // an older SLURM: the world size from the job-wide count
        assertEquals("the world size from SLURM_NTASKS=4",
                between(refused("env://", task), "the world size from ", ";"));
    }

    @Test
    void aRankFromSlurmInAWorldSetByHandSaysSo() {
        Map<String, String> task = ClusterEnvironmentTest.srunTask(3, 1, 0);
        task.put("WORLD_SIZE", "2");
        assertEquals("rank 3 is not in [0, 2) (world size 2): the rank came from SLURM_PROCID=3 and the world size"
                + " from WORLD_SIZE=2; srun numbers the tasks of this step by SLURM_PROCID, so the world size must be"
                + " the step's task count: start srun with -n 2, or take the world size from SLURM too (leave"
                + " WORLD_SIZE unset and pass -1)", refused("env://", task));

        Map<String, String> inUrl = ClusterEnvironmentTest.srunTask(3, 1, 0);
        String method = "tcp://127.0.0.1:1?world_size=2";
        assertEquals("rank 3 is not in [0, 2) (world size 2): the rank came from SLURM_PROCID=3 and the world size"
                + " from world_size=2 in " + method, between(refused(method, inUrl), "", ";"));
    }

    @Test
    void aRankSetByHandInAWorldFromSlurmSaysSo() {
        Map<String, String> task = ClusterEnvironmentTest.srunTask(3, 1, 0);
        task.put("RANK", "7");
        assertEquals("rank 7 is not in [0, 4) (world size 4): the rank came from RANK=7 and the world size from"
                + " SLURM_STEP_NUM_TASKS=4; the rank must be below the step's task count: take it from SLURM too"
                + " (leave RANK unset and pass -1: srun numbers its tasks 0 to 3), or set WORLD_SIZE yourself",
                refused("env://", task));
    }

    @Test
    void outsideSlurmTheSetVariablesAreNamed() {
        Map<String, String> env = Map.of("MASTER_ADDR", "127.0.0.1", "MASTER_PORT", "1", "WORLD_SIZE", "2", "RANK", "2");
        assertEquals("rank 2 is not in [0, 2) (world size 2): the rank came from RANK=2 and the world size from"
                + " WORLD_SIZE=2", refused("env://", env));
    }

    private static String between(String s, String from, String to) {
        int start = s.indexOf(from);
        int end = s.indexOf(to, start + from.length());
        return s.substring(start, end);
    }
}

package org.ddp4j.spark;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;

import java.util.List;
import org.junit.jupiter.api.Test;

/** Spark's GPU per task becomes a CUDA_VISIBLE_DEVICES under which cuda:LOCAL_RANK is that GPU. */
class TaskGpusTest {
    @Test
    void eachRanksGpuSitsAtItsLocalRank() {
        // ranks 0 and 2 on host a (local ranks 0, 1) got GPUs 3 and 1; ranks 1 and 3 on host b got 0 and 2
        TaskHosts hosts = new TaskHosts(List.of("a", "b", "a", "b"));
        List<List<String>> gpus = List.of(List.of("3"), List.of("0"), List.of("1"), List.of("2"));
        assertEquals("3,1", TaskGpus.visibleDevices(hosts, gpus, 0));
        assertEquals("3,1", TaskGpus.visibleDevices(hosts, gpus, 2)); // local rank 1 -> cuda:1 = GPU 1
        assertEquals("0,2", TaskGpus.visibleDevices(hosts, gpus, 3));
    }

    @Test
    void noGpusOrSeveralPerTaskLeaveTheVariableAlone() {
        TaskHosts hosts = new TaskHosts(List.of("a", "a"));
        assertNull(TaskGpus.visibleDevices(hosts, List.of(List.of(), List.of()), 0));
        assertNull(TaskGpus.visibleDevices(hosts, List.of(List.of("0", "1"), List.of("2", "3")), 1));
    }

    @Test
    void addressesRoundTripThroughAllGathersText() {
        assertEquals(List.of(), TaskGpus.decode(TaskGpus.encode(List.of())));
        assertEquals(List.of("0", "5"), TaskGpus.decode(TaskGpus.encode(List.of("0", "5"))));
    }
}

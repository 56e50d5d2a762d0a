package org.ddp4j.cuda;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.Map;
import org.ddp4j.tensor.Device;
import org.junit.jupiter.api.Test;

class DeviceAssignmentTest {

    @Test
    void localRankPicksTheOrdinalInsideTheVisibleList() {
        Map<String, String> env = Map.of("LOCAL_RANK", "1", "CUDA_VISIBLE_DEVICES", "2,4");
        assertEquals(Device.cuda(1), DeviceAssignment.forLocalRank(env, 2));
        assertEquals("4", DeviceAssignment.physicalDevice(env, 1));
        assertEquals("2", DeviceAssignment.physicalDevice(env, 0));
    }

    @Test
    void withoutLocalRankTheFirstGpuIsUsed() {
        assertEquals(Device.cuda(0), DeviceAssignment.forLocalRank(Map.of(), 1));
        assertEquals("3", DeviceAssignment.physicalDevice(Map.of(), 3));
    }

    @Test
    void localRankBeyondTheVisibleGpusNamesLocalRankAndTheVisibleList() {
        Map<String, String> env = Map.of("LOCAL_RANK", "2", "CUDA_VISIBLE_DEVICES", "2,4");
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> DeviceAssignment.forLocalRank(env, 2));
        assertTrue(e.getMessage().contains("LOCAL_RANK=2"), e.getMessage());
        assertTrue(e.getMessage().contains("CUDA_VISIBLE_DEVICES=2,4"), e.getMessage());
        assertTrue(e.getMessage().contains("--nproc-per-node 2"), e.getMessage());
        assertThrows(IllegalArgumentException.class, () -> DeviceAssignment.physicalDevice(env, 2));
    }

    @Test
    void malformedLocalRankIsNamed() {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> DeviceAssignment.forLocalRank(Map.of("LOCAL_RANK", "one"), 4));
        assertTrue(e.getMessage().contains("LOCAL_RANK=\"one\""), e.getMessage());
    }
}

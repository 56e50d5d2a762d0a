package org.ddp4j.spark;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.util.List;
import java.util.stream.IntStream;
import org.junit.jupiter.api.Test;

/** Barrier task addresses to torchrun's LOCAL_RANK, LOCAL_WORLD_SIZE, GROUP_RANK and GROUP_WORLD_SIZE. */
class TaskHostsTest {
    @Test
    void hostOfDropsThePortOnly() {
        assertEquals("10.0.0.7", TaskHosts.hostOf("10.0.0.7:38211"));
        assertEquals("worker-3.example", TaskHosts.hostOf("worker-3.example"));
        assertEquals("::1", TaskHosts.hostOf("[::1]:7077"));
        assertEquals("fe80::1", TaskHosts.hostOf("fe80::1")); // a bare IPv6 address has no port to drop
    }

    @Test
    void ranksOnTheSameHostFormANodeInOrderOfFirstAppearance() {
        // tasks by partition id: hosts b, a, b, c, a
        TaskHosts hosts = new TaskHosts(List.of("b:1", "a:2", "b:3", "c:4", "a:5"));
        assertEquals(5, hosts.worldSize());
        assertEquals(List.of(0, 0, 1, 0, 1), IntStream.range(0, 5).map(hosts::localRank).boxed().toList());
        assertEquals(List.of(2, 2, 2, 1, 2), IntStream.range(0, 5).map(hosts::localWorldSize).boxed().toList());
        assertEquals(List.of(0, 1, 0, 2, 1), IntStream.range(0, 5).map(hosts::groupRank).boxed().toList());
        assertEquals(3, hosts.groupWorldSize());
        assertEquals("b", hosts.host(0)); // MASTER_ADDR: task 0's host
    }
}

package org.ddp4j.distributed.environment;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/** SLURM_TASKS_PER_NODE's compressed counts. */
class SlurmTasksPerNodeTest {

    @Test
    void countsAndRepeats() {
        assertEquals(List.of(4), SlurmTasksPerNode.expand("4"));
        assertEquals(List.of(2, 2, 2, 1), SlurmTasksPerNode.expand("2(x3),1"));
        assertEquals(List.of(1, 2, 2, 3), SlurmTasksPerNode.expand("1,2(x2),3"));
        assertEquals(List.of(8, 8), SlurmTasksPerNode.expand(" 8(x2) "));
        assertEquals(List.of(16), SlurmTasksPerNode.expand("16(x1)"));
        assertEquals(List.of(3, 5, 7), SlurmTasksPerNode.expand("3,5,7"));
    }

    @ParameterizedTest
    @CsvSource({"0, 2", "2, 2", "3, 1", "4, 5", "5, 5"})
    void forNodePicksTheNodesEntry(int node, int tasks) {
        assertEquals(tasks, SlurmTasksPerNode.forNode("2(x3),1,5(x2)", node));
    }

    @Test
    void aNodeOutsideTheListIsNamed() {
        var e = assertThrows(IllegalArgumentException.class, () -> SlurmTasksPerNode.forNode("2(x3),1", 4));
        assertEquals("tasks per node \"2(x3),1\" covers 4 node(s), not node 4", e.getMessage());
        assertThrows(IllegalArgumentException.class, () -> SlurmTasksPerNode.forNode("2", -1));
    }

    @ParameterizedTest
    @CsvSource(delimiter = '|', value = {
        "'' | empty",
        "x | is not COUNT or COUNT(xREPEAT)",
        "0 | is not COUNT or COUNT(xREPEAT)",
        "-1 | is not COUNT or COUNT(xREPEAT)",
        "2(3) | is not COUNT or COUNT(xREPEAT)",
        "2(x3 | is not COUNT or COUNT(xREPEAT)",
        "2(x0) | is not COUNT or COUNT(xREPEAT)",
        "2(x) | is not COUNT or COUNT(xREPEAT)",
        "(x2) | is not COUNT or COUNT(xREPEAT)",
        "2,,1 | is not COUNT or COUNT(xREPEAT)",
        "99999999999 | is not COUNT or COUNT(xREPEAT)",
        "1(x2000000) | more than 1048576 nodes",
    })
    void malformedValuesSayWhatIsWrong(String value, String message) {
        var e = assertThrows(IllegalArgumentException.class, () -> SlurmTasksPerNode.expand(value));
        assertTrue(e.getMessage().contains(message), e.getMessage());
    }
}

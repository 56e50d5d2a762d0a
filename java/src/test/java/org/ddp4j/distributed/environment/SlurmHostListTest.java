package org.ddp4j.distributed.environment;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/** SLURM's compressed node lists, as {@code scontrol show hostnames} expands them. */
class SlurmHostListTest {

    @Test
    void plainHostsAndSingleRanges() {
        assertEquals(List.of("vm"), SlurmHostList.expand("vm"));
        assertEquals(List.of("a", "b", "c"), SlurmHostList.expand("a,b,c"));
        assertEquals(List.of("node1", "node2", "node3"), SlurmHostList.expand("node[1-3]"));
        assertEquals(List.of("node7"), SlurmHostList.expand("node[7]"));
        assertEquals(List.of("10.0.0.1", "10.0.0.2"), SlurmHostList.expand("10.0.0.1,10.0.0.2"));
        assertEquals(List.of("n-1.cluster", "n-2.cluster"), SlurmHostList.expand(" n-1.cluster , n-2.cluster "));
    }

    @Test
    void theIssuesExampleKeepsZeroPaddingAndOrder() {
        assertEquals(List.of("node01", "node02", "node03", "node04", "node07", "gpu3"),
                SlurmHostList.expand("node[01-04,07],gpu3"));
    }

    @Test
    void paddingFollowsTheLowerBoundAndGrowsPastIt() {
        assertEquals(List.of("n8", "n9", "n10", "n11"), SlurmHostList.expand("n[8-11]"));
        assertEquals(List.of("n08", "n09", "n10"), SlurmHostList.expand("n[08-10]"));
        assertEquals(List.of("n098", "n099", "n100"), SlurmHostList.expand("n[098-100]"));
        assertEquals(List.of("n0", "n000"), SlurmHostList.expand("n[0,000]"));
        assertEquals(List.of("n99", "n100"), SlurmHostList.expand("n[99-100]"));
    }

    @Test
    void bracketsWithSuffixesSeveralListsAndProducts() {
        assertEquals(List.of("node1-ib", "node2-ib"), SlurmHostList.expand("node[1-2]-ib"));
        assertEquals(List.of("a1", "a2", "b5", "b6", "c"), SlurmHostList.expand("a[1-2],b[5-6],c"));
        assertEquals(List.of("r1n1", "r1n2", "r2n1", "r2n2"), SlurmHostList.expand("r[1-2]n[1-2]"));
        assertEquals(List.of("x1", "x3", "x4", "x5", "x9"), SlurmHostList.expand("x[1,3-5,9]"));
        assertEquals(List.of("7", "8"), SlurmHostList.expand("[7-8]"));
    }

    @ParameterizedTest
    @CsvSource(delimiter = '|', value = {
        "vm | vm",
        "node[01-04,07],gpu3 | node01",
        "gpu3,node[01-04] | gpu3",
        "r[2-3]n[5-6] | r2n5",
        "n[0100-9999] | n0100",
        "node[1-1000000] | node1",
    })
    void firstHostIsRankZerosHost(String list, String first) {
        assertEquals(first, SlurmHostList.first(list));
    }

    @Test
    void firstChecksTheBracketsOfTheWholeList() {
        var e = assertThrows(IllegalArgumentException.class, () -> SlurmHostList.first("a,b[1-2"));
        assertTrue(e.getMessage().contains("unclosed '['"), e.getMessage());
    }

    @ParameterizedTest
    @CsvSource(delimiter = '|', value = {
        "'' | empty host list",
        "'  ' | empty host list",
        "a,,b | empty host name",
        "a, | empty host name",
        "n[1-3 | unclosed '['",
        "n1-3] | ']' without '['",
        "n[[1-2]] | nested '['",
        "n[] | empty brackets",
        "n[a-b] | is not a number",
        "n[1-] | is not a number",
        "n[-3] | is not a number",
        "n[1,,2] | is not a number",
        "n[1-2-3] | is not a number",
        "n[5-3] | runs backwards",
        "n[1-99999999999999999999] | too large",
        "n[0-2000000] | more than 1048576 hosts",
    })
    void malformedListsSayWhatIsWrong(String list, String message) {
        var e = assertThrows(IllegalArgumentException.class, () -> SlurmHostList.expand(list));
        assertTrue(e.getMessage().contains(message), e.getMessage());
    }

    @Test
    void aProductOfBracketsIsBoundedToo() {
        var e = assertThrows(IllegalArgumentException.class, () -> SlurmHostList.expand("a[0-1100]b[0-1000]"));
        assertTrue(e.getMessage().contains("more than 1048576 hosts"), e.getMessage());
        assertEquals("a0000b0000", SlurmHostList.first("a[0000-1100]b[0000-1000]"));
    }

    @Test
    void nullIsAnEmptyList() {
        assertThrows(IllegalArgumentException.class, () -> SlurmHostList.expand(null));
    }
}

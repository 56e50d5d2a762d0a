package org.ddp4j.nn.parallel;

import static org.junit.jupiter.api.Assertions.assertEquals;
import java.util.List;
import org.junit.jupiter.api.Test;

/** Where ParameterLayout says two ranks' models first differ (the signatures as verifyAcrossRanks compares them). */
class ParameterLayoutTest {
    private static final List<String> NAMES = List.of("conv.weight", "fc.weight", "fc.bias");

    // {bucket cap, parameter count, then per parameter: its number of dims and the dims}, padded with zeros to the longest.
    private static final long[] MINE = {100, 3, 4, 8, 1, 3, 3, 2, 10, 8, 1, 10};

    @Test
    void namesTheFirstParameterOfAnotherShape() {
        long[] theirs = {100, 3, 4, 8, 1, 3, 3, 2, 11, 8, 1, 11};
        assertEquals("parameter 1 (fc.weight here): [10, 8] on rank 0, [11, 8] on rank 1",
                ParameterLayout.firstDifference(MINE, 0, theirs, 1, NAMES));
    }

    @Test
    void namesTheBucketCapAndTheParameterCount() {
        long[] otherCap = MINE.clone();
        otherCap[0] = 200;
        assertEquals("the bucket cap: 100 B on rank 0, 200 B on rank 2", ParameterLayout.firstDifference(MINE, 0, otherCap, 2, NAMES));
        long[] fewer = {100, 2, 4, 8, 1, 3, 3, 2, 10, 8, 0, 0};
        assertEquals("the parameter count: 3 on rank 1, 2 on rank 0", ParameterLayout.firstDifference(MINE, 1, fewer, 0, NAMES));
    }

    @Test
    void describesEveryShape() {
        assertEquals("3 parameters with shapes [8, 1, 3, 3], [10, 8], [10], bucket cap 100 B", ParameterLayout.describe(MINE));
    }
}

package org.ddp4j.benchmarks.collective;

import static org.junit.jupiter.api.Assertions.assertEquals;

import org.junit.jupiter.api.Test;

/** nccl-tests' arithmetic: algbw = size / time, busbw = algbw x the collective's factor, GB/s = 10^9 B/s. */
class CollectiveRowTest {

    @Test
    void allReduceBusBandwidthIsAlgbwTimesTwoNMinusOneOverN() {
        double factor = new AllReduceBenchmark().busBandwidthFactor(4);
        assertEquals(1.5, factor, 1e-12);
        // 32 MiB in 20 000 µs: 33554432 / 0.02 s = 1.6777216 GB/s
        CollectiveRow row = new CollectiveRow("allreduce", "gloo", 4, 33_554_432, 8_388_608, "sum", 1, 10, 20_000, 21_000, factor);
        assertEquals(1.6777216, row.algbw(), 1e-9);
        assertEquals(1.6777216 * 1.5, row.busbw(), 1e-9);
    }

    @Test
    void allGatherReportsTheWholeOutputAndNMinusOneOverN() {
        AllGatherBenchmark gather = new AllGatherBenchmark();
        assertEquals(3 * 1024, gather.reportedBytes(1024, 3));
        assertEquals(2.0 / 3, gather.busBandwidthFactor(3), 1e-12);
        assertEquals(1.0, new BroadcastBenchmark().busBandwidthFactor(8), 0);
    }

    @Test
    void reduceAndSendRecvCountTheTensorAndHaveBusbwEqualToAlgbw() {
        assertEquals(1.0, new ReduceBenchmark().busBandwidthFactor(4), 0);
        assertEquals(1024, new ReduceBenchmark().reportedBytes(1024, 4));
        assertEquals("sum", new ReduceBenchmark().redop());
        assertEquals(1.0, new SendRecvBenchmark().busBandwidthFactor(4), 0);
        assertEquals(1024, new SendRecvBenchmark().reportedBytes(1024, 4));
        assertEquals("none", new SendRecvBenchmark().redop());
    }

    @Test
    void reduceScatterReportsTheInputPerRankAndNMinusOneOverN() {
        ReduceScatterBenchmark scatter = new ReduceScatterBenchmark();
        assertEquals(3.0 / 4, scatter.busBandwidthFactor(4), 1e-12);
        assertEquals(0.5, scatter.busBandwidthFactor(2), 1e-12);
        // 1 MiB in at 4 ranks: 65536 elements out per rank, all of the input counted
        assertEquals(65_536, ReduceScatterBenchmark.outputElements(1 << 20, 4));
        assertEquals(1 << 20, scatter.reportedBytes(1 << 20, 4));
        // 1 KiB = 256 elements at 3 ranks: 85 each, 255 elements in = 1020 B
        assertEquals(85, ReduceScatterBenchmark.outputElements(1024, 3));
        assertEquals(1020, scatter.reportedBytes(1024, 3));
        // 8 B at 4 ranks: still one element per rank, so the input is 16 B
        assertEquals(1, ReduceScatterBenchmark.outputElements(8, 4));
        assertEquals(16, scatter.reportedBytes(8, 4));
        // busbw of 32 MiB in 40 000 µs at 2 ranks: 0.8388608 GB/s x 1/2
        CollectiveRow row = new CollectiveRow("reducescatter", "gloo", 2, 33_554_432, 8_388_608, "sum", 1, 10, 40_000,
                40_000, scatter.busBandwidthFactor(2));
        assertEquals(0.8388608, row.algbw(), 1e-9);
        assertEquals(0.4194304, row.busbw(), 1e-9);
    }

    @Test
    void theResultLineCarriesTheMedianAndBothBandwidths() {
        CollectiveRow row = new CollectiveRow("allreduce", "gloo", 2, 8, 2, "sum", 299, 10, 80, 90, 1.0);
        assertEquals("result op=allreduce backend=gloo ranks=2 bytes=8 count=2 median_us=80.000 mean_us=90.000"
                + " algbw=0.000100 busbw=0.000100 calls=299 iterations=10", row.resultLine());
    }
}

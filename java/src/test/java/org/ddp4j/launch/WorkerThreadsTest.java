package org.ddp4j.launch;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.util.Map;
import java.util.OptionalInt;
import org.ddp4j.testing.Cpus;
import org.junit.jupiter.api.Test;

/** The launcher's account of each worker's default intra-op threads (the rule of native parallel.h). */
class WorkerThreadsTest {

    @Test
    void ompNumThreadsIsReadAsTheNativeLibraryReadsIt() {
        assertEquals(OptionalInt.of(4), WorkerThreads.ompNumThreads("4"));
        assertEquals(OptionalInt.of(4), WorkerThreads.ompNumThreads(" 4 "));
        assertEquals(OptionalInt.of(4), WorkerThreads.ompNumThreads("4,2"), "OpenMP's nesting list: the outer level");
        for (String bad : new String[] {null, "", " ", "0", "-1", "four", "3x", "99999999999"}) {
            assertEquals(OptionalInt.empty(), WorkerThreads.ompNumThreads(bad), "'" + bad + "'");
        }
    }

    @Test
    void cpuListsAreCounted() throws Exception {
        assertEquals(1, WorkerThreads.countCpus("0"));
        assertEquals(5, WorkerThreads.countCpus("0-3,8"));
        assertEquals(6, WorkerThreads.countCpus(" 0-1,4-5,10-11\n"));
        assertEquals(Cpus.allowed(), WorkerThreads.affinityCpus());
    }

    @Test
    void theNoticeSaysHowManyAndWhy() {
        assertEquals("intra-op threads per worker: 4 (8 CPUs / 2 workers on this node; set OMP_NUM_THREADS to choose)",
                WorkerThreads.notice(Map.of(), 2, 8));
        assertEquals("intra-op threads per worker: 1 (2 CPUs / 3 workers on this node; set OMP_NUM_THREADS to choose)",
                WorkerThreads.notice(Map.of(), 3, 2), "never 0");
        assertEquals("intra-op threads per worker: 8 (8 CPUs; set OMP_NUM_THREADS to choose)",
                WorkerThreads.notice(Map.of(), 1, 8));
        assertEquals("intra-op threads per worker: 4 (OMP_NUM_THREADS=4)",
                WorkerThreads.notice(Map.of("OMP_NUM_THREADS", "4"), 2, 8));
        assertEquals("intra-op threads per worker: 6 (OMP_NUM_THREADS=6; 2 x 6 threads oversubscribe the 8 CPUs)",
                WorkerThreads.notice(Map.of("OMP_NUM_THREADS", "6"), 2, 8));
        assertEquals("intra-op threads per worker: 4 (OMP_NUM_THREADS=\"x\" is not a positive integer and is ignored;"
                + " 8 CPUs / 2 workers on this node; set OMP_NUM_THREADS to choose)",
                WorkerThreads.notice(Map.of("OMP_NUM_THREADS", "x"), 2, 8));
    }
}

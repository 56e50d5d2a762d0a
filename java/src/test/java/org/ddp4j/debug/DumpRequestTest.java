package org.ddp4j.debug;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.ddp4j.testing.RankProcesses;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * On demand: touching {@code ddp4j-dump-request} makes every rank of a running 2-rank job write
 * its dump ({@link DumpRequestMain}), which holds each collective and transfer it ran, in order,
 * with its call, transport (shared memory, or Gloo with DDP4J_SHM=0), state and times, and the
 * Java threads' stacks, and the job's identity, the same on both ranks and different in the next
 * run: the summary refuses to compare the dumps of two runs.
 */
@Timeout(value = 90, unit = TimeUnit.SECONDS)
class DumpRequestTest {
    @TempDir
    Path dir;

    @Test
    void touchingTheRequestFileMakesEveryRankDumpItsRecord() throws Exception {
        checkDumps(Map.of("DDP4J_DEBUG_DIR", dir.toString()), "shm");
    }

    @Test
    void recordsThePlainGlooTransportToo() throws Exception {
        checkDumps(Map.of("DDP4J_DEBUG_DIR", dir.toString(), "DDP4J_SHM", "0"), "gloo");
    }

    @Test
    void theDumpsOfTwoRunsCarryTwoJobIdsAndAreNotComparedAsOneJob() throws Exception {
        Path first = Files.createDirectories(dir.resolve("first"));
        Path second = Files.createDirectories(dir.resolve("second"));
        RankProcesses.run(DumpRequestMain.class, 2, Map.of("DDP4J_DEBUG_DIR", first.toString()), Duration.ofSeconds(60), r -> 0);
        RankProcesses.run(DumpRequestMain.class, 2, Map.of("DDP4J_DEBUG_DIR", second.toString()), Duration.ofSeconds(60), r -> 0);
        String job1 = jobOfBothRanks(first);
        String job2 = jobOfBothRanks(second);
        assertNotEquals(job1, job2);
        List<Path> mixed = List.of(FlightRecorderDump.file(first, 0), FlightRecorderDump.file(second, 1));
        IOException e = assertThrows(IOException.class, () -> FlightRecorderReport.summarize(mixed));
        assertTrue(e.getMessage().startsWith("the dumps come from 2 different jobs, whose records cannot be compared: job "
                + job1 + " (rank 0): " + mixed.get(0) + "; job " + job2 + " (rank 1): " + mixed.get(1) + ". "), e.getMessage());
    }

    /** The job id both ranks' dumps in {@code in} carry, checked to be one and the same. */
    private static String jobOfBothRanks(Path in) throws IOException {
        String job = FlightRecorderDump.job(FlightRecorderDump.read(FlightRecorderDump.file(in, 0)));
        assertNotNull(job, "rank 0's dump has no job id");
        assertTrue(job.matches("\\d{4}-\\d\\d-\\d\\dT[0-9:.]+Z-\\d+-[0-9a-f]{6}"), job);
        assertEquals(job, FlightRecorderDump.job(FlightRecorderDump.read(FlightRecorderDump.file(in, 1))));
        return job;
    }

    private void checkDumps(Map<String, String> env, String transport) throws Exception {
        RankProcesses.run(DumpRequestMain.class, 2, env, Duration.ofSeconds(60), r -> 0);
        jobOfBothRanks(dir);
        for (int rank = 0; rank < 2; rank++) {
            JsonNode d = FlightRecorderDump.read(FlightRecorderDump.file(dir, rank));
            assertEquals(rank, d.get("rank").asInt());
            assertEquals(2, d.get("world_size").asInt());
            assertTrue(d.get("trigger").asText().startsWith("on request"), d.get("trigger").asText());
            JsonNode entries = d.get("entries");
            assertEquals(7, entries.size(), entries.toString()); // 5 all-reduces, the first barrier, the transfer
            JsonNode transfer = entries.get(6);
            assertTrue(transfer.get("is_p2p").asBoolean(), transfer.toString());
            assertEquals(1, transfer.get("p2p_seq_id").asLong());
            assertEquals(1 - rank, transfer.get("peer").asInt());
            assertEquals(rank == 0 ? "send #1 to rank 1 with tag 0 of 3 float32 elements"
                    : "recv #1 from rank 0 with tag 0 of 3 float32 elements", transfer.get("description").asText());
            assertEquals("completed", transfer.get("state").asText());
            long previousCompleted = 0;
            for (int i = 0; i < 6; i++) {
                JsonNode e = entries.get(i);
                assertEquals(i + 1, e.get("collective_seq_id").asLong());
                assertEquals(i < 5 ? "allReduce(SUM) of 2 float32 elements" : "barrier", e.get("description").asText());
                assertEquals(i < 5 ? "gloo:allReduce" : "gloo:barrier", e.get("profiling_name").asText());
                assertEquals(transport, e.get("transport").asText());
                assertEquals("completed", e.get("state").asText());
                long created = e.get("time_created_ns").asLong();
                long started = e.get("time_discovered_started_ns").asLong();
                long completed = e.get("time_discovered_completed_ns").asLong();
                assertTrue(created > 0 && created <= started && started <= completed && previousCompleted <= created,
                        e.toString());
                previousCompleted = completed;
            }
            assertEquals(6, d.get("pg_status").get("0").get("last_completed_collective").asLong());
            boolean main = false;
            for (JsonNode t : d.get("threads")) {
                main |= t.get("name").asText().equals("main") && t.get("frames").size() > 0;
            }
            assertTrue(main, "no main thread stack in " + d.get("threads"));
        }
        // Both ranks completed everything: the summary says they agree.
        String summary = FlightRecorderReport.summarize(FlightRecorderDump.find(dir, 0));
        assertTrue(summary.contains("the records agree: every rank that wrote a dump completed every collective up to #6"),
                summary);
        assertEquals(List.of(FlightRecorderDump.file(dir, 0), FlightRecorderDump.file(dir, 1)), FlightRecorderDump.find(dir, 0));
    }
}

package org.ddp4j.debug;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.IOException;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import picocli.CommandLine;

/**
 * The summary of dumps written by hand in the format the ranks write: the example (a rank
 * that never started #57 while the others did, with rings that wrapped at different numbers), the
 * same rank without a dump (stopped), a job whose ranks all waited inside one collective, a file
 * that is not a dump, dumps of two jobs (refused, each job's files named), a binary file among
 * good dumps (left out and named), and dumps without a job id (summarized with a warning).
 */
class FlightRecorderReportTest {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final String BUCKET = "allReduce(AVG) of 29,045 float32 elements (DDP bucket 1 of 1)";
    private static final String JOB = "2024-05-01T10:00:00.123Z-4242-9f3a1c";
    private static final String OTHER_JOB = "2024-05-01T11:30:00.456Z-5151-0b7e22";

    @TempDir
    Path dir;

    /** Rank {@code rank}'s dump of collectives first..last, each completed but those from {@code openFrom} on (started). */
    private Path dump(int rank, long first, long last, long openFrom, String mainAt) throws IOException {
        return dump(dir, JOB, rank, first, last, openFrom, mainAt, BUCKET);
    }

    /** As above, in folder {@code in}, of job {@code job} (null: none, as older versions wrote), each call {@code call}. */
    private static Path dump(Path in, String job, int rank, long first, long last, long openFrom, String mainAt, String call)
            throws IOException {
        ObjectNode d = JSON.createObjectNode();
        d.put("version", FlightRecorderDump.VERSION);
        if (job != null) {
            d.put(FlightRecorderDump.JOB_FIELD, job);
        }
        d.put("rank", rank);
        d.put("world_size", 4);
        d.put("trigger", "a collective timed out: ...");
        d.put("main_thread_location", mainAt);
        ObjectNode pg = d.putObject("pg_config").putObject("0");
        ArrayNode ranks = pg.putArray("ranks");
        for (int r = 0; r < 4; r++) {
            ranks.add(r);
        }
        d.putObject("pg_status").putObject("0").putObject("peers_last_started").put("1", 50); // stale: published a while ago
        ArrayNode entries = d.putArray("entries");
        for (long seq = first; seq <= last; seq++) {
            ObjectNode e = entries.addObject();
            e.put("pg_id", "0");
            e.put("collective_seq_id", seq);
            e.put("is_p2p", false);
            e.put("description", call);
            e.put("state", seq >= openFrom ? "started" : "completed");
        }
        Path f = FlightRecorderDump.file(Files.createDirectories(in), rank);
        Files.writeString(f, JSON.writeValueAsString(d));
        return f;
    }

    @Test
    void namesTheRankThatNeverStartedTheCollectiveTheOthersWaitIn() throws Exception {
        List<Path> files = new ArrayList<>();
        files.add(dump(0, 50, 57, 57, "ConvNetDemo.java:150"));
        files.add(dump(1, 40, 56, 99, "ConvNetDemo.java:142")); // its ring goes back further
        files.add(dump(2, 45, 57, 57, "ConvNetDemo.java:150"));
        files.add(dump(3, 50, 57, 57, "ConvNetDemo.java:150"));
        String summary = FlightRecorderReport.summarize(files);
        assertTrue(summary.contains("collective #57 " + BUCKET + ": ranks 0, 2, 3 started it; rank 1 never did — its last"
                + " completed is #56; its main thread is in ConvNetDemo.java:142"), summary);
    }

    @Test
    void namesARankThatWroteNoDumpByTheLastCollectiveItIsKnownToHaveJoined() throws Exception {
        // Rank 1 was stopped: no dump; it last published #50, but its peers completed #56, which needed it.
        List<Path> files = List.of(dump(0, 50, 57, 57, "ConvNetDemo.java:150"), dump(2, 50, 57, 57, "ConvNetDemo.java:150"),
                dump(3, 50, 57, 57, "ConvNetDemo.java:150"));
        String summary = FlightRecorderReport.summarize(files);
        assertTrue(summary.contains("collective #57 " + BUCKET + ": ranks 0, 2, 3 started it; rank 1 is not known to have"
                + " started it — it wrote no dump (a stopped, killed or hung process cannot write one); the last collective it is known to have"
                + " joined is #56"), summary);
    }

    @Test
    void saysWhenEveryRankIsInsideTheSameCollective() throws Exception {
        List<Path> files = new ArrayList<>();
        for (int r = 0; r < 4; r++) {
            files.add(dump(r, 1, 9, 9, "ConvNetDemo.java:150"));
        }
        String summary = FlightRecorderReport.summarize(files);
        assertTrue(summary.contains("collective #9 " + BUCKET + ": ranks 0, 1, 2, 3 started it — every rank called it, so"
                + " its data did not arrive"), summary);
    }

    @Test
    void refusesAFileThatIsNotADump() throws Exception {
        Path f = dir.resolve("other.json");
        Files.writeString(f, "{\"rank\": 0}");
        IOException e = assertThrows(IOException.class, () -> FlightRecorderReport.summarize(List.of(f)));
        assertTrue(e.getMessage().contains("is not a ddp4j flight-recorder dump"), e.getMessage());
        assertEquals(List.of(), FlightRecorderDump.find(dir, 0));
    }

    @Test
    void refusesDumpsOfTwoJobsNamingEachJobsFiles() throws Exception {
        // Job 1's ranks completed #1-#9; job 2's rank 1 called another collective at #9. Compared as one
        // job they would "disagree" at #9.
        Path a = dir.resolve("job1");
        Path b = dir.resolve("job2");
        Path a0 = dump(a, JOB, 0, 1, 9, 99, "Train.java:10", BUCKET);
        Path a1 = dump(a, JOB, 1, 1, 9, 99, "Train.java:10", BUCKET);
        Path b1 = dump(b, OTHER_JOB, 1, 1, 9, 9, "Train.java:12", "barrier");
        IOException e = assertThrows(IOException.class, () -> FlightRecorderReport.summarize(List.of(a0, a1, b1)));
        assertEquals("the dumps come from 2 different jobs, whose records cannot be compared: job " + JOB + " (ranks 0, 1): "
                + a0 + ", " + a1 + "; job " + OTHER_JOB + " (rank 1): " + b1 + ". Pass the dumps of one job only (e.g. clear"
                + " DDP4J_DEBUG_DIR, or give each job a DDP4J_DEBUG_DIR of its own)", e.getMessage());

        StringWriter out = new StringWriter();
        StringWriter err = new StringWriter();
        CommandLine cl = new CommandLine(new FlightRecorderReport()).setOut(new PrintWriter(out)).setErr(new PrintWriter(err));
        assertEquals(1, cl.execute(a.toString(), b.toString()), out + "\n" + err);
        assertEquals("", out.toString());
        assertEquals("FlightRecorderReport: " + e.getMessage(), err.toString().strip());
    }

    @Test
    void refusesADumpWithoutJobIdAmongDumpsWithOne() throws Exception {
        Path mine = dump(dir, JOB, 0, 1, 9, 99, "Train.java:10", BUCKET);
        Path old = dump(dir.resolve("old"), null, 1, 1, 9, 99, "Train.java:10", BUCKET);
        IOException e = assertThrows(IOException.class, () -> FlightRecorderReport.summarize(List.of(mine, old)));
        assertTrue(e.getMessage().startsWith("the dumps come from 2 different jobs, whose records cannot be compared: job "
                + JOB + " (rank 0): " + mine + "; an unknown job (no job id: written by a ddp4j older than job ids) (rank 1): "
                + old + ". "), e.getMessage());
    }

    @Test
    void summarizesDumpsWithoutJobIdAfterAWarning() throws Exception {
        List<Path> files = new ArrayList<>();
        for (int r = 0; r < 2; r++) {
            files.add(dump(dir, null, r, 1, 9, 99, "Train.java:10", BUCKET));
        }
        String summary = FlightRecorderReport.summarize(files);
        assertEquals("warning: the dumps carry no job id (written by a ddp4j older than job ids), so whether they all come"
                + " from one job is not checked\n"
                + "flight recorder: dumps of ranks 0, 1 (rank 0: a collective timed out: ...; rank 1: a collective timed out: ...)\n"
                + "the records agree: every rank that wrote a dump completed every collective up to #9; ranks 2, 3 wrote no dump",
                summary);
    }

    @Test
    void leavesOutAnUnreadableDumpAndNamesItWithoutPrintingItsBytes() throws Exception {
        dump(0, 50, 57, 57, "ConvNetDemo.java:150");
        dump(2, 50, 57, 57, "ConvNetDemo.java:150");
        dump(3, 50, 57, 57, "ConvNetDemo.java:150");
        // Rank 1's file holds binary garbage (a disk that filled up, a copy gone wrong).
        Path garbage = FlightRecorderDump.file(dir, 1);
        Files.write(garbage, new byte[] {0x7f, 'E', 'L', 'F', 2, 1, 1, 0, (byte) 0xff, (byte) 0xfe, 0x1b, '[', '2', 'J', 0});
        StringWriter out = new StringWriter();
        StringWriter err = new StringWriter();
        CommandLine cl = new CommandLine(new FlightRecorderReport()).setOut(new PrintWriter(out)).setErr(new PrintWriter(err));
        assertEquals(0, cl.execute(dir.toString()), out + "\n" + err);
        String summary = out.toString();
        assertTrue(summary.startsWith("flight recorder: dumps of ranks 0, 2, 3 of job " + JOB + " ("), summary);
        assertTrue(summary.contains("\ncollective #57 " + BUCKET + ": ranks 0, 2, 3 started it; rank 1 is not known to have"
                + " started it — it wrote no dump"), summary);
        assertTrue(summary.contains("\nleft out: " + garbage + " is not a readable JSON file: "), summary);
        assertTrue(summary.chars().allMatch(c -> c == '\n' || c == '—' || (c >= 0x20 && c < 0x7f)), summary);
    }
}

package org.ddp4j.debug;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The summary of dumps written by hand in the format the ranks write: the example (a rank
 * that never started #57 while the others did, with rings that wrapped at different numbers), the
 * same rank without a dump (stopped), a job whose ranks all waited inside one collective, and a
 * file that is not a dump.
 */
class FlightRecorderReportTest {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final String BUCKET = "allReduce(AVG) of 29,045 float32 elements (DDP bucket 1 of 1)";

    @TempDir
    Path dir;

    /** Rank {@code rank}'s dump of collectives first..last, each completed but those from {@code openFrom} on (started). */
    private Path dump(int rank, long first, long last, long openFrom, String mainAt) throws IOException {
        ObjectNode d = JSON.createObjectNode();
        d.put("version", FlightRecorderDump.VERSION);
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
            e.put("description", BUCKET);
            e.put("state", seq >= openFrom ? "started" : "completed");
        }
        Path f = FlightRecorderDump.file(dir, rank);
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
}

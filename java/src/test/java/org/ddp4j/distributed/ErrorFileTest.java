package org.ddp4j.distributed;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import org.ddp4j.tensor.DType;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** A worker's error file: what it records, that the first failure stays, and what a reader refuses. */
class ErrorFileTest {
    @TempDir
    Path dir;

    private static ErrorFacts timeoutFacts() {
        return new ErrorFacts("allReduce(SUM) of 4 float32 elements (#7)", "gloo", 0, 1, 4242,
                PeerLostException.Reason.CLOSED, 7, 8000, true, null, null);
    }

    @Test
    void aTimeoutIsRecordedWithItsFacts() {
        Path file = dir.resolve("error.json");
        DistributedTimeoutException timeout = new DistributedTimeoutException("waited", timeoutFacts(), null);
        assertTrue(ErrorFile.record(new RuntimeException("step 3 failed", timeout), file));
        WorkerError e = ErrorFile.read(file);
        assertEquals(ErrorFile.FORMAT_VERSION, e.version());
        assertEquals("java.lang.RuntimeException", e.type());
        assertEquals("step 3 failed", e.message());
        assertTrue(e.fromPeer(), "a DistributedException among the causes: the failure came from a peer");
        assertTrue(e.timeout());
        assertEquals(1, e.peerRank());
        assertEquals("allReduce(SUM) of 4 float32 elements (#7)", e.op());
        assertEquals(8000, e.timeoutMillis());
        assertTrue(e.packetLoss());
        assertEquals("java.lang.RuntimeException: step 3 failed", e.stack().get(0));
        assertTrue(e.stack().contains("Caused by: org.ddp4j.distributed.DistributedTimeoutException: waited"), e.stack().toString());
        assertEquals(ProcessHandle.current().pid(), e.pid());
        assertEquals("RuntimeException: step 3 failed", e.summary());
    }

    @Test
    void anOwnFailureIsNotFromAPeerAndTheFirstRecordStays() {
        Path file = dir.resolve("error.json");
        assertTrue(ErrorFile.record(new IllegalStateException("bad checkpoint"), file));
        assertFalse(ErrorFile.record(new PeerLostException("later"), file), "a later failure is a consequence");
        WorkerError e = ErrorFile.read(file);
        assertEquals("java.lang.IllegalStateException", e.type());
        assertFalse(e.fromPeer());
        assertFalse(e.timeout());
        assertEquals(-1, e.peerRank());
        assertNull(e.op());
    }

    @Test
    void aMismatchNamesThePeer() {
        Path file = dir.resolve("error.json");
        CollectiveCall mine = new CollectiveCall(CollectiveCall.Kind.ALL_REDUCE, 3, 10, DType.FLOAT32, 0, 0, 1, 0, "a");
        ErrorFacts facts = new ErrorFacts("a", "gloo", 0, 2, 0, PeerLostException.Reason.CLOSED, 3, -1, false, mine, null);
        assertTrue(ErrorFile.record(new CollectiveMismatchException("differ", facts, null), file));
        WorkerError e = ErrorFile.read(file);
        assertEquals(2, e.peerRank());
        assertTrue(e.fromPeer());
    }

    @Test
    void aReaderRefusesWhatItCannotTrust() throws IOException {
        assertNull(ErrorFile.read(dir.resolve("missing.json")));
        Path garbage = Files.write(dir.resolve("garbage.json"), new byte[] {0, 1, 2, (byte) 0xff});
        assertNull(ErrorFile.read(garbage));
        Path newer = Files.writeString(dir.resolve("newer.json"), "{\"version\": 2, \"type\": \"x\"}");
        assertNull(ErrorFile.read(newer), "another format version: the launcher falls back to stderr");
    }

    @Test
    void aMissingFolderLosesNothingButTheFile() {
        // No exception: the worker goes on failing as it would, and the launcher reads its stderr.
        assertFalse(ErrorFile.record(new IllegalStateException("x"), dir.resolve("no/such/folder/error.json")));
        assertFalse(Files.exists(dir.resolve("no")));
    }
}

package org.ddp4j.text;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.ddp4j.data.TokenFile;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import picocli.CommandLine;

/** FortunesCorpus and PrepareText on a small fortunes folder made here, on one file, and on Debian's package when installed. */
class PrepareTextTest {
    private static final List<String> FORTUNES = List.of(
            "A day for firm decisions!!!!!  Or is it?\n",
            "\"The time has come,\" the Walrus said,\n\t\"To talk of many things.\"\n\t\t-- Lewis Carroll\n",
            "Q:\tWhat's a café without crème brûlée?\nA:\t日本語 😀\n",
            "100% sure\n",
            "Last one, no final separator.\n");

    @TempDir
    Path dir;

    /** Two fortune files as Debian lays them out, with the indexes, .u8 links and a sub-folder to skip. */
    private Path fortunesFolder() throws IOException {
        Path f = dir.resolve("fortunes");
        if (Files.isDirectory(f)) {
            return f;
        }
        Files.createDirectories(f);
        Files.writeString(f.resolve("alpha"), FORTUNES.get(0) + "%\n" + FORTUNES.get(1) + "%\n%\n  \n%\n");
        Files.write(f.resolve("alpha.dat"), new byte[] {0, 0, 0, 2, (byte) 0xff, 0x25, 0x0a});
        Files.createSymbolicLink(f.resolve("alpha.u8"), Path.of("alpha"));
        Files.writeString(f.resolve("beta"), FORTUNES.get(2) + "%\n" + FORTUNES.get(3) + "%\r\n" + FORTUNES.get(4));
        Files.write(f.resolve("beta.dat"), new byte[] {1, 2, 3});
        Files.createSymbolicLink(f.resolve("gamma"), Path.of("beta"));
        Files.createDirectories(f.resolve("off"));
        Files.writeString(f.resolve("off").resolve("rude"), "not read\n%\n");
        return f;
    }

    @Test
    void readsTheFortunesSkippingIndexesLinksAndSubFolders() throws IOException {
        Path f = fortunesFolder();
        assertTrue(FortunesCorpus.isFortunesDirectory(f));
        assertFalse(FortunesCorpus.isFortunesDirectory(f.resolve("off")), "no .dat indexes there");
        assertEquals(List.of(f.resolve("alpha"), f.resolve("beta")), FortunesCorpus.files(f));
        assertEquals(FORTUNES, FortunesCorpus.read(f));
        assertEquals(FORTUNES.get(0) + "<|endoftext|>" + FORTUNES.get(1) + "<|endoftext|>",
                FortunesCorpus.join(FORTUNES.subList(0, 2), GPT2Tokenizer.EOT_TEXT));
        assertThrows(IllegalArgumentException.class, () -> FortunesCorpus.read(dir.resolve("missing")));
    }

    @Test
    void bytesSplitByDocumentEachFortuneOnceWithABlankLineAfterIt() throws IOException {
        Path out = dir.resolve("out");
        PrepareText.Result r = PrepareText.prepare(fortunesFolder(), ByteTokenizer.get(), 0.2, 1337, out);
        assertEquals(5, r.documents());
        assertEquals(1, r.valDocuments());
        assertEquals(4, r.trainDocuments());
        String train = ByteTokenizer.get().decode(ids(out.resolve("train.bin")));
        String val = ByteTokenizer.get().decode(ids(out.resolve("val.bin")));
        assertEquals(r.trainTokens(), TokenFile.open(out.resolve("train.bin")).length());
        List<String> seen = new ArrayList<>();
        for (String part : (train + val).split("\n\n", -1)) {
            if (!part.isEmpty()) {
                seen.add(part + "\n");
            }
        }
        seen.sort(null);
        List<String> expected = new ArrayList<>(FORTUNES);
        expected.sort(null);
        assertEquals(expected, seen);
        Map<?, ?> meta = new ObjectMapper().readValue(out.resolve("meta.json").toFile(), Map.class);
        assertEquals("bytes", meta.get("tokenizer"));
        assertEquals(256, meta.get("vocab_size"));
        // The same seed picks the same validation fortune.
        PrepareText.prepare(fortunesFolder(), ByteTokenizer.get(), 0.2, 1337, dir.resolve("again"));
        assertArrayEquals(Files.readAllBytes(out.resolve("val.bin")), Files.readAllBytes(dir.resolve("again/val.bin")));
    }

    @Test
    void gpt2EndsEachFortuneWithEndOfText() throws IOException {
        Path out = dir.resolve("gpt2");
        PrepareText.Result r = PrepareText.prepare(fortunesFolder(), GPT2Tokenizer.get(), 0.4, 7, out);
        assertEquals(2, r.valDocuments());
        List<String> docs = new ArrayList<>();
        for (String file : List.of("train.bin", "val.bin")) {
            int[] ids = ids(out.resolve(file));
            assertEquals(GPT2Tokenizer.EOT_TOKEN, ids[ids.length - 1], file + " ends a document");
            int from = 0;
            for (int i = 0; i < ids.length; i++) {
                if (ids[i] == GPT2Tokenizer.EOT_TOKEN) {
                    int[] doc = Arrays.copyOfRange(ids, from, i);
                    assertArrayEquals(GPT2Tokenizer.get().encode(GPT2Tokenizer.get().decode(doc)), doc);
                    docs.add(GPT2Tokenizer.get().decode(doc));
                    from = i + 1;
                }
            }
        }
        docs.sort(null);
        List<String> expected = new ArrayList<>(FORTUNES);
        expected.sort(null);
        assertEquals(expected, docs);
        assertEquals(r.trainTokens() + r.valTokens(), docs.stream().mapToInt(d -> GPT2Tokenizer.get().encode(d).length + 1).sum());
    }

    @Test
    void oneFileIsSplitByPosition() throws IOException {
        String text = "First Citizen:\nBefore we proceed any further, hear me speak.\n\nAll:\nSpeak, speak.\n".repeat(20);
        Path file = Files.writeString(dir.resolve("input.txt"), text);
        Path out = dir.resolve("one");
        PrepareText.Result r = PrepareText.prepare(file, GPT2Tokenizer.get(), 0.1, 1, out);
        int[] all = GPT2Tokenizer.get().encode(text);
        int[] train = ids(out.resolve("train.bin"));
        int[] val = ids(out.resolve("val.bin"));
        assertEquals(Math.round(all.length * 0.1), val.length);
        int[] joined = new int[train.length + val.length];
        System.arraycopy(train, 0, joined, 0, train.length);
        System.arraycopy(val, 0, joined, train.length, val.length);
        assertArrayEquals(all, joined);
        assertEquals(1, r.documents());
    }

    @Test
    void commandLinePrintsCountsAndNamesBadInput() throws IOException {
        Path folder = fortunesFolder();
        StringWriter err = new StringWriter();
        CommandLine cl = new CommandLine(new PrepareText());
        cl.setErr(new PrintWriter(err));
        int rc = cl.execute("--input", folder.toString(), "--tokenizer", "bytes", "--out", dir.resolve("cli").toString());
        assertEquals(0, rc, err.toString());
        assertTrue(Files.exists(dir.resolve("cli/train.bin")) && Files.exists(dir.resolve("cli/val.bin")));
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> PrepareText.prepare(folder, ByteTokenizer.get(), 1.0, 1, dir.resolve("x")));
        assertTrue(e.getMessage().contains("--val-fraction"), e.getMessage());
        e = assertThrows(IllegalArgumentException.class,
                () -> PrepareText.prepare(dir.resolve("nothing"), ByteTokenizer.get(), 0.1, 1, dir.resolve("x")));
        assertTrue(e.getMessage().contains("does not exist") && e.getMessage().contains("fortunes"), e.getMessage());
    }

    /** Debian's fortunes and fortunes-min (scripts/setup.sh installs them). */
    @Test
    void debiansFortunesPackage() {
        assumeTrue(FortunesCorpus.isFortunesDirectory(FortunesCorpus.DEFAULT_DIR), "Debian's fortunes package is not installed");
        List<String> fortunes = FortunesCorpus.read(FortunesCorpus.DEFAULT_DIR);
        assertTrue(fortunes.size() > 10_000, "fortunes: " + fortunes.size());
        for (String f : fortunes) {
            assertFalse(f.startsWith("%\n") || f.contains("\n%\n") || f.isBlank(), f);
        }
        Map<String, Integer> topics = new HashMap<>();
        FortunesCorpus.files(FortunesCorpus.DEFAULT_DIR).forEach(p -> topics.put(p.getFileName().toString(), 1));
        assertTrue(topics.containsKey("literature") && topics.containsKey("computers") && !topics.containsKey("art.dat"),
                topics.keySet().toString());
        for (Tokenizer tokenizer : List.of(GPT2Tokenizer.get(), ByteTokenizer.get())) {
            Path out = dir.resolve(tokenizer.name());
            PrepareText.Result r = PrepareText.prepare(FortunesCorpus.DEFAULT_DIR, tokenizer, 0.1, 1337, out);
            System.out.printf("fortunes (%s): %d documents, %d bytes, train %d tokens, val %d tokens%n", tokenizer.name(),
                    r.documents(), r.corpusBytes(), r.trainTokens(), r.valTokens());
            assertEquals(fortunes.size(), r.documents());
            assertTrue(r.valTokens() > r.trainTokens() / 20 && r.valTokens() < r.trainTokens() / 5, r.toString());
        }
    }

    private static int[] ids(Path bin) {
        TokenFile file = TokenFile.open(bin);
        int[] out = new int[(int) file.length()];
        for (int i = 0; i < out.length; i++) {
            out[i] = file.get(i);
        }
        return out;
    }
}

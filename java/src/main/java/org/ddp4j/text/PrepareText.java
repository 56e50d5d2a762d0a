package org.ddp4j.text;

import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.Callable;
import java.util.stream.Stream;
import org.ddp4j.data.TokenFile;
import org.ddp4j.internal.VersionProvider;
import org.ddp4j.internal.AtomicFiles;
import org.ddp4j.tensor.Generator;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * Tokenizes a text corpus into nanoGPT's {@code train.bin} and {@code val.bin} (uint16 ids, see
 * {@link TokenFile}) plus {@code meta.json} (the tokenizer, its vocabulary size and end-of-text id),
 * as nanoGPT's {@code data/shakespeare/prepare.py} does. The corpus is split into documents: the fortunes of a
 * fortunes folder ({@link FortunesCorpus}, the default input {@code /usr/share/games/fortunes}), the
 * files of another folder, or one file. Each document's ids are followed by the end-of-text id (GPT-2)
 * or a newline (bytes: a blank line after each fortune). With several documents a seeded random
 * {@code --val-fraction} of them (at least one) goes to val.bin, the rest, in corpus order, to
 * train.bin; a single document is split by position, its last fraction of tokens to val.bin (nanoGPT's
 * Shakespeare). Both files are written atomically. Example:
 * {@code java -cp ... org.ddp4j.text.PrepareText --tokenizer gpt2 --out data/fortunes}.
 */
@Command(name = "PrepareText", mixinStandardHelpOptions = true, versionProvider = VersionProvider.class,
        description = "Tokenizes a text corpus into nanoGPT's train.bin / val.bin (uint16 token ids) and meta.json.")
public final class PrepareText implements Callable<Integer> {
    @Option(names = "--input", paramLabel = "PATH", description = "A text file, a folder of text files, or a folder"
            + " of fortune files (default: ${DEFAULT-VALUE}, Debian's fortunes packages).")
    Path input = FortunesCorpus.DEFAULT_DIR;

    @Option(names = "--tokenizer", paramLabel = "NAME", description = "gpt2 (GPT-2's BPE, 50257 ids) or bytes (UTF-8"
            + " bytes, 256 ids) (default: ${DEFAULT-VALUE}).")
    String tokenizer = GPT2Tokenizer.NAME;

    @Option(names = "--val-fraction", description = "Share of the documents (of the tokens, for one file) written to"
            + " val.bin, in (0, 1) (default: ${DEFAULT-VALUE}).")
    double valFraction = 0.1;

    @Option(names = "--seed", description = "Seed of the choice of validation documents (default: ${DEFAULT-VALUE}).")
    long seed = 1337;

    @Option(names = "--out", paramLabel = "DIR", required = true, description = "Folder for train.bin, val.bin and"
            + " meta.json (created if missing).")
    Path out;

    /** What {@link #prepare} wrote: token and document counts of each split. */
    public record Result(String corpus, int documents, long corpusBytes, int trainDocuments, long trainTokens,
            int valDocuments, long valTokens) {}

    public static void main(String[] args) {
        CommandLine cl = new CommandLine(new PrepareText());
        cl.setExecutionExceptionHandler((e, cmd, parsed) -> {
            cmd.getErr().println(cmd.getCommandName() + ": error: " + e.getMessage());
            return 1;
        });
        System.exit(cl.execute(args));
    }

    @Override
    public Integer call() {
        Result r = prepare(input, Tokenizer.byName(tokenizer), valFraction, seed, out);
        System.out.printf(Locale.ROOT, "%s: %d documents, %d bytes; %s tokenizer%n", r.corpus(), r.documents(),
                r.corpusBytes(), tokenizer);
        System.out.printf(Locale.ROOT, "%s: %d tokens (%d documents)%n", out.resolve("train.bin"), r.trainTokens(),
                r.trainDocuments());
        System.out.printf(Locale.ROOT, "%s: %d tokens (%d documents)%n", out.resolve("val.bin"), r.valTokens(),
                r.valDocuments());
        return 0;
    }

    /**
     * Reads, tokenizes, splits and writes; see the class comment.
     *
     * @throws IllegalArgumentException if the input does not exist or holds no text, or valFraction is not in (0, 1),
     *     or the corpus is too small to give both splits a token
     * @throws UncheckedIOException naming the file that cannot be read or written
     */
    public static Result prepare(Path input, Tokenizer tokenizer, double valFraction, long seed, Path outDir) {
        if (!(valFraction > 0 && valFraction < 1)) {
            throw new IllegalArgumentException("--val-fraction must be in (0, 1), got " + valFraction);
        }
        String corpus;
        List<String> documents;
        if (FortunesCorpus.isFortunesDirectory(input)) {
            corpus = "fortunes in " + input;
            documents = FortunesCorpus.read(input);
        } else if (Files.isDirectory(input)) {
            corpus = "files in " + input;
            documents = filesOf(input);
        } else if (Files.isRegularFile(input)) {
            corpus = input.toString();
            documents = List.of(FortunesCorpus.readUtf8(input));
        } else {
            throw new IllegalArgumentException("the input " + input + " does not exist; give a text file or folder with"
                    + " --input, or install Debian's fortunes packages for the default " + FortunesCorpus.DEFAULT_DIR
                    + " (apt-get install fortunes, or scripts/setup.sh)");
        }
        long bytes = 0;
        List<int[]> tokenized = new ArrayList<>();
        int[] separator = tokenizer.eotToken() >= 0 ? new int[] {tokenizer.eotToken()} : tokenizer.encode("\n");
        for (String doc : documents) {
            bytes += doc.getBytes(StandardCharsets.UTF_8).length;
            tokenized.add(documents.size() == 1 ? tokenizer.encode(doc) : concat(List.of(tokenizer.encode(doc), separator)));
        }
        int[] train;
        int[] val;
        int valDocs;
        if (tokenized.size() == 1) {
            int[] all = tokenized.get(0);
            int valLen = (int) Math.round(all.length * valFraction);
            if (valLen < 1 || valLen >= all.length) {
                throw new IllegalArgumentException(input + " gives " + all.length + " tokens, too few to put "
                        + valFraction + " of them in val.bin and the rest in train.bin");
            }
            train = Arrays.copyOfRange(all, 0, all.length - valLen);
            val = Arrays.copyOfRange(all, all.length - valLen, all.length);
            valDocs = 0;
        } else {
            int n = tokenized.size();
            valDocs = (int) Math.min(n - 1, Math.max(1, Math.round(n * valFraction)));
            boolean[] isVal = new boolean[n];
            int[] order = new Generator(seed).permutation(n);
            for (int i = 0; i < valDocs; i++) {
                isVal[order[i]] = true;
            }
            List<int[]> trainParts = new ArrayList<>();
            List<int[]> valParts = new ArrayList<>();
            for (int i = 0; i < n; i++) {
                (isVal[i] ? valParts : trainParts).add(tokenized.get(i));
            }
            train = concat(trainParts);
            val = concat(valParts);
        }
        try {
            Files.createDirectories(outDir);
        } catch (IOException e) {
            throw new UncheckedIOException("cannot create " + outDir + ": " + e.getMessage(), e);
        }
        TokenFile.write(outDir.resolve("train.bin"), train);
        TokenFile.write(outDir.resolve("val.bin"), val);
        writeMeta(outDir.resolve("meta.json"), tokenizer, corpus);
        int docs = tokenized.size();
        return new Result(corpus, docs, bytes, docs == 1 ? 1 : docs - valDocs, train.length, valDocs, val.length);
    }

    /** Each regular, non-hidden file of the folder (sorted by name, not recursing) as one document. */
    private static List<String> filesOf(Path dir) {
        try (Stream<Path> files = Files.list(dir)) {
            List<String> out = files.filter(f -> Files.isRegularFile(f) && !f.getFileName().toString().startsWith("."))
                    .sorted().map(FortunesCorpus::readUtf8).filter(s -> !s.isBlank()).toList();
            if (out.isEmpty()) {
                throw new IllegalArgumentException(dir + " holds no text files");
            }
            return out;
        } catch (IOException e) {
            throw new UncheckedIOException("cannot list " + dir + ": " + e.getMessage(), e);
        }
    }

    private static int[] concat(List<int[]> parts) {
        long total = 0;
        for (int[] p : parts) {
            total += p.length;
        }
        if (total > Integer.MAX_VALUE - 8) {
            throw new IllegalArgumentException("the corpus gives " + total + " tokens, more than PrepareText holds in"
                    + " memory (2^31); split it into parts");
        }
        int[] out = new int[(int) total];
        int at = 0;
        for (int[] p : parts) {
            System.arraycopy(p, 0, out, at, p.length);
            at += p.length;
        }
        return out;
    }

    /** meta.json: what a training run needs to read the ids back (nanoGPT's meta.pkl holds the vocabulary size). */
    private static void writeMeta(Path path, Tokenizer tokenizer, String corpus) {
        Map<String, Object> meta = new LinkedHashMap<>();
        meta.put("tokenizer", tokenizer.name());
        meta.put("vocab_size", tokenizer.vocabSize());
        meta.put("eot_token", tokenizer.eotToken());
        meta.put("dtype", "uint16");
        meta.put("corpus", corpus);
        try {
            byte[] json = new ObjectMapper().writerWithDefaultPrettyPrinter().writeValueAsBytes(meta);
            AtomicFiles.write(path, channel -> {
                ByteBuffer buffer = ByteBuffer.wrap(json);
                while (buffer.hasRemaining()) {
                    channel.write(buffer);
                }
            });
        } catch (IOException e) {
            throw new UncheckedIOException("cannot write " + path + ": " + e.getMessage(), e);
        }
    }
}

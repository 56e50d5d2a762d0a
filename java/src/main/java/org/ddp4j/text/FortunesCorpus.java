package org.ddp4j.text;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.Stream;

/**
 * The English text of Debian's {@code fortunes} and {@code fortunes-min} packages: about 14,000
 * short quotations, jokes, poems and definitions (2.5 MB of UTF-8) in {@code /usr/share/games/fortunes},
 * a file per topic ({@code computers}, {@code literature}, {@code science}...), the fortunes of a file
 * separated by lines holding only {@code %}. Beside each text file lie its {@code strfile} index
 * ({@code NAME.dat}) and a link {@code NAME.u8 -> NAME}; both are skipped, as are other links,
 * sub-folders (such as {@code off/}, the separately packaged offensive ones) and hidden files.
 * {@code scripts/setup.sh} installs the packages.
 */
public final class FortunesCorpus {
    /** Where Debian's fortunes packages put the files. */
    public static final Path DEFAULT_DIR = Path.of("/usr/share/games/fortunes");

    private FortunesCorpus() {}

    /**
     * Whether {@code dir} is a folder of fortune files: it holds at least one file {@code NAME} with
     * its index {@code NAME.dat} beside it.
     */
    public static boolean isFortunesDirectory(Path dir) {
        if (!Files.isDirectory(dir)) {
            return false;
        }
        try (Stream<Path> files = Files.list(dir)) {
            return files.anyMatch(f -> isFortuneFile(f) && Files.isRegularFile(indexOf(f)));
        } catch (IOException e) {
            throw new UncheckedIOException("cannot list " + dir + ": " + e.getMessage(), e);
        }
    }

    /**
     * The fortune files of {@code dir}, sorted by name: regular files, not links, not hidden, not
     * {@code .dat} indexes nor {@code .u8} names.
     *
     * @throws UncheckedIOException naming the folder if it cannot be listed
     */
    public static List<Path> files(Path dir) {
        try (Stream<Path> files = Files.list(dir)) {
            return files.filter(FortunesCorpus::isFortuneFile).sorted().toList();
        } catch (IOException e) {
            throw new UncheckedIOException("cannot list " + dir + ": " + e.getMessage(), e);
        }
    }

    private static boolean isFortuneFile(Path f) {
        String name = f.getFileName().toString();
        return Files.isRegularFile(f, LinkOption.NOFOLLOW_LINKS) && !name.startsWith(".")
                && !name.endsWith(".dat") && !name.endsWith(".u8");
    }

    private static Path indexOf(Path f) {
        return f.resolveSibling(f.getFileName() + ".dat");
    }

    /**
     * Every fortune of every file of {@code dir} ({@link #files(Path)} order, then file order): each
     * one's lines without the {@code %} separators, ending with a newline; blank fortunes are dropped.
     *
     * @throws IllegalArgumentException if {@code dir} is not a folder or holds no fortune
     * @throws UncheckedIOException naming the file that cannot be read
     */
    public static List<String> read(Path dir) {
        if (!Files.isDirectory(dir)) {
            throw new IllegalArgumentException("FortunesCorpus: " + dir + " is not a folder; install Debian's fortunes"
                    + " packages (apt-get install fortunes, or scripts/setup.sh) or give the folder of your fortune files");
        }
        List<String> out = new ArrayList<>();
        for (Path f : files(dir)) {
            out.addAll(split(readUtf8(f)));
        }
        if (out.isEmpty()) {
            throw new IllegalArgumentException("FortunesCorpus: " + dir + " holds no fortunes (no text files with '%'-"
                    + "separated entries)");
        }
        return out;
    }

    /** The fortunes of one file's text: the parts between lines that are just {@code %}. */
    public static List<String> split(String text) {
        List<String> out = new ArrayList<>();
        StringBuilder fortune = new StringBuilder();
        for (String line : text.split("\r?\n", -1)) {
            if (line.strip().equals("%")) {
                add(out, fortune);
            } else {
                fortune.append(line).append('\n');
            }
        }
        add(out, fortune);
        return out;
    }

    private static void add(List<String> out, StringBuilder fortune) {
        // split(-1) leaves a last empty line after the final newline: drop trailing newlines, keep one.
        String text = fortune.toString().stripTrailing();
        if (!text.isBlank()) {
            out.add(text + "\n");
        }
        fortune.setLength(0);
    }

    /**
     * The fortunes as one text, each followed by {@code separator}: {@code "<|endoftext|>"} for GPT-2
     * (encode it with {@code allowEndOfText}) or {@code "\n"} for a blank line between them.
     */
    public static String join(List<String> fortunes, String separator) {
        StringBuilder out = new StringBuilder();
        for (String f : fortunes) {
            out.append(f).append(separator);
        }
        return out.toString();
    }

    /** A file as UTF-8; malformed bytes become U+FFFD rather than stopping the corpus. */
    static String readUtf8(Path file) {
        try {
            return StandardCharsets.UTF_8.newDecoder()
                    .onMalformedInput(CodingErrorAction.REPLACE)
                    .onUnmappableCharacter(CodingErrorAction.REPLACE)
                    .decode(ByteBuffer.wrap(Files.readAllBytes(file)))
                    .toString();
        } catch (CharacterCodingException e) {
            throw new IllegalStateException("cannot happen: the decoder replaces malformed input", e);
        } catch (IOException e) {
            throw new UncheckedIOException("cannot read " + file + ": " + e.getMessage(), e);
        }
    }
}

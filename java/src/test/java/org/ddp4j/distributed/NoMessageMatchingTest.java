package org.ddp4j.distributed;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.ddp4j.testing.RepoFiles;
import org.junit.jupiter.api.Test;

/**
 * No main source decides anything by an exception's words: no {@code contains}, {@code matches},
 * {@code startsWith}, {@code endsWith}, {@code indexOf}, {@code replace} or {@code split}, and no
 * regular expression, applied to an exception's {@code getMessage()} or {@code toString()} (directly,
 * or through a variable that holds it). Failures carry their facts as fields for that
 * ({@link DistributedException} and its subclasses, {@link WorkerError}).
 */
class NoMessageMatchingTest {

    private static final String TEXT_TEST = "\\s*\\.\\s*(contains|matches|startsWith|endsWith|indexOf|lastIndexOf"
            + "|replace\\w*|split)\\s*\\(";
    /** A message read and tested in one expression: {@code e.getMessage().contains(...)}. */
    private static final Pattern DIRECT = Pattern.compile(
            "(getMessage|getLocalizedMessage)\\(\\)\\)?" + TEXT_TEST
                    + "|\\b(e|ex|t|cause|error|failure|thrown)\\.toString\\(\\)" + TEXT_TEST
                    + "|matcher\\([^;]*(getMessage|getLocalizedMessage)\\(\\)");
    /** A variable that holds a message: {@code String m = String.valueOf(e.getMessage());}. */
    private static final Pattern HOLDER = Pattern.compile(
            "(\\w+)\\s*=\\s*[^;=]*(getMessage|getLocalizedMessage)\\(\\)[^;]*;");

    /**
     * Files that read other libraries' exceptions, whose words are all those libraries give: Spark's
     * barrier-mode refusals (a SparkException with a JIRA number in its text, and a task failure that
     * reaches the driver as text) and the JDK's UnsatisfiedLinkError (the missing library's name).
     */
    private static final List<String> FOREIGN_EXCEPTIONS = List.of("SparkFailures.java", "NativeLibrary.java");

    @Test
    void noMainSourceTestsAnExceptionsWords() throws IOException {
        List<String> found = new ArrayList<>();
        for (Path root : RepoFiles.mainSources()) {
            try (Stream<Path> files = Files.walk(root)) {
                for (Path file : files.filter(f -> f.toString().endsWith(".java"))
                        .filter(f -> !FOREIGN_EXCEPTIONS.contains(f.getFileName().toString())).sorted().toList()) {
                    for (String hit : violations(Files.readString(file))) {
                        found.add(file.getFileName() + ": " + hit);
                    }
                }
            }
        }
        assertEquals(List.of(), found, "decide by the exception's type and facts, not its words");
    }

    @Test
    void theCheckFindsEachForm() {
        assertEquals(1, violations("if (e.getMessage().contains(\"in use\")) {}").size());
        assertEquals(1, violations("boolean b = String.valueOf(e.getMessage()).startsWith(\"x\");").size());
        assertEquals(1, violations("String m = String.valueOf(e.getMessage());\nif (m.contains(\"x\")) {}").size());
        assertEquals(1, violations("String m = e.getMessage();\nMatcher k = P.matcher(m);").size());
        assertEquals(1, violations("int i = cause.toString().indexOf(':');").size());
        assertEquals(0, violations("String m = e.getMessage();\nthrow new X(m + \" more\");").size());
    }

    /** The places in {@code source} that test an exception's words. */
    static List<String> violations(String source) {
        List<String> out = new ArrayList<>();
        Matcher direct = DIRECT.matcher(source);
        while (direct.find()) {
            out.add(direct.group());
        }
        Matcher holder = HOLDER.matcher(source);
        while (holder.find()) {
            String name = Pattern.quote(holder.group(1));
            String rest = source.substring(holder.end());
            Matcher use = Pattern.compile("\\b" + name + TEXT_TEST + "|matcher\\(\\s*" + name + "\\b").matcher(rest);
            if (use.find()) {
                out.add(holder.group(1) + " (holds a message): " + use.group());
            }
        }
        return out;
    }
}

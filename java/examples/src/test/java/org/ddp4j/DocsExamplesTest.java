package org.ddp4j;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import java.io.File;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.io.StringWriter;
import java.net.MalformedURLException;
import java.net.URI;
import java.net.URL;
import java.net.URLClassLoader;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Collectors;
import java.util.stream.Stream;
import javax.tools.JavaCompiler;
import javax.tools.JavaFileObject;
import javax.tools.SimpleJavaFileObject;
import javax.tools.ToolProvider;
import org.ddp4j.testing.RepoFiles;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The documentation (README.md and every page under docs/) holds only code that compiles and
 * links that lead somewhere.
 *
 * <p>Every {@code java} block compiles as written against the test JVM's own class path: a block
 * that declares a public top-level class is a whole source file; any other block becomes the body
 * of a method whose parameters are the block's free variables (listed here, keyed by the block's
 * first statement), with the block's own imports, or else the imports a user would write. Blocks
 * are compiled, not run. A new block fails this test until its free variables are listed. A block
 * that imports a class this class path lacks (ddp4j-spark's or ddp4j-examples' in a module that
 * does not depend on them) is skipped, and the skipped blocks are named on stdout.
 *
 * <p>Every relative Markdown link resolves to a file, and to one of its headings when it names an
 * anchor (GitHub's rule: lower case, spaces to '-', punctuation dropped). README.md stays a front
 * page: at most 300 lines.
 */
class DocsExamplesTest {
    /** The longest the front page may be. */
    static final int README_MAX_LINES = 300;

    /**
     * Imports for blocks that have none of their own: the public packages, by single-type where two
     * would clash ({@code java.util.*} is added to every block).
     */
    private static final String DEFAULT_IMPORTS = String.join("\n",
            "import org.ddp4j.cuda.Cuda;",
            "import org.ddp4j.data.*;",
            "import org.ddp4j.distributed.Distributed;",
            "import org.ddp4j.distributed.ProcessGroup;",
            "import org.ddp4j.distributed.ReduceOp;",
            "import org.ddp4j.distributed.Work;",
            "import org.ddp4j.multiprocessing.*;",
            "import org.ddp4j.nn.*;",
            "import org.ddp4j.nn.Module;",
            "import org.ddp4j.nn.parallel.*;",
            "import org.ddp4j.optim.*;",
            "import org.ddp4j.tensor.*;");

    /** Imports a block without its own gets when the class is on the class path: the demos' ConvNet. */
    private static final List<String> OPTIONAL_DEFAULT_IMPORTS = List.of("org.ddp4j.examples.ConvNet");

    /** First statement of a block -> the parameters that stand for its free variables. */
    private static final Map<String, String> FREE_VARIABLES = Map.ofEntries(
            Map.entry("try (var join = ddp.join()) {", "DistributedDataParallel ddp, DataLoader loader, SGD opt, MSELoss lossFn"),
            Map.entry("Spawn.spawn(MyTrainer::train, 2, args);", "String[] args, int nodeRank"),
            Map.entry("Device device = Cuda.localDevice(System.getenv());", "MSELoss criterion, Batch batch"),
            Map.entry("Distributed.initProcessGroup(\"gloo\");", ""),
            Map.entry("ProcessGroup evens = Distributed.newGroup(List.of(0, 2));", "Tensor t, Tensor in, int rank, int world"),
            Map.entry("List<Tensor> decay = new ArrayList<>();", "Module model, int epochs"),
            Map.entry("ResNet model = ResNet.resnet50(10);", ""),
            Map.entry("GPT2LMHeadModel model = new GPT2LMHeadModel(GPT2Config.gpt2(), new Generator(1337));",
                    "Tensor x, Tensor y, Tensor prompt"),
            Map.entry("var accumulation = new GradientAccumulation(ddp, 4);", "DistributedDataParallel ddp, DataLoader loader, SGD optimizer,"
                    + " CrossEntropyLoss criterion"),
            Map.entry("ddp.registerCommHook(group, DefaultHooks.BF16_COMPRESS);",
                    "DistributedDataParallel ddp, DistributedDataParallel other, ProcessGroup group"),
            Map.entry("GradScaler scaler = new GradScaler();", "DataLoader loader, SGD opt, Module model"),
            Map.entry("SparkContext sc = SparkContext.getOrCreate();", ""),
            Map.entry("Dataset rows = PartitionDataset.open();", "long seed, int rank, DistributedDataParallel ddp,"
                    + " CrossEntropyLoss criterion, SGD opt"),
            Map.entry("List<WorkerResult> ranks = new SparkDistributor(2)", "JavaRDD<LabeledExample> rows"),
            Map.entry("var optimizer = new ZeroRedundancyOptimizer(net.parameters(),", "org.ddp4j.nn.Module net"),
            Map.entry("for (GPT2Block block : net.transformer().h()) {", "GPT2LMHeadModel net, Tensor x, Tensor y"));

    /** A block that declares a public top-level class is a whole source file. */
    private static final Pattern TOP_LEVEL_CLASS = Pattern.compile("(?m)^public class (\\w+)");

    /** Blocks of the benchmarks module (JMH classes): compiled by that module's build, not here. */
    private static final String BENCHMARK_BLOCK = "extends CollectiveBenchmark";

    private static final Pattern IMPORT = Pattern.compile("^import\\s+(static\\s+)?([\\w.]+?)(\\.\\*)?\\s*;");
    /** [text](target) or ![alt](target), with an optional "title". */
    private static final Pattern LINK = Pattern.compile("!?\\[[^\\]]*\\]\\(([^)\\s]+)(?:\\s+\"[^\"]*\")?\\)");
    private static final Pattern INLINE_CODE = Pattern.compile("`+[^`]*`+");
    private static final Pattern HEADING = Pattern.compile("^(#{1,6})\\s+(.*?)\\s*#*\\s*$");

    @TempDir
    Path out;

    /** README.md, then every .md under docs/, as paths relative to the repository root. */
    static List<Path> markdownFiles() throws IOException {
        List<Path> files = new ArrayList<>();
        files.add(RepoFiles.path("README.md"));
        try (Stream<Path> docs = Files.walk(RepoFiles.path("docs"))) {
            docs.filter(p -> p.toString().endsWith(".md")).sorted().forEach(files::add);
        }
        return files;
    }

    @Test
    void everyJavaBlockCompiles() throws IOException {
        ClassLoader classPath = classPathLoader();
        Map<String, String> sources = new LinkedHashMap<>();
        List<String> skipped = new ArrayList<>();
        int blocks = 0;
        int benchmarkBlocks = 0;
        for (Path file : markdownFiles()) {
            for (Block block : javaBlocks(file)) {
                blocks++;
                if (block.code.contains(BENCHMARK_BLOCK)) {
                    benchmarkBlocks++;
                    continue;
                }
                List<String> missing = missingImports(block.code, classPath);
                if (!missing.isEmpty()) {
                    skipped.add(block.where + " (not on the class path: " + String.join(", ", missing) + ")");
                    continue;
                }
                Matcher topLevel = TOP_LEVEL_CLASS.matcher(block.code);
                if (topLevel.find()) {
                    // a whole source file (the tutorial, the front page's program): compiled as written
                    String name = topLevel.group(1);
                    assertTrue(!sources.containsKey(name), block.where + ": a second class named " + name);
                    sources.put(name, block.code);
                    continue;
                }
                String name = "DocBlock" + sources.size();
                sources.put(name, wrap(name, block, classPath));
            }
        }
        assertTrue(blocks >= 6, "found only " + blocks + " java blocks in README.md and docs/");
        assertEquals(1, benchmarkBlocks, "expected exactly one benchmarks-module block");
        if (!skipped.isEmpty()) {
            System.out.println("DocsExamplesTest: skipped " + skipped.size() + " java block(s):\n  "
                    + String.join("\n  ", skipped));
        }
        assertTrue(!sources.isEmpty(), "every java block was skipped:\n" + String.join("\n", skipped));
        compile(sources);
    }

    @Test
    void everyRelativeLinkResolves() throws IOException {
        Map<Path, Set<String>> anchors = new HashMap<>();
        List<String> broken = new ArrayList<>();
        for (Path file : markdownFiles()) {
            broken.addAll(brokenLinks(file, anchors));
        }
        assertTrue(broken.isEmpty(), broken.size() + " broken link(s) in the documentation:\n" + String.join("\n", broken));
    }

    @Test
    void theReadmeIsAFrontPage() throws IOException {
        long lines = Files.readAllLines(RepoFiles.path("README.md")).size();
        assertTrue(lines <= README_MAX_LINES, "README.md has " + lines + " lines, more than " + README_MAX_LINES
                + ": move the details to a page under docs/ and link it");
    }

    @Test
    void theLinkCheckFindsABrokenLinkAndAnAnchor() throws IOException {
        Path dir = out.resolve("md");
        Files.createDirectories(dir);
        Files.writeString(dir.resolve("other.md"), "# Other page\n\n## DDP inside a Spark barrier stage\n\n"
                + "## The launcher: `scripts/ddp4j-run`\n");
        Files.writeString(dir.resolve("page.md"), String.join("\n",
                "# Page",
                "[fine](other.md#ddp-inside-a-spark-barrier-stage) [fine too](other.md#the-launcher-scriptsddp4j-run)",
                "[web](https://example.com/x) [self](#page) `[not a link](nowhere.md)`",
                "```",
                "[in a fence](nowhere.md)",
                "```",
                "[gone](missing.md) [no such heading](other.md#no-such-heading)",
                ""));
        List<String> broken = brokenLinks(dir.resolve("page.md"), new HashMap<>());
        assertEquals(2, broken.size(), String.valueOf(broken));
        assertTrue(broken.get(0).contains("page.md:7") && broken.get(0).contains("missing.md"), broken.get(0));
        assertTrue(broken.get(1).contains("page.md:7") && broken.get(1).contains("#no-such-heading"), broken.get(1));
    }

    /** GitHub's anchor for a heading: lower case, punctuation dropped, spaces to '-'. */
    static String slug(String heading) {
        String text = heading.replaceAll("`", "").replaceAll("\\[([^\\]]*)\\]\\([^)]*\\)", "$1").strip().toLowerCase();
        StringBuilder slug = new StringBuilder();
        text.codePoints().forEach(c -> {
            if (Character.isLetterOrDigit(c) || c == '-' || c == '_') {
                slug.appendCodePoint(c);
            } else if (c == ' ') {
                slug.append('-');
            }
        });
        return slug.toString();
    }

    /** Every link of one file that leads nowhere, as "file:line: target (why)". */
    private static List<String> brokenLinks(Path file, Map<Path, Set<String>> anchors) throws IOException {
        List<String> broken = new ArrayList<>();
        List<String> lines = Files.readAllLines(file);
        boolean fence = false;
        for (int i = 0; i < lines.size(); i++) {
            String line = lines.get(i);
            if (line.strip().startsWith("```")) {
                fence = !fence;
                continue;
            }
            if (fence) {
                continue;
            }
            Matcher m = LINK.matcher(INLINE_CODE.matcher(line).replaceAll(""));
            while (m.find()) {
                String target = m.group(1);
                if (target.matches("^[a-zA-Z][a-zA-Z0-9+.-]*:.*")) {
                    continue; // https:, mailto: ...
                }
                int hash = target.indexOf('#');
                String pathPart = hash < 0 ? target : target.substring(0, hash);
                String anchor = hash < 0 ? null : target.substring(hash + 1);
                Path resolved = pathPart.isEmpty() ? file : file.getParent().resolve(pathPart).normalize();
                String where = shown(file) + ":" + (i + 1) + ": " + target;
                if (!Files.exists(resolved)) {
                    broken.add(where + " (no such file: " + shown(resolved) + ")");
                } else if (anchor != null && resolved.toString().endsWith(".md")
                        && !anchors.computeIfAbsent(resolved, DocsExamplesTest::headingAnchors).contains(anchor)) {
                    broken.add(where + " (no heading with the anchor #" + anchor + " in " + resolved.getFileName() + ")");
                }
            }
        }
        return broken;
    }

    /** The anchors GitHub gives a file's headings, duplicates numbered -1, -2, ... */
    private static Set<String> headingAnchors(Path file) {
        Set<String> anchors = new TreeSet<>();
        Map<String, Integer> seen = new HashMap<>();
        boolean fence = false;
        try {
            for (String line : Files.readAllLines(file)) {
                if (line.strip().startsWith("```")) {
                    fence = !fence;
                    continue;
                }
                Matcher h = HEADING.matcher(line);
                if (!fence && h.matches()) {
                    String slug = slug(h.group(2));
                    int n = seen.merge(slug, 1, Integer::sum) - 1;
                    anchors.add(n == 0 ? slug : slug + "-" + n);
                }
            }
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        return anchors;
    }

    /** A path as the failure messages show it: relative to the repository root when it is inside it. */
    private static String shown(Path file) {
        Path root = RepoFiles.path("README.md").toAbsolutePath().normalize().getParent();
        Path abs = file.toAbsolutePath().normalize();
        return abs.startsWith(root) ? root.relativize(abs).toString() : abs.toString();
    }

    private record Block(String where, String code) {}

    private static List<Block> javaBlocks(Path file) throws IOException {
        String text = Files.readString(file);
        List<Block> blocks = new ArrayList<>();
        int at = 0;
        while ((at = text.indexOf("\n```java\n", at)) >= 0) {
            int start = at + "\n```java\n".length();
            int end = text.indexOf("\n```\n", start);
            assertTrue(end > 0, shown(file) + ": a java block that never ends");
            int line = (int) text.substring(0, start).chars().filter(c -> c == '\n').count() + 1;
            blocks.add(new Block(shown(file) + ":" + line, text.substring(start, end + 1)));
            at = end;
        }
        return blocks;
    }

    /** The test JVM's class path, as javac sees it (java.class.path, manifest Class-Path included). */
    private static ClassLoader classPathLoader() {
        List<URL> urls = new ArrayList<>();
        for (String entry : System.getProperty("java.class.path").split(File.pathSeparator)) {
            if (!entry.isEmpty()) {
                try {
                    urls.add(Path.of(entry).toUri().toURL());
                } catch (MalformedURLException e) {
                    throw new IllegalStateException(entry, e);
                }
            }
        }
        return new URLClassLoader(urls.toArray(URL[]::new), ClassLoader.getPlatformClassLoader());
    }

    /** The imported classes and packages of a block (or the optional defaults it uses) that the class path lacks. */
    private static List<String> missingImports(String block, ClassLoader classPath) {
        List<String> missing = new ArrayList<>();
        boolean ownImports = false;
        for (String line : block.split("\n")) {
            Matcher m = IMPORT.matcher(line.strip());
            if (!m.find()) {
                continue;
            }
            ownImports = true;
            String name = m.group(2);
            boolean wildcard = m.group(3) != null;
            boolean found = m.group(1) != null && wildcard ? loads(name, classPath) // import static a.B.*
                    : m.group(1) != null ? loads(name.substring(0, name.lastIndexOf('.')), classPath)
                    : wildcard ? packageExists(name, classPath) || loads(name, classPath)
                    : loads(name, classPath);
            if (!found) {
                missing.add(name + (wildcard ? ".*" : ""));
            }
        }
        if (!ownImports) {
            for (String optional : OPTIONAL_DEFAULT_IMPORTS) {
                String simple = optional.substring(optional.lastIndexOf('.') + 1);
                if (Pattern.compile("\\b" + simple + "\\b").matcher(block).find() && !loads(optional, classPath)) {
                    missing.add(optional);
                }
            }
        }
        return missing;
    }

    /** Whether a class (or a nested class, written with dots) loads, without initialising it. */
    private static boolean loads(String name, ClassLoader classPath) {
        String candidate = name;
        while (true) {
            try {
                Class.forName(candidate, false, classPath);
                return true;
            } catch (ClassNotFoundException | LinkageError e) {
                int dot = candidate.lastIndexOf('.');
                if (dot < 0) {
                    return false;
                }
                candidate = candidate.substring(0, dot) + "$" + candidate.substring(dot + 1);
                if (candidate.indexOf('.') < 0) {
                    return false;
                }
            }
        }
    }

    private static boolean packageExists(String pkg, ClassLoader classPath) {
        return classPath.getResource(pkg.replace('.', '/') + "/") != null;
    }

    private static String wrap(String name, Block block, ClassLoader classPath) {
        StringBuilder imports = new StringBuilder();
        StringBuilder body = new StringBuilder();
        for (String line : block.code.split("\n")) {
            (line.startsWith("import ") ? imports : body).append(line).append('\n');
        }
        String first = body.toString().strip().split("\n")[0].replaceAll("\\s+//.*$", "").strip();
        String params = FREE_VARIABLES.get(first);
        if (params == null) {
            fail(block.where + ": the java block starting \"" + first
                    + "\" is new: list its free variables in DocsExamplesTest.FREE_VARIABLES");
        }
        String allImports = imports.length() > 0 ? imports.toString()
                : DEFAULT_IMPORTS + "\n" + OPTIONAL_DEFAULT_IMPORTS.stream().filter(c -> loads(c, classPath))
                        .map(c -> "import " + c + ";").collect(Collectors.joining("\n"));
        return "// " + block.where + "\n" + allImports + "\nimport java.util.*;\n\n@SuppressWarnings(\"all\")\nclass " + name + " {\n"
                + "    static class MyTrainer { static void train(int index, String[] args) {} }\n"
                + "    static void block(" + params + ") throws Exception {\n" + body + "    }\n}\n";
    }

    private void compile(Map<String, String> sources) {
        JavaCompiler javac = ToolProvider.getSystemJavaCompiler();
        List<JavaFileObject> units = new ArrayList<>();
        sources.forEach((name, code) -> units.add(new SimpleJavaFileObject(URI.create("string:///" + name + ".java"),
                JavaFileObject.Kind.SOURCE) {
            @Override
            public CharSequence getCharContent(boolean ignoreEncodingErrors) {
                return code;
            }
        }));
        StringWriter errors = new StringWriter();
        List<String> options = List.of("-proc:none", "-Xlint:none", "-nowarn", "-d", out.toString(), "-cp",
                System.getProperty("java.class.path"));
        boolean ok = javac.getTask(errors, null, null, options, null, units).call();
        if (!ok) {
            StringBuilder all = new StringBuilder(errors.toString()).append("\n--- the wrapped blocks:\n");
            sources.forEach((name, code) -> all.append("// ").append(name).append('\n').append(code));
            fail("java blocks of README.md and docs/ do not compile:\n" + all);
        }
    }
}

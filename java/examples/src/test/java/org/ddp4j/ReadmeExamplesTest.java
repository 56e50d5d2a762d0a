package org.ddp4j;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import java.io.IOException;
import java.io.StringWriter;
import java.net.URI;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import javax.tools.JavaCompiler;
import javax.tools.JavaFileObject;
import javax.tools.SimpleJavaFileObject;
import javax.tools.ToolProvider;
import org.ddp4j.testing.RepoFiles;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Every {@code java} block of the README compiles as written against the library: each becomes
 * the body of a method whose parameters are the block's free variables (listed here, keyed by the
 * block's first statement), with the block's own imports, or else the imports a user would write.
 * Blocks are compiled, not run. A new block fails this test until its free variables are listed.
 */
class ReadmeExamplesTest {
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
            "import org.ddp4j.examples.ConvNet;",
            "import org.ddp4j.multiprocessing.*;",
            "import org.ddp4j.nn.*;",
            "import org.ddp4j.nn.Module;",
            "import org.ddp4j.nn.parallel.*;",
            "import org.ddp4j.optim.*;",
            "import org.ddp4j.tensor.*;");

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
    private static final java.util.regex.Pattern TOP_LEVEL_CLASS =
            java.util.regex.Pattern.compile("(?m)^public class (\\w+)");

    /** Blocks of the benchmarks module (JMH classes): compiled by that module's build, not here. */
    private static final String BENCHMARK_BLOCK = "extends CollectiveBenchmark";

    @TempDir
    Path out;

    @Test
    void everyJavaBlockCompiles() throws IOException {
        List<String> blocks = javaBlocks(Files.readString(RepoFiles.path("README.md")));
        assertTrue(blocks.size() >= 6, "found only " + blocks.size() + " java blocks in README.md");
        Map<String, String> sources = new LinkedHashMap<>();
        int skipped = 0;
        for (String block : blocks) {
            if (block.contains(BENCHMARK_BLOCK)) {
                skipped++;
                continue;
            }
            java.util.regex.Matcher topLevel = TOP_LEVEL_CLASS.matcher(block);
            if (topLevel.find()) {
                // a whole source file (the tutorial): compiled as written, under its class's name
                sources.put(topLevel.group(1), block);
                continue;
            }
            String name = "ReadmeBlock" + sources.size();
            sources.put(name, wrap(name, block));
        }
        assertEquals(1, skipped, "expected exactly one benchmarks-module block");
        compile(sources);
    }

    private static List<String> javaBlocks(String readme) {
        List<String> blocks = new ArrayList<>();
        int at = 0;
        while ((at = readme.indexOf("\n```java\n", at)) >= 0) {
            int start = at + "\n```java\n".length();
            int end = readme.indexOf("\n```\n", start);
            blocks.add(readme.substring(start, end + 1));
            at = end;
        }
        return blocks;
    }

    private static String wrap(String name, String block) {
        StringBuilder imports = new StringBuilder();
        StringBuilder body = new StringBuilder();
        for (String line : block.split("\n")) {
            (line.startsWith("import ") ? imports : body).append(line).append('\n');
        }
        String first = body.toString().strip().split("\n")[0].replaceAll("\\s+//.*$", "").strip();
        String params = FREE_VARIABLES.get(first);
        if (params == null) {
            fail("README block starting \"" + first + "\" is new: list its free variables in ReadmeExamplesTest");
        }
        String allImports = imports.length() > 0 ? imports.toString() : DEFAULT_IMPORTS;
        return allImports + "\nimport java.util.*;\n\n@SuppressWarnings(\"all\")\nclass " + name + " {\n"
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
            fail("README java blocks do not compile:\n" + all);
        }
    }
}

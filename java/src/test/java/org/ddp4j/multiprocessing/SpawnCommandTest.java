package org.ddp4j.multiprocessing;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** The command line of a spawned worker JVM: what it inherits from the parent and what DDP4J_JAVA_OPTS decides. */
class SpawnCommandTest {
    @Test
    void keepsPropertiesAssertionsAndModuleFlagsButNotHeapOrAgents() {
        assertEquals(List.of("-Dapp.mode=test", "-ea", "--add-opens=java.base/java.lang=ALL-UNNAMED"),
                SpawnCommand.inheritedOptions(List.of("-Xmx8g", "-Dapp.mode=test", "-ea",
                        "-agentlib:jdwp=transport=dt_socket,server=y,address=5005", "-javaagent:/x/agent.jar",
                        "--add-opens=java.base/java.lang=ALL-UNNAMED", "-XX:+UseG1GC")));
    }

    @Test
    void workerDefaultsGiveWayToDdp4jJavaOpts() {
        assertEquals(List.of("-XX:+UseSerialGC", "-XX:MaxRAMPercentage=12.5", "-XX:TieredStopAtLevel=1"),
                WorkerJvm.defaults(List.of(), 4));
        assertEquals(List.of(), WorkerJvm.defaults(List.of("-XX:+UseParallelGC", "-Xmx2g", "-XX:TieredStopAtLevel=4"), 4));
        assertEquals(List.of("-Xmx1g", "-Dname=two words", "-Dq=it's"),
                WorkerJvm.splitOptions(" -Xmx1g  \"-Dname=two words\" \"-Dq=it's\""));
    }

    @Test
    void endsWithTheWorkerMainEntryIndexRankAndArguments() {
        List<String> argv = SpawnCommand.argv(new SpawnEntryPoint("a.B", "train"), 1, 5, 2, List.of("x y", "--z"),
                Map.of(WorkerJvm.JAVA_OPTS_ENV, "-Xmx300m"));
        assertEquals(List.of("-Xmx300m", SpawnWorker.class.getName(), "a.B", "train", "1", "5", "x y", "--z"),
                argv.subList(argv.size() - 8, argv.size()));
        assertEquals(System.getProperty("java.class.path"), argv.get(2));
    }
}

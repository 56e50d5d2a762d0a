package org.ddp4j.launch;

import java.io.PrintStream;
import java.time.Duration;
import java.util.List;
import java.util.Map;

/**
 * The validated settings of one launcher run: what {@link Launcher} parsed from the command line,
 * plus the environment the workers inherit and the streams their prefixed output goes to.
 *
 * @param nprocPerNode workers started on this node
 * @param nnodes number of nodes (launchers) in the job
 * @param nodeRank this node's rank, {@code 0 <= nodeRank < nnodes}
 * @param masterAddr host of the store that node 0's launcher serves
 * @param masterPort port of that store
 * @param maxRestarts how many times a failed worker group is restarted
 * @param rdzvTimeout how long rendezvous (and the exit barrier) wait for the other nodes
 * @param keepAliveInterval how often this launcher writes its keep-alive to the store and reads the others'
 * @param keepAliveTimeout how long a node may stay silent (or the store unanswered) before it is declared lost
 * @param command the main class or command, then its arguments
 * @param env the environment the workers start from (normally {@link System#getenv()})
 * @param out where the workers' prefixed stdout goes
 * @param err where the workers' prefixed stderr and the launcher's messages go
 * @param progressBar whether rank 0 is told to draw a progress bar ({@link RankZeroProgress})
 */
record LaunchConfig(
        int nprocPerNode,
        int nnodes,
        int nodeRank,
        String masterAddr,
        int masterPort,
        int maxRestarts,
        Duration rdzvTimeout,
        Duration keepAliveInterval,
        Duration keepAliveTimeout,
        List<String> command,
        Map<String, String> env,
        PrintStream out,
        PrintStream err,
        boolean progressBar) {

    LaunchConfig {
        command = List.copyOf(command);
        env = Map.copyOf(env);
    }

    /** Default of {@code --keepalive-interval}, in seconds, when {@code DDP4J_KEEPALIVE_INTERVAL} is not set. */
    static final String DEFAULT_KEEPALIVE_INTERVAL = "1";

    /** Default of {@code --keepalive-timeout}, in seconds, when {@code DDP4J_KEEPALIVE_TIMEOUT} is not set. */
    static final String DEFAULT_KEEPALIVE_TIMEOUT = "20";

    /** This config with the store's port as bound (the launcher picked it when masterPort was 0). */
    LaunchConfig withMasterPort(int port) {
        return new LaunchConfig(nprocPerNode, nnodes, nodeRank, masterAddr, port, maxRestarts, rdzvTimeout,
                keepAliveInterval, keepAliveTimeout, command, env, out, err, progressBar);
    }

        /** {@code host:port} of the store, for messages. */
    String endpoint() {
        return masterAddr + ":" + masterPort;
    }
}

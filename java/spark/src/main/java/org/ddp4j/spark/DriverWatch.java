package org.ddp4j.spark;

import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.time.Duration;

/**
 * Tells a task that its driver is gone, so that it stops its worker within seconds of the driver's
 * death (kill -9 of spark-submit) instead of when Spark gets round to its executors: a daemon
 * thread connects to the driver's RPC endpoint ({@code spark.driver.host}:{@code spark.driver.port})
 * every {@link #INTERVAL}; {@link #MISSES} failed connections in a row mean the driver is gone.
 * A live driver accepts such a connection and drops it (nothing is sent).
 */
final class DriverWatch implements AutoCloseable {
    static final Duration INTERVAL = Duration.ofSeconds(2);
    static final int MISSES = 3;

    private final InetSocketAddress driver;
    private final Duration interval;
    private final Thread thread;
    private volatile boolean gone;
    private volatile boolean closed;

    /** Watches {@code host:port}, checking every {@code interval}, each try bounded by it too. */
    DriverWatch(String host, int port, Duration interval) {
        this.driver = new InetSocketAddress(host, port);
        this.interval = interval;
        this.thread = new Thread(this::watch, "ddp4j-driver-watch");
        thread.setDaemon(true);
        thread.start();
    }

    /** A watch of the driver this executor serves, or null when Spark's configuration does not name it. */
    static DriverWatch ofThisExecutor() {
        org.apache.spark.SparkEnv env = org.apache.spark.SparkEnv.get();
        if (env == null || !env.conf().contains("spark.driver.host") || !env.conf().contains("spark.driver.port")) {
            return null;
        }
        try {
            int port = Integer.parseInt(env.conf().get("spark.driver.port"));
            return new DriverWatch(env.conf().get("spark.driver.host"), port, INTERVAL);
        } catch (NumberFormatException e) {
            return null;
        }
    }

    /** Whether the driver did not accept {@link #MISSES} connections in a row. */
    boolean gone() {
        return gone;
    }

    /** The driver's endpoint, for messages. */
    String driver() {
        return driver.getHostString() + ":" + driver.getPort();
    }

    private void watch() {
        int misses = 0;
        while (!closed && !gone) {
            try (Socket s = new Socket()) {
                s.connect(driver, (int) interval.toMillis());
                misses = 0;
            } catch (IOException e) {
                misses++;
                gone = misses >= MISSES;
            }
            try {
                Thread.sleep(interval.toMillis());
            } catch (InterruptedException e) {
                return;
            }
        }
    }

    @Override
    public void close() {
        closed = true;
        thread.interrupt();
    }
}

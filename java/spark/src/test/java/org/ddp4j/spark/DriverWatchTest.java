package org.ddp4j.spark;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.net.InetAddress;
import java.net.ServerSocket;
import java.time.Duration;
import org.junit.jupiter.api.Test;

/** A task's watch of its driver: quiet while the driver accepts connections, "gone" soon after it stops. */
class DriverWatchTest {
    @Test
    void aDriverThatStopsListeningIsGoneAfterThreeMisses() throws Exception {
        ServerSocket driver = new ServerSocket(0, 50, InetAddress.getLoopbackAddress());
        try (DriverWatch watch = new DriverWatch("127.0.0.1", driver.getLocalPort(), Duration.ofMillis(100))) {
            Thread.sleep(600);
            assertFalse(watch.gone(), "a listening driver is not gone");
            driver.close();
            long deadline = System.nanoTime() + Duration.ofSeconds(10).toNanos();
            while (!watch.gone() && System.nanoTime() < deadline) {
                Thread.sleep(50);
            }
            assertTrue(watch.gone(), "the driver stopped listening 10 s ago");
        } finally {
            driver.close();
        }
    }
}

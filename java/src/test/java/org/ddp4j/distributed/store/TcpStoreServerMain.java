package org.ddp4j.distributed.store;

import java.time.Duration;

/** A store server in its own process (for tests that stop it): prints "port N", then serves until killed. */
public final class TcpStoreServerMain {
    private TcpStoreServerMain() {}

    public static void main(String[] args) throws Exception {
        try (TcpStore store = TcpStore.server("127.0.0.1", 0, Duration.ofSeconds(30))) {
            System.out.println("port " + store.port());
            System.out.flush();
            Thread.sleep(Long.MAX_VALUE);
        }
    }
}

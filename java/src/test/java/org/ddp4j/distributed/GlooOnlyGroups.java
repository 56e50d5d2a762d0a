package org.ddp4j.distributed;

import java.time.Duration;
import org.ddp4j.distributed.store.HashStore;

/**
 * Gloo groups on Gloo's TCP transport only (shared memory off), for tests in any package; here
 * because GlooOptions and this constructor are the backend's own.
 */
public final class GlooOnlyGroups {
    private GlooOnlyGroups() {}

    /** A group of {@code world} ranks over {@code store}, this one {@code rank}, bound to 127.0.0.1. */
    public static ProcessGroupGloo create(HashStore store, int rank, int world, Duration timeout) {
        return new ProcessGroupGloo(store, rank, world, timeout, "127.0.0.1", null,
                GlooOptions.fromEnvironment(System.getenv()).withShm(false, null));
    }
}

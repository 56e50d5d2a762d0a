package org.ddp4j.distributed.store;

import static org.junit.jupiter.api.Assertions.*;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Test;

class HashStoreTest extends StoreContract {
    @Override
    protected List<Store> openClients(Duration timeout) {
        HashStore store = new HashStore(timeout);
        return List.of(store, store, store, store);
    }

    @Override
    protected String storeName() {
        return "HashStore";
    }

    @Test
    void defaultTimeoutIs300Seconds() {
        assertEquals(Duration.ofSeconds(300), new HashStore().timeout());
    }

    @Test
    void negativeTimeoutIsRejected() {
        assertThrows(IllegalArgumentException.class, () -> new HashStore(Duration.ofMillis(-1)));
    }

    @Test
    void closeLeavesTheStoreUsableForOtherRanks() {
        HashStore store = new HashStore(SHORT);
        store.set("k", b("v"));
        store.close();
        assertEquals("v", s(store.get("k")));
        assertEquals(1, store.numKeys());
    }
}

package org.ddp4j.distributed.store;

import static org.junit.jupiter.api.Assertions.*;
import java.time.Duration;
import java.util.List;
import org.ddp4j.distributed.DistributedTimeoutException;
import org.junit.jupiter.api.Test;

class PrefixStoreTest extends StoreContract {
    @Override
    protected List<Store> openClients(Duration timeout) {
        HashStore inner = new HashStore(timeout);
        return List.of(new PrefixStore("pg", inner), new PrefixStore("pg", inner), new PrefixStore("pg", inner),
                new PrefixStore("pg", inner));
    }

    @Override
    protected String keyName(String key) {
        return "pg/" + key;
    }

    @Override
    protected String storeName() {
        return "HashStore";
    }

    @Test
    void keysArePrefixedInTheInnerStore() {
        HashStore inner = new HashStore(SHORT);
        PrefixStore a = new PrefixStore("group0", inner);
        PrefixStore b = new PrefixStore("group1", inner);
        a.set("rank", b("A"));
        b.set("rank", b("B"));
        assertEquals("A", s(inner.get("group0/rank")));
        assertEquals("B", s(inner.get("group1/rank")));
        assertEquals("A", s(a.get("rank")));
        assertEquals(2, a.add("n", 2));
        assertEquals("2", s(inner.get("group0/n")));
        assertFalse(b.check(List.of("n")));
        assertSame(inner, a.underlying());
        assertEquals(SHORT, a.timeout());
        DistributedTimeoutException e = assertThrows(DistributedTimeoutException.class, () -> b.get("n"));
        assertTrue(e.getMessage().contains("\"group1/n\""), e.getMessage());
        // nesting composes prefixes
        new PrefixStore("inner", a).set("x", b("1"));
        assertEquals("1", s(inner.get("group0/inner/x")));
    }
}

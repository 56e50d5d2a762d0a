package org.ddp4j.nn.parallel;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** Reading {@link PeerKilledMain}'s output in the tests that kill one of its ranks. */
final class PeerKilledOutput {
    private PeerKilledOutput() {}

    /** The first line of out that starts with prefix; fails the test naming the prefix when none does. */
    static String line(String out, String prefix) {
        return out.lines().filter(l -> l.startsWith(prefix)).findFirst()
                .orElseThrow(() -> new AssertionError("no line starting with \"" + prefix + "\" in:\n" + out));
    }

    /** The pid rank {@code rank} printed ("pid rank=R P"). */
    static String pid(String out, int rank) {
        String prefix = "pid rank=" + rank + " ";
        return line(out, prefix).substring(prefix.length()).trim();
    }

    /** A survivor's error names the dead rank and its pid and does not blame uneven inputs. */
    static void assertNamesTheDeadRank(String failed, int victim, String pid) {
        assertTrue(failed.contains("rank " + victim + " (pid " + pid + ") died during allReduce(AVG)"), failed);
        assertFalse(failed.contains("ddp.join()"), failed);
        assertFalse(failed.contains("uneven inputs"), failed);
    }
}

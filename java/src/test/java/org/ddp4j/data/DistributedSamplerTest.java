package org.ddp4j.data;

import static org.junit.jupiter.api.Assertions.*;

import java.io.File;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;

class DistributedSamplerTest {

    private static int[][] shards(int size, int replicas, boolean dropLast) {
        int[][] out = new int[replicas][];
        for (int r = 0; r < replicas; r++) {
            out[r] = new DistributedSampler(size, replicas, r, false, 0, dropLast).indices();
        }
        return out;
    }

    private static int[][] shuffled(int size, int replicas, long seed, long epoch) {
        int[][] out = new int[replicas][];
        for (int r = 0; r < replicas; r++) {
            DistributedSampler s = new DistributedSampler(size, replicas, r, true, seed, false);
            s.setEpoch(epoch);
            out[r] = s.indices();
        }
        return out;
    }

    // Expected lists: computed by hand from PyTorch 1.13's algorithm, and printed by Debian's python3-torch 1.13.1:
    // [list(DistributedSampler(range(n), num_replicas=k, rank=r, shuffle=False, drop_last=d)) for r in range(k)]

    @Test
    void tenSamplesThreeReplicasPadded() {
        assertArrayEquals(new int[][] {{0, 3, 6, 9}, {1, 4, 7, 0}, {2, 5, 8, 1}}, shards(10, 3, false));
        DistributedSampler s = new DistributedSampler(10, 3, 1, false, 0, false);
        assertEquals(4, s.size());
        assertEquals(12, s.totalSize());
    }

    @Test
    void tenSamplesThreeReplicasDropLast() {
        assertArrayEquals(new int[][] {{0, 3, 6}, {1, 4, 7}, {2, 5, 8}}, shards(10, 3, true));
        DistributedSampler s = new DistributedSampler(10, 3, 0, false, 0, true);
        assertEquals(3, s.size());
        assertEquals(9, s.totalSize());
    }

    @Test
    void tenSamplesFourReplicasPadded() {
        assertArrayEquals(new int[][] {{0, 4, 8}, {1, 5, 9}, {2, 6, 0}, {3, 7, 1}}, shards(10, 4, false));
        assertEquals(12, new DistributedSampler(10, 4, 3, false, 0, false).totalSize());
    }

    @Test
    void tenSamplesFourReplicasDropLast() {
        assertArrayEquals(new int[][] {{0, 4}, {1, 5}, {2, 6}, {3, 7}}, shards(10, 4, true));
        DistributedSampler s = new DistributedSampler(10, 4, 2, false, 0, true);
        assertEquals(2, s.size());
        assertEquals(8, s.totalSize());
    }

    @Test
    void smallDatasetsWrapOrEmpty() {
        // fewer samples than replicas: padding wraps around the dataset several times
        assertArrayEquals(new int[][] {{0}, {1}, {2}, {0}, {1}, {2}, {0}, {1}}, shards(3, 8, false));
        assertArrayEquals(new int[][] {{0}, {0}, {0}, {0}}, shards(1, 4, false));
        assertArrayEquals(new int[][] {{0}, {1}, {0}}, shards(2, 3, false));
        assertArrayEquals(new int[][] {{}, {}, {}}, shards(2, 3, true));
        assertArrayEquals(new int[][] {{}, {}, {}}, shards(0, 3, false));
        assertArrayEquals(new int[][] {{}, {}, {}}, shards(0, 3, true));
        assertArrayEquals(new int[][] {{0, 2, 4}, {1, 3, 0}}, shards(5, 2, false));
        assertArrayEquals(new int[][] {{0, 2}, {1, 3}}, shards(5, 2, true));
        assertArrayEquals(new int[][] {{0, 1, 2, 3, 4}}, shards(5, 1, true));
    }

    @Test
    void invalidArgumentsAreRejected() {
        IllegalArgumentException e =
                assertThrows(IllegalArgumentException.class, () -> new DistributedSampler(10, 3, 3));
        assertEquals("Invalid rank 3, rank should be in the interval [0, 2]", e.getMessage());
        assertThrows(IllegalArgumentException.class, () -> new DistributedSampler(10, 3, -1));
        assertThrows(IllegalArgumentException.class, () -> new DistributedSampler(10, 0, 0));
        assertThrows(IllegalArgumentException.class, () -> new DistributedSampler(-1, 2, 0));
    }

    @Test
    void defaultsAreShuffleSeedZeroPadded() {
        DistributedSampler s = new DistributedSampler(10, 3, 2);
        assertTrue(s.shuffle());
        assertEquals(0, s.seed());
        assertFalse(s.dropLast());
        assertEquals(0, s.epoch());
        assertArrayEquals(new DistributedSampler(10, 3, 2, true, 0, false).indices(), s.indices());
        Sampler asSampler = s;
        assertEquals(4, asSampler.size());
    }

    @Test
    void shuffledShardsAreDisjointAndCoverTheDataset() {
        int[][] shards = shuffled(12, 4, 7, 0);
        int[] seen = new int[12];
        for (int[] shard : shards) {
            assertEquals(3, shard.length);
            for (int i : shard) {
                seen[i]++;
            }
        }
        int[] once = new int[12];
        Arrays.fill(once, 1);
        assertArrayEquals(once, seen, "every index exactly once across ranks");
        assertFalse(Arrays.equals(new int[] {0, 4, 8}, shards[0]), "shuffle left rank 0 in order");
    }

    @Test
    void shuffledPaddedShardsCoverThePaddedPermutation() {
        // 10 samples, 4 replicas: the permutation plus its first 2 entries again
        int[][] shards = shuffled(10, 4, 3, 5);
        int[] perm = DistributedSampler.permutation(10, 3 + 5);
        int[] padded = Arrays.copyOf(perm, 12);
        padded[10] = perm[0];
        padded[11] = perm[1];
        for (int r = 0; r < 4; r++) {
            assertArrayEquals(new int[] {padded[r], padded[r + 4], padded[r + 8]}, shards[r]);
        }
        int[] count = new int[10];
        for (int[] shard : shards) {
            for (int i : shard) {
                count[i]++;
            }
        }
        for (int i = 0; i < 10; i++) {
            assertEquals(i == perm[0] || i == perm[1] ? 2 : 1, count[i], "index " + i);
        }
        // permutation() is a permutation
        int[] sorted = perm.clone();
        Arrays.sort(sorted);
        assertArrayEquals(new int[] {0, 1, 2, 3, 4, 5, 6, 7, 8, 9}, sorted);
    }

    @Test
    void ranksAgreeForAnEpochAndTheOrderChangesWithTheEpoch() {
        assertArrayEquals(shuffled(100, 4, 0, 3), shuffled(100, 4, 0, 3), "same seed and epoch, same shards");
        assertFalse(Arrays.deepEquals(shuffled(100, 4, 0, 0), shuffled(100, 4, 0, 1)), "epoch must change order");
        assertFalse(Arrays.deepEquals(shuffled(100, 4, 0, 0), shuffled(100, 4, 1, 0)), "seed must change order");

        DistributedSampler s = new DistributedSampler(100, 4, 1, true, 0, false);
        int[] epoch0 = s.indices();
        assertArrayEquals(epoch0, s.indices(), "indices() must be repeatable within an epoch");
        s.setEpoch(1);
        assertEquals(1, s.epoch());
        assertFalse(Arrays.equals(epoch0, s.indices()));
        s.setEpoch(0);
        assertArrayEquals(epoch0, s.indices());
    }

    @Test
    void iteratorVisitsTheIndices() {
        DistributedSampler s = new DistributedSampler(10, 3, 1, false, 0, false);
        List<Integer> visited = new ArrayList<>();
        for (int i : s) {
            visited.add(i);
        }
        assertEquals(List.of(1, 4, 7, 0), visited);
    }

    /**
     * Compares the unshuffled shards with PyTorch's own DistributedSampler over a grid of sizes,
     * when Debian's python3-torch is installed; skipped otherwise.
     */
    @Test
    void matchesPyTorchWhenAvailable() throws Exception {
        String script = String.join("\n",
                "import warnings; warnings.filterwarnings('ignore')",
                "from torch.utils.data.distributed import DistributedSampler as D",
                "for n in range(0, 14):",
                "  for k in range(1, 6):",
                "    for d in (0, 1):",
                "      for r in range(k):",
                "        s = list(D(range(n), num_replicas=k, rank=r, shuffle=False, drop_last=bool(d)))",
                "        print(n, k, d, r, ' '.join(map(str, s)))");
        Map<String, String> expected = new HashMap<>();
        boolean ran = false;
        for (String python : new String[] {"/usr/bin/python3", "python3"}) {
            Process p;
            // Output to a file and stderr discarded: reading a pipe would wait, unbounded, for a hung python.
            File output = File.createTempFile("torch-sampler", ".txt");
            output.deleteOnExit();
            try {
                p = new ProcessBuilder(python, "-c", script).redirectError(ProcessBuilder.Redirect.DISCARD)
                        .redirectOutput(output).start();
            } catch (java.io.IOException e) {
                continue;
            }
            boolean finished = p.waitFor(60, TimeUnit.SECONDS);
            List<String> lines = finished ? Files.readAllLines(output.toPath(), StandardCharsets.UTF_8) : List.of();
            if (finished && p.exitValue() == 0 && !lines.isEmpty()) {
                for (String line : lines) {
                    String[] f = line.split(" ", 5);
                    expected.put(f[0] + " " + f[1] + " " + f[2] + " " + f[3], f.length > 4 ? f[4].trim() : "");
                }
                ran = true;
                break;
            }
            p.destroyForcibly();
        }
        Assumptions.assumeTrue(ran, "python3 with torch is not installed (Debian: apt-get install python3-torch)");
        int checked = 0;
        for (int n = 0; n < 14; n++) {
            for (int k = 1; k < 6; k++) {
                for (int d = 0; d < 2; d++) {
                    for (int r = 0; r < k; r++) {
                        int[] mine = new DistributedSampler(n, k, r, false, 0, d == 1).indices();
                        StringBuilder sb = new StringBuilder();
                        for (int i : mine) {
                            sb.append(sb.length() == 0 ? "" : " ").append(i);
                        }
                        String key = n + " " + k + " " + d + " " + r;
                        assertEquals(expected.get(key), sb.toString(), "size " + n + ", replicas " + k + ", dropLast "
                                + (d == 1) + ", rank " + r);
                        checked++;
                    }
                }
            }
        }
        assertEquals(expected.size(), checked);
    }
}

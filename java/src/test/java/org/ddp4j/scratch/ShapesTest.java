package org.ddp4j.scratch;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.function.Function;
import java.util.function.Supplier;
import org.ddp4j.distributed.ProcessGroup;
import org.ddp4j.distributed.fsdp.FSDPModule;
import org.ddp4j.distributed.fsdp.FullyShard;
import org.ddp4j.distributed.fsdp.FullyShardOptions;
import org.ddp4j.optim.SGD;
import org.ddp4j.tensor.Tensor;
import org.ddp4j.tensor.Tensors;
import org.ddp4j.testing.Ranks;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

@Timeout(value = 60, unit = TimeUnit.SECONDS)
class ShapesTest {
    static final Duration T = Duration.ofSeconds(30);

    interface Sharder { FSDPModule shard(Toy t, ProcessGroup g); }

    /** trains fsdp and a plain copy with SGD, compares full params after each step. */
    static void run(int world, Supplier<Toy> make, Sharder sharder, long[] inShape, int steps) throws Exception {
        Ranks.withGroups(world, T, (rank, group) -> {
            Toy net = make.get();
            Toy plain = make.get();
            FSDPModule fsdp = sharder.shard(net, group);
            SGD opt = new SGD(fsdp.parameters(), 0.1);
            for (int s = 0; s < steps; s++) {
                final int step = s;
                try (var sc = Tensors.scope()) {
                    opt.zeroGrad();
                    fsdp.forward(Toy.input(rank, step, inShape)).backward();
                    opt.step();
                }
                Map<String, float[]> g = Toy.avgGrads(plain, world, r -> plain.forward(Toy.input(r, step, inShape)));
                Toy.sgd(plain, g, 0.1f);
                Map<String, Tensor> full = fsdp.fullStateDict();
                List<String> bad = Toy.compare(Toy.values(plain.stateDict()), Toy.values(full), 1e-5f);
                full.values().forEach(Tensor::close);
                assertTrue(bad.isEmpty(), "rank " + rank + " step " + s + ": " + bad);
            }
            opt.close();
            fsdp.close();
            plain.close();
            return null;
        });
    }

    static Sharder root() {
        return (t, g) -> FullyShard.fullyShard(t, FullyShardOptions.defaults().processGroup(g));
    }

    @Test
    void fewerRowsThanRanks() throws Exception {
        run(3, () -> new Toy(Toy.shapes("a", new long[] {1, 4}, "b", new long[] {2}, "w", new long[] {5, 4}), 1,
                (m, x) -> x.mul(m.p("a")).matmul(m.p("w").transpose(0, 1)).pow(2).mean().add(m.p("b").mul(m.p("b")).sum().mul(0.5))),
                root(), new long[] {3, 4}, 3);
    }

    @Test
    void zeroDimParameter() throws Exception {
        run(3, () -> new Toy(Toy.shapes("c", new long[] {}, "w", new long[] {5, 4}), 1,
                (m, x) -> x.matmul(m.p("w").transpose(0, 1)).pow(2).mean().mul(m.p("c"))),
                root(), new long[] {3, 4}, 3);
    }

    /** two nested units plus the root. */
    static Toy nested(long seed) {
        Toy u1 = new Toy(Toy.shapes("w", new long[] {3, 4}), seed, (m, x) -> x.matmul(m.p("w").transpose(0, 1)).tanh());
        Toy u2 = new Toy(Toy.shapes("w", new long[] {2, 3}, "b", new long[] {2}), seed + 1,
                (m, x) -> x.matmul(m.p("w").transpose(0, 1)).add(m.p("b")));
        Toy root = new Toy(Toy.shapes("s", new long[] {2}), seed + 2, (m, x) -> {
            Toy a = (Toy) m.namedChildren().get("u1");
            Toy b = (Toy) m.namedChildren().get("u2");
            return b.forward(a.forward(x)).mul(m.p("s")).pow(2).mean();
        });
        root.child("u1", u1);
        root.child("u2", u2);
        return root;
    }

    static Sharder nestedSharder(FullyShardOptions o) {
        return (t, g) -> {
            FullyShard.fullyShard(t.namedChildren().get("u1"), o.processGroup(g));
            FullyShard.fullyShard(t.namedChildren().get("u2"), o.processGroup(g));
            return FullyShard.fullyShard(t, o.processGroup(g));
        };
    }

    @Test
    void nestedUnits3Ranks() throws Exception {
        run(3, () -> nested(1), nestedSharder(FullyShardOptions.defaults()), new long[] {5, 4}, 3);
    }

    @Test
    void nestedUnitsNoReshard() throws Exception {
        run(2, () -> nested(1), nestedSharder(FullyShardOptions.defaults().reshardAfterForward(false)), new long[] {5, 4}, 3);
    }
}

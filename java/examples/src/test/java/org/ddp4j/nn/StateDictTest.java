package org.ddp4j.nn;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.ddp4j.nn.parallel.DistributedDataParallel;
import org.ddp4j.distributed.ProcessGroupGloo;
import org.ddp4j.distributed.store.HashStore;
import org.ddp4j.examples.ConvNet;
import org.ddp4j.tensor.DType;
import org.ddp4j.tensor.Generator;
import org.ddp4j.tensor.Tensor;
import org.ddp4j.tensor.Tensors;
import org.junit.jupiter.api.Test;

/** stateDict names, strict and non-strict loadStateDict, and DistributedDataParallel's module. prefix. */
class StateDictTest {
    /** PyTorch's {@code list(ConvNet().state_dict())} for the demo's network. */
    static final List<String> CONVNET_KEYS = List.of(
            "layer1.0.weight", "layer1.0.bias", "layer1.1.weight", "layer1.1.bias", "layer1.1.running_mean",
            "layer1.1.running_var", "layer1.1.num_batches_tracked",
            "layer2.0.weight", "layer2.0.bias", "layer2.1.weight", "layer2.1.bias", "layer2.1.running_mean",
            "layer2.1.running_var", "layer2.1.num_batches_tracked", "fc.weight", "fc.bias");

    @Test
    void convNetStateDictHasPyTorchsNamesAndOrder() {
        try (ConvNet net = new ConvNet(10, new Generator(0))) {
            assertEquals(CONVNET_KEYS, List.copyOf(net.stateDict().keySet()));
            assertEquals(DType.INT64, net.stateDict().get("layer1.1.num_batches_tracked").dtype());
            assertArrayEquals(new long[] {10, 1568}, net.stateDict().get("fc.weight").shape());
        }
    }

    /** A copy of every entry of net's state dict, with each float offset by delta (so a load is visible). */
    private static Map<String, Tensor> shifted(Module net, String prefix, float delta) {
        Map<String, Tensor> out = new LinkedHashMap<>();
        net.stateDict().forEach((name, t) -> {
            Tensor c = t.copy();
            if (t.dtype() == DType.FLOAT32) {
                c.addInPlace(Tensor.full(1, DType.FLOAT32, t.device(), t.shape()), delta);
            } else {
                c.fill(5);
            }
            out.put(prefix + name, c);
        });
        return out;
    }

    @Test
    void strictLoadCopiesEveryValueAndListsEveryProblemWithoutCopyingAnything() {
        try (ConvNet source = new ConvNet(10, new Generator(1)); ConvNet net = new ConvNet(10, new Generator(0));
                var scope = Tensors.scope()) {
            Map<String, Tensor> state = shifted(source, "", 0.5f);
            net.loadStateDict(state);
            state.forEach((name, t) -> {
                if (t.dtype() == DType.FLOAT32) {
                    assertArrayEquals(t.toFloatArray(), net.stateDict().get(name).toFloatArray(), name);
                } else {
                    assertArrayEquals(t.toLongArray(), net.stateDict().get(name).toLongArray(), name);
                }
            });

            float[] fcBefore = net.stateDict().get("fc.bias").toFloatArray();
            Map<String, Tensor> bad = shifted(source, "", 1f);
            bad.remove("layer2.1.running_var");
            bad.remove("fc.weight");
            bad.put("fc.extra", Tensor.scalar(1f));
            bad.put("layer1.0.bias", Tensor.zeros(3));
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> net.loadStateDict(bad));
            assertEquals("Error(s) in loading state_dict for ConvNet:\n"
                    + "\tMissing key(s) in state_dict: layer2.1.running_var, fc.weight\n"
                    + "\tUnexpected key(s) in state_dict: fc.extra\n"
                    + "\tsize mismatch for layer1.0.bias: copying float32[3] on cpu from the state dict, the module has"
                    + " float32[16] on cpu\n"
                    + "(was the state dict saved from another model? loadStateDict(state, false) loads the names that match)",
                    e.getMessage());
            assertArrayEquals(fcBefore, net.stateDict().get("fc.bias").toFloatArray(), "a failed load must change nothing");
        }
    }

    @Test
    void nonStrictLoadReturnsTheIncompatibleKeysAndLoadsTheRest() {
        try (ConvNet net = new ConvNet(10, new Generator(0)); var scope = Tensors.scope()) {
            float[] convBefore = net.stateDict().get("layer1.0.weight").toFloatArray();
            Map<String, Tensor> partial = new LinkedHashMap<>();
            partial.put("fc.bias", Tensor.of(new float[] {1, 2, 3, 4, 5, 6, 7, 8, 9, 10}, 10));
            partial.put("head.weight", Tensor.zeros(2));
            IncompatibleKeys keys = net.loadStateDict(partial, false);
            assertEquals(List.of("head.weight"), keys.unexpectedKeys());
            assertEquals(CONVNET_KEYS.stream().filter(k -> !k.equals("fc.bias")).toList(), keys.missingKeys());
            assertArrayEquals(new float[] {1, 2, 3, 4, 5, 6, 7, 8, 9, 10}, net.stateDict().get("fc.bias").toFloatArray());
            assertArrayEquals(convBefore, net.stateDict().get("layer1.0.weight").toFloatArray());
            assertTrue(net.loadStateDict(shifted(net, "", 0f), false).isEmpty());

            // a size mismatch fails even without strict, as in PyTorch
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                    () -> net.loadStateDict(Map.of("fc.bias", Tensor.zeros(11)), false));
            assertEquals("Error(s) in loading state_dict for ConvNet:\n\tsize mismatch for fc.bias: copying float32[11] on"
                    + " cpu from the state dict, the module has float32[10] on cpu", e.getMessage());
            e = assertThrows(IllegalArgumentException.class,
                    () -> net.loadStateDict(Map.of("layer1.1.num_batches_tracked", Tensor.scalar(1f)), false));
            assertTrue(e.getMessage().contains("dtype mismatch for layer1.1.num_batches_tracked: copying float32[] on cpu"
                    + " from the state dict, the module has int64[] on cpu") && e.getMessage().contains("convert the tensor"
                    + " to int64 first"), e.getMessage());
        }
    }

    /** As PyTorch's copy_: a float16 or bfloat16 state dict loads strictly into a float32 model, converted. */
    @Test
    void halfPrecisionValuesLoadConvertedToTheModulesDtype() {
        try (var scope = Tensors.scope()) {
            ConvNet source = new ConvNet(10, new Generator(1));
            for (DType half : List.of(DType.FLOAT16, DType.BFLOAT16)) {
                Map<String, Tensor> state = new LinkedHashMap<>();
                source.stateDict().forEach((k, t) -> state.put(k, t.dtype() == DType.FLOAT32 ? t.to(half) : t));
                ConvNet net = new ConvNet(10, new Generator(2));
                net.loadStateDict(state);
                Tensor w = net.stateDict().get("layer1.0.weight");
                assertEquals(DType.FLOAT32, w.dtype());
                assertArrayEquals(state.get("layer1.0.weight").to(DType.FLOAT32).toFloatArray(), w.toFloatArray(), half.name());
                float[] exact = source.stateDict().get("layer1.0.weight").toFloatArray(), got = w.toFloatArray();
                for (int i = 0; i < exact.length; i++) {
                    assertEquals(exact[i], got[i], Math.abs(exact[i]) / 128 + 1e-7, half + " element " + i);
                }
                net.close();
            }
            source.close();
        }
    }

    @Test
    void consumePrefixStripsItInPlaceKeepingOrderAndOtherKeys() {
        try (var scope = Tensors.scope()) {
            Tensor a = Tensor.scalar(1f);
            Tensor b = Tensor.scalar(2f);
            Tensor c = Tensor.scalar(3f);
            Map<String, Tensor> state = new LinkedHashMap<>();
            state.put("module.fc.weight", a);
            state.put("other.bias", b);
            state.put("module.fc.bias", c);
            StateDicts.consumePrefixInStateDictIfPresent(state, "module.");
            assertEquals(List.of("fc.weight", "other.bias", "fc.bias"), List.copyOf(state.keySet()));
            assertEquals(a, state.get("fc.weight"));
            StateDicts.consumePrefixInStateDictIfPresent(state, "module."); // nothing left to strip
            assertEquals(List.of("fc.weight", "other.bias", "fc.bias"), List.copyOf(state.keySet()));

            Map<String, Tensor> clash = new LinkedHashMap<>(Map.of("module.x", a, "x", b));
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                    () -> StateDicts.consumePrefixInStateDictIfPresent(clash, "module."));
            assertTrue(e.getMessage().contains("holds both 'x' and 'module.x'"), e.getMessage());
        }
    }

    @Test
    void ddpPrefixIsMatchedBothWays() {
        try (var group = new ProcessGroupGloo(new HashStore(), 0, 1, Duration.ofSeconds(30));
                var ddp = new DistributedDataParallel(new ConvNet(10, new Generator(0)), group,
                        DistributedDataParallel.DEFAULT_BUCKET_CAP_BYTES);
                var bare = new ConvNet(10, new Generator(1));
                var scope = Tensors.scope()) {
            assertEquals(CONVNET_KEYS.stream().map(k -> "module." + k).toList(), List.copyOf(ddp.stateDict().keySet()));

            // a DDP (prefixed) state dict into the bare module
            Map<String, Tensor> prefixed = shifted(ddp, "", 0.25f);
            assertTrue(bare.loadStateDict(prefixed, true).isEmpty());
            assertArrayEquals(prefixed.get("module.fc.bias").toFloatArray(), bare.stateDict().get("fc.bias").toFloatArray());

            // a bare state dict into the DDP model
            Map<String, Tensor> plain = shifted(bare, "", 1f);
            ddp.loadStateDict(plain);
            assertArrayEquals(plain.get("fc.bias").toFloatArray(), ddp.stateDict().get("module.fc.bias").toFloatArray());
            assertArrayEquals(new long[] {5}, ddp.stateDict().get("module.layer2.1.num_batches_tracked").toLongArray());

            // mixed keys are not guessed at
            Map<String, Tensor> mixed = shifted(bare, "", 0f);
            mixed.put("module.fc.bias", mixed.remove("fc.bias"));
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> bare.loadStateDict(mixed));
            assertTrue(e.getMessage().contains("Missing key(s) in state_dict: fc.bias"), e.getMessage());
            assertTrue(e.getMessage().contains("Unexpected key(s) in state_dict: module.fc.bias"), e.getMessage());
        }
    }
}

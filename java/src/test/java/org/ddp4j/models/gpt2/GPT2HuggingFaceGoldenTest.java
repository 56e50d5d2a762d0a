package org.ddp4j.models.gpt2;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.Map;
import org.ddp4j.serialization.SafeTensors;
import org.ddp4j.tensor.Tensor;
import org.ddp4j.tensor.Tensors;
import org.ddp4j.testing.RepoFiles;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * ddp4j's GPT-2 against Hugging Face's GPT2LMHeadModel (transformers 5.18 on torch 2.13,
 * scripts/golden/gpt2_hf_golden.py): a 2-layer model saved with save_pretrained loads strictly and
 * gives Hugging Face's logits (1e-5), loss and every parameter's gradient (1e-4 of the gradient's
 * largest value), with lm_head tied to transformer.wte.
 */
class GPT2HuggingFaceGoldenTest {
    private static Path dir;
    private static Map<String, Tensor> golden;

    @BeforeAll
    static void load() {
        dir = RepoFiles.path("java/src/test/resources/golden/gpt2_tiny");
        golden = SafeTensors.loadFile(RepoFiles.path("java/src/test/resources/golden/gpt2_tiny_golden.safetensors"));
    }

    @AfterAll
    static void free() {
        golden.values().forEach(Tensor::close);
    }

    @Test
    void aSavePretrainedFolderLoadsAndGivesHuggingFacesLogitsLossAndGradients() {
        try (GPT2LMHeadModel model = GPT2LMHeadModel.fromPretrained(dir); var scope = Tensors.scope()) {
            assertEquals(2, model.config().nLayer());
            assertSame(model.transformer().wte().weight(), model.lmHead().weight(), "lm_head is tied to wte");
            assertEquals(126_720, model.parameters().stream().mapToLong(Tensor::numel).sum(), "Hugging Face's count");
            Tensor logits = model.forward(golden.get("input_ids"));
            assertClose(golden.get("logits"), logits, 1e-5, "logits");
            Tensor loss = model.loss(golden.get("input_ids"), golden.get("targets"));
            assertClose(golden.get("loss"), loss.view(1), 1e-5, "loss");
            loss.backward();
            int checked = 0;
            for (Map.Entry<String, Tensor> p : model.namedParameters().entrySet()) {
                Tensor expected = golden.get("grad." + p.getKey());
                assertTrue(expected != null, "no golden gradient for " + p.getKey());
                assertClose(expected, p.getValue().grad(), 1e-4, "gradient of " + p.getKey());
                checked++;
            }
            assertEquals(golden.keySet().stream().filter(k -> k.startsWith("grad.")).count(), checked);
            model.zeroGrad(true);
        }
    }

    @Test
    void aHubFileWithoutThePrefixAndWithMaskBuffersLoadsToo(@TempDir Path tmp) throws Exception {
        try (var scope = Tensors.scope()) {
            Map<String, Tensor> hub = new LinkedHashMap<>();
            SafeTensors.loadFile(dir.resolve("model.safetensors")).forEach((k, v) -> hub.put(k.replace("transformer.", ""), v));
            hub.put("h.0.attn.bias", Tensor.ones(1, 1, 32, 32)); // older files carry the causal mask
            hub.put("h.1.attn.masked_bias", Tensor.scalar(-1e4f));
            SafeTensors.saveFile(hub, tmp.resolve("model.safetensors"));
            Files.copy(dir.resolve("config.json"), tmp.resolve("config.json"));
            try (GPT2LMHeadModel model = GPT2LMHeadModel.fromPretrained(tmp.resolve("model.safetensors"));
                    GPT2LMHeadModel reference = GPT2LMHeadModel.fromPretrained(dir)) {
                assertArrayEquals(reference.forward(golden.get("input_ids")).toFloatArray(),
                        model.forward(golden.get("input_ids")).toFloatArray());
            }
        }
    }

    @Test
    void aMissingOrUnexpectedKeyIsRefusedByName(@TempDir Path tmp) throws Exception {
        Files.copy(dir.resolve("config.json"), tmp.resolve("config.json"));
        try (var scope = Tensors.scope()) {
            Map<String, Tensor> file = new LinkedHashMap<>(SafeTensors.loadFile(dir.resolve("model.safetensors")));
            file.remove("transformer.h.1.mlp.c_fc.bias");
            file.put("transformer.h.0.attn.q_proj.weight", Tensor.zeros(4));
            SafeTensors.saveFile(file, tmp.resolve("model.safetensors"));
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> GPT2LMHeadModel.fromPretrained(tmp));
            assertTrue(e.getMessage().contains("transformer.h.1.mlp.c_fc.bias"), e.getMessage());
            assertTrue(e.getMessage().contains("transformer.h.0.attn.q_proj.weight"), e.getMessage());
        }
    }

    @Test
    void saveWritesWhatSavePretrainedWritesAndLoadsBackBitForBit(@TempDir Path tmp) {
        try (GPT2LMHeadModel model = GPT2LMHeadModel.fromPretrained(dir); var scope = Tensors.scope()) {
            GPT2Pretrained.save(model, tmp);
            assertEquals(SafeTensors.loadFile(dir.resolve("model.safetensors")).keySet(),
                    SafeTensors.loadFile(tmp.resolve("model.safetensors")).keySet(), "the tied lm_head.weight is left out");
            try (GPT2LMHeadModel again = GPT2LMHeadModel.fromPretrained(tmp)) {
                assertEquals(model.config(), again.config());
                assertArrayEquals(model.forward(golden.get("input_ids")).toFloatArray(),
                        again.forward(golden.get("input_ids")).toFloatArray());
            }
        }
    }

    @Test
    void aConfigurationThisModelDoesNotImplementIsRefused(@TempDir Path tmp) throws Exception {
        Files.writeString(tmp.resolve("config.json"), "{\"model_type\": \"gpt2\", \"activation_function\": \"relu\"}");
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> GPT2Pretrained.readConfig(
                tmp.resolve("config.json")));
        assertTrue(e.getMessage().contains("activation_function relu"), e.getMessage());
    }

    /** |actual − expected| ≤ tol × max|expected| everywhere: relative to the tensor's scale. */
    private static void assertClose(Tensor expected, Tensor actual, double tol, String what) {
        assertArrayEquals(expected.shape(), actual.shape(), what + ": shape");
        float[] e = expected.toFloatArray();
        float[] a = actual.toFloatArray();
        double scale = 0;
        for (float v : e) {
            scale = Math.max(scale, Math.abs(v));
        }
        for (int i = 0; i < e.length; i++) {
            if (!(Math.abs(a[i] - e[i]) <= tol * scale)) {
                throw new AssertionError(what + ": element " + i + " is " + a[i] + ", Hugging Face's " + e[i]
                        + " (tolerance " + tol + " x " + scale + ")");
            }
        }
    }
}

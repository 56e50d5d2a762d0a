package org.ddp4j.models.gpt2;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeSet;
import org.ddp4j.internal.AtomicFiles;
import org.ddp4j.serialization.SafeTensors;
import org.ddp4j.tensor.Generator;
import org.ddp4j.tensor.Tensor;
import org.ddp4j.tensor.Tensors;

/**
 * GPT-2 checkpoints in Hugging Face's layout: a folder with {@code config.json} and
 * {@code model.safetensors}, as {@code save_pretrained} writes and the hub serves.
 *
 * <p>Loading is strict as Hugging Face's: every parameter must be in the file and every tensor in
 * the file must be a parameter, with three allowances Hugging Face makes too: keys with or
 * without the {@code transformer.} prefix (the hub's files have none), no {@code lm_head.weight}
 * (tied to {@code transformer.wte.weight}, which {@code save_pretrained} omits), and the causal-mask
 * buffers {@code h.N.attn.bias} / {@code h.N.attn.masked_bias} of older files, which hold no
 * learned values. Anything else missing or unexpected is refused by name.
 */
public final class GPT2Pretrained {
    /** The weights' file name in a checkpoint folder. */
    public static final String WEIGHTS = "model.safetensors";
    /** The configuration's file name in a checkpoint folder. */
    public static final String CONFIG = "config.json";

    private static final ObjectMapper JSON = new ObjectMapper();

    private GPT2Pretrained() {}

    /**
     * Builds a model from a checkpoint folder (or its {@code model.safetensors}, with
     * {@code config.json} beside it). Mirrors {@code GPT2LMHeadModel.from_pretrained(path)}.
     *
     * @throws IllegalArgumentException naming each missing and unexpected key, a shape mismatch, or a
     *     configuration ddp4j's GPT-2 does not implement (another activation, untied head, ...)
     * @throws UncheckedIOException naming the file when a file is missing or unreadable
     */
    public static GPT2LMHeadModel load(Path path) {
        Path dir = Files.isDirectory(path) ? path : path.toAbsolutePath().getParent();
        Path weights = Files.isDirectory(path) ? path.resolve(WEIGHTS) : path;
        GPT2Config config = readConfig(dir.resolve(CONFIG));
        GPT2LMHeadModel model = new GPT2LMHeadModel(config, new Generator(0));
        try (var scope = Tensors.scope()) { // frees the file's tensors once copied
            model.loadStateDict(hubToModelKeys(SafeTensors.loadFile(weights), weights));
        }
        return model;
    }

    /**
     * The file's tensors under the model's names: {@code transformer.} added where the file has
     * none, {@code lm_head.weight} aliased to the token embedding when absent, mask buffers dropped.
     */
    static Map<String, Tensor> hubToModelKeys(Map<String, Tensor> file, Path source) {
        Map<String, Tensor> out = new LinkedHashMap<>();
        List<String> ignored = new ArrayList<>();
        for (Map.Entry<String, Tensor> e : file.entrySet()) {
            String key = e.getKey();
            String bare = key.startsWith("transformer.") ? key.substring("transformer.".length()) : key;
            if (bare.matches("h\\.\\d+\\.attn\\.(masked_)?bias")) {
                ignored.add(key);
                continue;
            }
            out.put(key.equals("lm_head.weight") ? key : "transformer." + bare, e.getValue());
        }
        Tensor wte = out.get("transformer.wte.weight");
        if (wte != null) {
            out.putIfAbsent("lm_head.weight", wte);
        }
        if (out.isEmpty()) {
            throw new IllegalArgumentException(source + " holds no GPT-2 parameters (its keys: "
                    + new TreeSet<>(file.keySet()) + ")");
        }
        return out;
    }

    /**
     * Reads Hugging Face's {@code config.json} for GPT-2, with its defaults for absent fields.
     *
     * @throws IllegalArgumentException when the configuration asks for what this model does not
     *     implement: another model_type, an activation other than gelu_new, an untied head,
     *     attention without 1/√d scaling or scaled by layer index
     */
    public static GPT2Config readConfig(Path file) {
        JsonNode c;
        try {
            c = JSON.readTree(file.toFile());
        } catch (IOException e) {
            throw new UncheckedIOException("cannot read the GPT-2 configuration " + file + ": " + e.getMessage()
                    + (Files.exists(file) ? "" : " (a checkpoint folder holds config.json beside model.safetensors,"
                            + " as save_pretrained writes them)"), e);
        }
        String type = c.path("model_type").asText("gpt2");
        String act = c.path("activation_function").asText("gelu_new");
        List<String> unsupported = new ArrayList<>();
        if (!type.equals("gpt2")) {
            unsupported.add("model_type " + type);
        }
        if (!act.equals("gelu_new") && !act.equals("gelu_pytorch_tanh")) {
            unsupported.add("activation_function " + act + " (only gelu_new, GELU's tanh form)");
        }
        if (!c.path("tie_word_embeddings").asBoolean(true)) {
            unsupported.add("tie_word_embeddings false");
        }
        if (!c.path("scale_attn_weights").asBoolean(true) || c.path("scale_attn_by_inverse_layer_idx").asBoolean(false)) {
            unsupported.add("attention scaling other than 1/sqrt(head_dim)");
        }
        if (!unsupported.isEmpty()) {
            throw new IllegalArgumentException(file + " configures what ddp4j's GPT-2 does not implement: " + unsupported);
        }
        int nEmbd = c.path("n_embd").asInt(768);
        JsonNode inner = c.path("n_inner");
        return new GPT2Config(c.path("vocab_size").asInt(50257), c.path("n_positions").asInt(1024), nEmbd,
                c.path("n_layer").asInt(12), c.path("n_head").asInt(12), inner.isNumber() ? inner.asInt() : 4 * nEmbd,
                c.path("resid_pdrop").asDouble(0.1), c.path("embd_pdrop").asDouble(0.1), c.path("attn_pdrop").asDouble(0.1),
                c.path("layer_norm_epsilon").asDouble(1e-5), c.path("initializer_range").asDouble(0.02));
    }

    /**
     * Writes model into dir as {@code save_pretrained} does: {@code config.json} and
     * {@code model.safetensors} without the tied {@code lm_head.weight}, each file atomically.
     * Hugging Face's {@code GPT2LMHeadModel.from_pretrained(dir)} loads it.
     *
     * @throws UncheckedIOException naming the file when dir is missing or a write fails
     */
    public static void save(GPT2LMHeadModel model, Path dir) {
        Map<String, Tensor> state = new LinkedHashMap<>(model.stateDict());
        state.remove("lm_head.weight");
        SafeTensors.saveFile(state, dir.resolve(WEIGHTS), Map.of("format", "pt"));
        GPT2Config cfg = model.config();
        ObjectNode c = JSON.createObjectNode();
        c.putArray("architectures").add("GPT2LMHeadModel");
        c.put("model_type", "gpt2");
        c.put("activation_function", "gelu_new");
        c.put("vocab_size", cfg.vocabSize());
        c.put("n_positions", cfg.nPositions());
        c.put("n_embd", cfg.nEmbd());
        c.put("n_layer", cfg.nLayer());
        c.put("n_head", cfg.nHead());
        c.put("n_inner", cfg.nInner());
        c.put("resid_pdrop", cfg.residPdrop());
        c.put("embd_pdrop", cfg.embdPdrop());
        c.put("attn_pdrop", cfg.attnPdrop());
        c.put("layer_norm_epsilon", cfg.layerNormEpsilon());
        c.put("initializer_range", cfg.initializerRange());
        c.put("tie_word_embeddings", true);
        byte[] json;
        try {
            json = JSON.writerWithDefaultPrettyPrinter().writeValueAsBytes(c);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        AtomicFiles.write(dir.resolve(CONFIG), channel -> channel.write(ByteBuffer.wrap(json)));
    }
}

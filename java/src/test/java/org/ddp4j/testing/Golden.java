package org.ddp4j.testing;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import org.ddp4j.tensor.Tensor;

/**
 * Reads a golden file made by scripts/golden/*.py with PyTorch: a JSON object whose entries are
 * {@code {"shape": [..], "data": [..]}} (float32 values, or int64 when "dtype" is "int64"), plus
 * plain numbers for hyper-parameters. Files live in src/test/resources/golden/.
 */
public final class Golden {
    private final JsonNode root;
    private final String name;

    private Golden(String name, JsonNode root) {
        this.name = name;
        this.root = root;
    }

    /** Loads golden/{name}.json from the test class path. */
    public static Golden load(String name) {
        String path = "/golden/" + name + ".json";
        try (InputStream in = Golden.class.getResourceAsStream(path)) {
            if (in == null) {
                throw new IllegalStateException(path + " is missing: regenerate it as scripts/golden/README.md says (needs python3-torch)");
            }
            return new Golden(name, new ObjectMapper().readTree(in));
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    private JsonNode entry(String key) {
        JsonNode node = root.get(key);
        if (node == null) {
            throw new IllegalArgumentException("golden file " + name + " has no entry '" + key + "'");
        }
        return node;
    }

    public long[] shape(String key) {
        JsonNode shape = entry(key).get("shape");
        long[] out = new long[shape.size()];
        for (int i = 0; i < out.length; i++) {
            out[i] = shape.get(i).asLong();
        }
        return out;
    }

    public float[] floats(String key) {
        JsonNode data = entry(key).get("data");
        float[] out = new float[data.size()];
        for (int i = 0; i < out.length; i++) {
            out[i] = (float) data.get(i).asDouble();
        }
        return out;
    }

    public long[] longs(String key) {
        JsonNode data = entry(key).get("data");
        long[] out = new long[data.size()];
        for (int i = 0; i < out.length; i++) {
            out[i] = data.get(i).asLong();
        }
        return out;
    }

    /** A string stored directly (e.g. a module's printed form). */
    public String text(String key) {
        return entry(key).asText();
    }

    /** A plain JSON list of numbers (e.g. a learning-rate sequence), as doubles. */
    public double[] doubles(String key) {
        JsonNode list = entry(key);
        double[] out = new double[list.size()];
        for (int i = 0; i < out.length; i++) {
            out[i] = list.get(i).asDouble();
        }
        return out;
    }

    /** Whether the file has an entry {@code key}. */
    public boolean has(String key) {
        return root.has(key);
    }

    /** A plain JSON value (object, list, number, string, boolean or null) as Java Maps, Lists and boxed values. */
    public Object json(String key) {
        return new ObjectMapper().convertValue(entry(key), Object.class);
    }

    /** A number stored directly (e.g. a learning rate). */
    public double number(String key) {
        return entry(key).asDouble();
    }

    /** The entry as a new CPU tensor (float32, or int64 / bool when the entry says so). */
    public Tensor tensor(String key) {
        JsonNode dtype = entry(key).get("dtype");
        if (dtype != null && dtype.asText().equals("int64")) {
            return Tensor.ofLongs(longs(key), shape(key));
        }
        if (dtype != null && dtype.asText().equals("bool")) {
            long[] values = longs(key);
            boolean[] bits = new boolean[values.length];
            for (int i = 0; i < bits.length; i++) {
                bits[i] = values[i] != 0;
            }
            return org.ddp4j.tensor.Tensors.ofBooleans(bits, shape(key));
        }
        return Tensor.of(floats(key), shape(key));
    }
}

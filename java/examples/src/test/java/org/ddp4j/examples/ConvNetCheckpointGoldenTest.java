package org.ddp4j.examples;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;

import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.InputStream;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.ddp4j.serialization.SafeTensors;
import org.ddp4j.tensor.DType;
import org.ddp4j.tensor.Generator;
import org.ddp4j.tensor.Tensor;
import org.ddp4j.tensor.Tensors;
import org.ddp4j.testing.Assertions2;
import org.ddp4j.testing.Golden;
import org.junit.jupiter.api.Test;

/**
 * A checkpoint written by PyTorch (scripts/golden/safetensors_golden.py: a trained ConvNet's
 * state_dict in the safetensors format) loads strictly into ddp4j's ConvNet with PyTorch's exact
 * values, and the model then computes PyTorch's logits.
 */
class ConvNetCheckpointGoldenTest {

    @Test
    void pytorchsSafetensorsCheckpointLoadsIntoTheConvNet() throws Exception {
        Path file = Path.of(getClass().getResource("/golden/convnet_state_dict.safetensors").toURI());
        Golden g = Golden.load("convnet_state_dict");
        List<String> pytorchKeys = new ArrayList<>();
        try (InputStream in = getClass().getResourceAsStream("/golden/convnet_state_dict.json")) {
            new ObjectMapper().readTree(in).get("keys").forEach(k -> pytorchKeys.add(k.asText()));
        }
        assertEquals(Map.of("format", "pt"), SafeTensors.loadMetadata(file));
        try (ConvNet net = new ConvNet(10, new Generator(0)); var scope = Tensors.scope()) {
            assertEquals(pytorchKeys, List.copyOf(net.stateDict().keySet()), "ddp4j's names and order are PyTorch's");
            net.loadStateDict(SafeTensors.loadFile(file));
            net.stateDict().forEach((name, t) -> {
                assertArrayEquals(g.shape("head." + name), t.shape(), name);
                if (t.dtype() == DType.INT64) {
                    assertArrayEquals(g.longs("head." + name), t.toLongArray(), name);
                } else {
                    float[] head = g.floats("head." + name);
                    float[] all = t.toFloatArray();
                    assertArrayEquals(head, java.util.Arrays.copyOf(all, head.length), name + ": PyTorch's exact values");
                }
            });
            assertArrayEquals(new long[] {2}, net.stateDict().get("layer2.1.num_batches_tracked").toLongArray());
            net.eval();
            try (var noGrad = Tensors.noGrad()) {
                Tensor logits = net.forward(g.tensor("images"));
                Assertions2.assertClose(g.tensor("logits"), logits, 1e-4, 1e-5, "logits of PyTorch's checkpoint");
            }
        }
    }
}

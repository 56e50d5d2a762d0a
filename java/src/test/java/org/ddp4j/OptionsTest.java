package org.ddp4j;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.util.ArrayList;
import java.util.List;
import org.ddp4j.nn.parallel.DistributedDataParallel;
import org.ddp4j.nn.parallel.DistributedDataParallelOptions;
import org.ddp4j.data.DistributedSampler;
import org.ddp4j.nn.Conv2d;
import org.ddp4j.optim.SGD;
import org.ddp4j.tensor.Generator;
import org.ddp4j.tensor.Tensor;
import org.ddp4j.tensor.Tensors;
import org.junit.jupiter.api.Test;

/**
 * The option records: PyTorch's defaults, and the same object as the positional
 * constructors build.
 */
class OptionsTest {
    @Test
    void sgdOptionsDefaultsAndEquivalence() {
        assertEquals(new SGD.Options(1e-3, 0, 0, 0, false), SGD.Options.defaults());
        try (var scope = Tensors.scope()) {
            List<Tensor> params = List.of(Tensor.zeros(2).requiresGrad(true));
            try (SGD built = new SGD(params, SGD.Options.defaults().lr(0.05).momentum(0.9).weightDecay(1e-4).nesterov(true));
                    SGD positional = new SGD(params, 0.05, 0.9, 0, 1e-4, true)) {
                assertEquals(positional.toString(), built.toString());
            }
            assertEquals("Nesterov momentum requires a momentum and zero dampening", assertThrows(
                    IllegalArgumentException.class, () -> new SGD(params, SGD.Options.defaults().nesterov(true))).getMessage());
        }
    }

    @Test
    void distributedSamplerOptionsGiveThePositionalSamplersIndices() {
        var options = DistributedSampler.Options.defaults();
        assertEquals(new DistributedSampler.Options(null, null, true, 0L, false), options);
        DistributedSampler built = new DistributedSampler(103, options.numReplicas(4).rank(1).seed(9).dropLast(true));
        DistributedSampler positional = new DistributedSampler(103, 4, 1, true, 9, true);
        built.setEpoch(2);
        positional.setEpoch(2);
        assertEquals(indices(positional), indices(built));
        // Without numReplicas and rank the default process group supplies them, as in PyTorch; there is none here.
        assertThrows(IllegalStateException.class, () -> new DistributedSampler(10, DistributedSampler.Options.defaults()));
    }

    private static List<Integer> indices(DistributedSampler sampler) {
        List<Integer> out = new ArrayList<>();
        sampler.forEach(out::add);
        return out;
    }

    @Test
    void conv2dOptionsBuildTheSameLayer() {
        try (Conv2d built = new Conv2d(3, 4, 5, Conv2d.Options.defaults().stride(2).padding(1).generator(new Generator(5)));
                Conv2d positional = new Conv2d(3, 4, 5, 2, 1, true, new Generator(5))) {
            assertEquals(positional.toString(), built.toString());
            assertArrayEquals(positional.weight().toFloatArray(), built.weight().toFloatArray());
            assertArrayEquals(positional.bias().toFloatArray(), built.bias().toFloatArray());
        }
        assertEquals("Conv2d(1, 2, kernel_size=(3, 3), stride=(1, 1), bias=False)",
                new Conv2d(1, 2, 3, Conv2d.Options.defaults().bias(false)).toString());
    }

    @Test
    void distributedDataParallelOptionsDefaultsAndBucketCap() {
        var options = DistributedDataParallelOptions.defaults();
        assertEquals(DistributedDataParallel.DEFAULT_BUCKET_CAP_BYTES, options.bucketCapBytes());
        assertEquals(3L << 19, options.bucketCapMb(1.5).bucketCapBytes());
        assertEquals("bucket_cap_mb must be positive, got 0.0",
                assertThrows(IllegalArgumentException.class, () -> options.bucketCapMb(0).bucketCapBytes()).getMessage());
        assertThrows(IllegalStateException.class, options::resolvedProcessGroup); // no default group here
    }
}

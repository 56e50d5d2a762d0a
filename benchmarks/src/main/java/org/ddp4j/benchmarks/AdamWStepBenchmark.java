package org.ddp4j.benchmarks;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.ddp4j.optim.AdamW;
import org.ddp4j.tensor.Tensor;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.annotations.Warmup;

/**
 * One AdamW step over GPT-2 124M's parameters (the shapes of its 148 tensors, in nanoGPT's two
 * groups: decay on matrices and embeddings), in ms. Each step reads the parameters, gradients and
 * both moments and writes all but the gradients: 28 bytes a parameter, 3.46 GB a step, so
 * 3.46 / (ms / 1000) is the memory rate it reaches.
 *
 * <p>Run: {@code OMP_NUM_THREADS=1 java -jar benchmarks/target/benchmarks.jar AdamWStep}.
 */
@State(Scope.Thread)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.MILLISECONDS)
@Warmup(iterations = 2, time = 2)
@Measurement(iterations = 5, time = 2)
@Fork(1)
public class AdamWStepBenchmark {
    private final List<Tensor> tensors = new ArrayList<>();
    private AdamW optimizer;

    private Tensor parameter(long... shape) {
        Tensor p = Tensor.zeros(shape).keep();
        p.requiresGrad(true);
        p.setGrad(Tensor.ones(shape).keep());
        tensors.add(p);
        return p;
    }

    @Setup(Level.Trial)
    public void setUp() {
        List<Tensor> decay = new ArrayList<>();
        List<Tensor> noDecay = new ArrayList<>();
        decay.add(parameter(50257, 768)); // wte, tied with the head
        decay.add(parameter(1024, 768)); // wpe
        for (int layer = 0; layer < 12; layer++) {
            noDecay.add(parameter(768)); // ln_1
            noDecay.add(parameter(768));
            decay.add(parameter(768, 2304)); // c_attn
            noDecay.add(parameter(2304));
            decay.add(parameter(768, 768)); // attn.c_proj
            noDecay.add(parameter(768));
            noDecay.add(parameter(768)); // ln_2
            noDecay.add(parameter(768));
            decay.add(parameter(768, 3072)); // c_fc
            noDecay.add(parameter(3072));
            decay.add(parameter(3072, 768)); // mlp.c_proj
            noDecay.add(parameter(768));
        }
        noDecay.add(parameter(768)); // ln_f
        noDecay.add(parameter(768));
        optimizer = new AdamW(List.of(Map.of("params", decay), Map.of("params", noDecay, "weight_decay", 0.0)),
                AdamW.Options.defaults().lr(6e-4).betas(0.9, 0.95).weightDecay(0.1));
    }

    @Benchmark
    public void step() {
        optimizer.step();
    }

    @TearDown(Level.Trial)
    public void tearDown() {
        optimizer.close();
        for (Tensor t : tensors) {
            t.grad().close();
            t.close();
        }
    }
}

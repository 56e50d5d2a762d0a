package org.ddp4j.benchmarks;

import java.time.Duration;
import java.util.Iterator;
import java.util.concurrent.TimeUnit;
import org.ddp4j.data.Batch;
import org.ddp4j.data.DataLoader;
import org.ddp4j.data.TensorDataset;
import org.ddp4j.nn.parallel.DistributedDataParallel;
import org.ddp4j.data.DistributedSampler;
import org.ddp4j.distributed.ProcessGroupGloo;
import org.ddp4j.distributed.store.HashStore;
import org.ddp4j.nn.Linear;
import org.ddp4j.nn.MSELoss;
import org.ddp4j.nn.Module;
import org.ddp4j.optim.SGD;
import org.ddp4j.tensor.Generator;
import org.ddp4j.tensor.Tensor;
import org.ddp4j.tensor.Tensors;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.annotations.Warmup;

/**
 * One training step of the linear demo in one process: loader (batch 1 of the four samples),
 * 2→2 Linear forward, MSELoss, backward, SGD step, all in a tensor scope. {@code ddp=false} runs
 * the bare module; {@code ddp=true} wraps it in DistributedDataParallel over a world-1 Gloo
 * group, which measures DDP's own bookkeeping (a world-1 all-reduce moves no data). The
 * difference to the 2-rank demo's µs/step is the cost of communication. Run:
 * {@code java -jar benchmarks/target/benchmarks.jar LinearStep}.
 */
@State(Scope.Thread)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.MICROSECONDS)
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
@Fork(1)
public class LinearStepBenchmark {
    @Param({"false", "true"})
    public boolean ddp;

    private Tensor data;
    private Tensor labels;
    private ProcessGroupGloo group;
    private Module model;
    private SGD optimizer;
    private MSELoss lossFn;
    private DataLoader loader;
    private Iterator<Batch> batches;

    @Setup
    public void setUp() {
        data = Tensor.of(new float[] {0.1f, 0.1f, 0.2f, 0.2f, 0.3f, 0.3f, 0.4f, 0.4f}, 4, 2).keep();
        labels = Tensor.of(new Generator(1000).normal(2), 1, 2).keep();
        loader = new DataLoader(new TensorDataset(data), 1, new DistributedSampler(4, 1, 0, false, 0, false), false);
        Linear linear = new Linear(2, 2, true, new Generator(0));
        if (ddp) {
            group = new ProcessGroupGloo(new HashStore(), 0, 1, Duration.ofMinutes(1), "127.0.0.1");
            model = new DistributedDataParallel(linear, group, DistributedDataParallel.DEFAULT_BUCKET_CAP_BYTES);
        } else {
            model = linear;
        }
        optimizer = new SGD(model.parameters(), 0.01);
        lossFn = new MSELoss();
        batches = loader.iterator();
    }

    @TearDown
    public void tearDown() {
        model.close();
        if (group != null) {
            group.close();
        }
        data.close();
        labels.close();
    }

    /** One step; returns the loss so that nothing is optimised away. */
    @Benchmark
    public float step() {
        if (!batches.hasNext()) {
            batches = loader.iterator();
        }
        try (Batch batch = batches.next(); var scope = Tensors.scope()) {
            optimizer.zeroGrad();
            Tensor loss = lossFn.forward(model.forward(batch.inputs()), labels);
            loss.backward();
            optimizer.step();
            return loss.item();
        }
    }
}

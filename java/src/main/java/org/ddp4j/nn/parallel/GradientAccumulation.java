package org.ddp4j.nn.parallel;

import java.util.Iterator;
import java.util.NoSuchElementException;
import java.util.Objects;
import java.util.function.ToIntFunction;
import org.ddp4j.data.Batch;
import org.ddp4j.nn.Module;
import org.ddp4j.tensor.Tensor;

/**
 * Gradient accumulation: several micro-batches per optimizer step, gradients synchronised once,
 * on the last of them. Mirrors Hugging Face accelerate's {@code with accelerator.accumulate(model):}
 * (with {@code gradient_accumulation_steps}), which PyTorch users write by hand around
 * {@code no_sync()} otherwise.
 *
 * <pre>{@code
 * var accumulation = new GradientAccumulation(ddp, 4);
 * for (var micro : accumulation.over(loader)) {
 *     try (micro; Batch b = micro.batch(); var scope = Tensors.scope()) {
 *         micro.backward(criterion.forward(ddp.forward(b.inputs()), b.labels()));
 *         if (micro.syncs()) {
 *             optimizer.step();
 *             optimizer.zeroGrad();
 *         }
 *     }
 * }
 * }</pre>
 *
 * <p>The micro-batches of one window (up to {@code steps} consecutive batches; the last window of
 * the iteration may be shorter) run under {@link DistributedDataParallel#noSync()} except the last,
 * whose backward all-reduces the accumulated gradients (one all-reduce per bucket per window).
 * {@link MicroBatch#backward} weights each loss so that the accumulated gradient is the mean over
 * the window's samples, as one batch of all of them would give: loss × n / (steps × n₁) for a
 * micro-batch of n samples (n₁: the window's first); when the window's samples add up to another
 * total (a shorter last window, a smaller last batch), the gradients accumulated so far are
 * rescaled once before the last backward. This assumes the loss is a mean over its micro-batch
 * (PyTorch's default {@code reduction='mean'}). Accelerate instead divides every loss by
 * {@code steps}, which overweights the micro-batches of a shorter last window.
 *
 * <p>Every rank must see the same number of micro-batches (as a {@link org.ddp4j.data.DistributedSampler}
 * gives), so that the ranks synchronise on the same ones. Not for use inside
 * {@link DistributedDataParallel#join()}, which refuses {@code noSync()}.
 */
public final class GradientAccumulation {
    private final Module model;
    private final DistributedDataParallel ddp;
    private final int steps;

    /**
     * @param model the model whose gradients accumulate: a {@link DistributedDataParallel} (its
     *     gradients then synchronise on each window's last micro-batch only), or any module
     * @param steps micro-batches per optimizer step, at least 1 ({@code gradient_accumulation_steps})
     * @throws IllegalArgumentException if steps is below 1
     */
    public GradientAccumulation(Module model, int steps) {
        this.model = Objects.requireNonNull(model, "model");
        if (steps < 1) {
            throw new IllegalArgumentException("GradientAccumulation: steps must be at least 1 micro-batch per optimizer"
                    + " step, got " + steps);
        }
        this.ddp = model instanceof DistributedDataParallel d ? d : null;
        this.steps = steps;
    }

    /** Micro-batches per optimizer step. */
    public int steps() {
        return steps;
    }

    /** {@link #over(Iterable, ToIntFunction)} for a {@link org.ddp4j.data.DataLoader}'s batches, sized by {@link Batch#size()}. */
    public Iterable<MicroBatch<Batch>> over(Iterable<Batch> batches) {
        return over(batches, Batch::size);
    }

    /**
     * The batches as micro-batches, in order. Looks one batch ahead (to know which one ends the
     * iteration), so one more batch is loaded than an ordinary loop holds.
     *
     * @param samples the number of samples in a batch (the loss's mean is over them), at least 1
     */
    public <T> Iterable<MicroBatch<T>> over(Iterable<T> batches, ToIntFunction<? super T> samples) {
        Objects.requireNonNull(batches, "batches");
        Objects.requireNonNull(samples, "samples");
        return () -> new Window<>(batches.iterator(), samples);
    }

    /** Walks the batches, opening each non-final micro-batch's noSync scope as it is handed out. */
    private final class Window<T> implements Iterator<MicroBatch<T>> {
        private final Iterator<T> source;
        private final ToIntFunction<? super T> samples;
        private T ahead;
        private boolean hasAhead;
        private int position; // index of the next micro-batch within its window
        private long nominalSamples; // steps × the window's first micro-batch's samples
        private long windowSamples; // samples of the window's micro-batches handed out so far
        private MicroBatch<T> current;

        Window(Iterator<T> source, ToIntFunction<? super T> samples) {
            this.source = source;
            this.samples = samples;
            advance();
        }

        private void advance() {
            hasAhead = source.hasNext();
            ahead = hasAhead ? source.next() : null;
        }

        @Override
        public boolean hasNext() {
            if (!hasAhead && current != null) {
                current.close();
            }
            return hasAhead;
        }

        @Override
        public MicroBatch<T> next() {
            if (!hasAhead) {
                throw new NoSuchElementException("GradientAccumulation: no more batches");
            }
            if (current != null) {
                current.close();
            }
            T batch = ahead;
            int n = samples.applyAsInt(batch);
            if (n < 1) {
                throw new IllegalArgumentException("GradientAccumulation: a micro-batch has " + n + " samples; every"
                        + " batch needs at least 1 (the loss is a mean over them)");
            }
            advance();
            if (position == 0) {
                nominalSamples = (long) steps * n;
                windowSamples = 0;
            }
            windowSamples += n;
            boolean last = position == steps - 1 || !hasAhead;
            double weight;
            double rescale = 1;
            if (last && windowSamples != nominalSamples) {
                rescale = (double) nominalSamples / windowSamples;
                weight = (double) n / windowSamples;
            } else {
                weight = (double) n / nominalSamples;
            }
            current = new MicroBatch<>(batch, position, last, weight, rescale);
            position = last ? 0 : position + 1;
            return current;
        }
    }

    /**
     * One micro-batch of a window. Closing it (idempotent; the next {@code next()} also does) ends
     * its {@code noSync()} scope.
     */
    public final class MicroBatch<T> implements AutoCloseable {
        private final T batch;
        private final int index;
        private final boolean syncs;
        private final double lossWeight;
        private final double gradientRescale;
        private DistributedDataParallel.NoSync noSync;
        private boolean backwardDone;
        private boolean closed;

        private MicroBatch(T batch, int index, boolean syncs, double lossWeight, double gradientRescale) {
            this.batch = batch;
            this.index = index;
            this.syncs = syncs;
            this.lossWeight = lossWeight;
            this.gradientRescale = gradientRescale;
            if (!syncs && ddp != null) {
                noSync = ddp.noSync();
            }
        }

        /** The batch as the iterable gave it (the caller closes it). */
        public T batch() {
            return batch;
        }

        /** Position in its window, from 0. */
        public int index() {
            return index;
        }

        /**
         * Whether this micro-batch ends its window: its backward synchronises the gradients, and
         * the optimizer should step (and zero the gradients) after it. accelerate's {@code sync_gradients}.
         */
        public boolean syncs() {
            return syncs;
        }

        /** The factor {@link #backward} multiplies the loss by. */
        public double lossWeight() {
            return lossWeight;
        }

        /**
         * Backward of {@code loss × lossWeight()} (a scalar float32 mean over this micro-batch):
         * accumulates into the parameters' gradients; on the window's last micro-batch first rescales
         * what the window accumulated if its samples did not add up to steps × the first's, then
         * (under DDP) synchronises the gradients.
         *
         * @throws IllegalStateException if called twice for one micro-batch, or after close()
         */
        public void backward(Tensor loss) {
            if (backwardDone) {
                throw new IllegalStateException("GradientAccumulation: backward() was already called for micro-batch "
                        + index + " of this window; call it once per micro-batch");
            }
            if (closed) {
                throw new IllegalStateException("GradientAccumulation: micro-batch " + index + " is closed (the loop"
                        + " moved on); call backward() inside its loop body");
            }
            backwardDone = true;
            if (gradientRescale != 1) {
                for (Tensor p : model.parameters()) {
                    if (p.grad() != null) {
                        p.grad().mulInPlace((float) gradientRescale);
                    }
                }
            }
            if (lossWeight == 1) {
                loss.backward();
            } else {
                loss.mul((float) lossWeight).backward();
            }
        }

        @Override
        public void close() {
            if (closed) {
                return;
            }
            closed = true;
            if (noSync != null) {
                noSync.close();
                noSync = null;
            }
        }
    }
}

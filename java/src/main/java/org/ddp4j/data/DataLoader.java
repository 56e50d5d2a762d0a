package org.ddp4j.data;

import java.time.Duration;
import java.util.ArrayDeque;
import java.util.Iterator;
import java.util.NoSuchElementException;
import java.util.Objects;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.ThreadFactory;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicInteger;
import org.ddp4j.tensor.Tensor;
import org.ddp4j.tensor.Tensors;

/**
 * Iterates a {@link Dataset} in batches: PyTorch's {@code torch.utils.data.DataLoader}. Each
 * batch's features are gathered into one Java array and copied to native memory in a single call.
 *
 * <p>With {@link Options#numWorkers(int) numWorkers} = 0 (the default) the batch is made on the
 * calling thread when {@code next()} asks for it. With workers, batch i of an epoch is made on a
 * worker thread ahead of the step ({@code numWorkers × prefetchFactor} batches in flight, as
 * PyTorch's {@code prefetch_factor}) and handed out in order: the same batches, bit for bit, as
 * without workers (a batch's content depends only on the sampler's order and its index, never on
 * which thread made it). The dataset is then read from several threads at once, so its
 * {@code copyFeatures} and {@code label} must be thread-safe (the library's datasets are; a random
 * transform must take its randomness from the example's index, as {@link org.ddp4j.vision.transforms.TransformedDataset} does).
 * Workers are threads of this JVM, not processes: a rank's JVM already runs one process per rank, and
 * the batches' native memory needs no copy between processes. They start with the first epoch
 * and live until {@link #close()} (PyTorch's {@code persistent_workers=True}); they are daemon threads.
 *
 * <p>A batch belongs to the current {@link Tensors#scope()} of the thread that takes it from the
 * iterator (or close it yourself, e.g. {@code try (batch)}).
 */
public final class DataLoader implements Iterable<Batch>, AutoCloseable {
    /** Default longest wait for one batch from a worker ({@link Options#timeout(Duration)}). */
    public static final Duration DEFAULT_TIMEOUT = Duration.ofMinutes(5);

    private static final AtomicInteger LOADERS = new AtomicInteger();

    private final Dataset dataset;
    private final int batchSize;
    private final Sampler sampler;
    private final boolean dropLast;
    private final Options options;
    private ExecutorService workers;
    private Epoch current;

    /**
     * A loader's worker settings: PyTorch's {@code num_workers}, {@code prefetch_factor},
     * {@code pin_memory} and {@code timeout}.
     *
     * @param numWorkers worker threads; 0 makes each batch on the thread that iterates
     * @param prefetchFactor batches each worker prepares ahead (PyTorch's default 2); ignored without workers
     * @param pinMemory accepted for PyTorch's name: batches are always assembled in native
     *     (off-heap) memory, on the worker when there are workers, ready for a copy to a device
     * @param timeout longest wait for one batch before {@code next()} fails, naming the batch
     */
    public record Options(int numWorkers, int prefetchFactor, boolean pinMemory, Duration timeout) {
        /** No workers, prefetch factor 2, {@link #DEFAULT_TIMEOUT}. */
        public static Options defaults() {
            return new Options(0, 2, false, DEFAULT_TIMEOUT);
        }

        /**
         * @throws IllegalArgumentException if a count is out of range or the timeout is not positive
         */
        public Options {
            if (numWorkers < 0) {
                throw new IllegalArgumentException("DataLoader: numWorkers must be 0 (batches made on the iterating"
                        + " thread) or more, got " + numWorkers);
            }
            if (prefetchFactor < 1) {
                throw new IllegalArgumentException("DataLoader: prefetchFactor must be at least 1 batch per worker, got "
                        + prefetchFactor);
            }
            if ((long) numWorkers * prefetchFactor > Integer.MAX_VALUE) {
                throw new IllegalArgumentException("DataLoader: numWorkers x prefetchFactor = " + numWorkers + " x "
                        + prefetchFactor + " batches in flight is more than an int counts (" + Integer.MAX_VALUE + "): use"
                        + " a few workers per core and PyTorch's prefetchFactor 2");
            }
            Objects.requireNonNull(timeout, "timeout");
            if (timeout.isNegative() || timeout.isZero()) {
                throw new IllegalArgumentException("DataLoader: timeout must be positive, got " + timeout);
            }
        }

        public Options numWorkers(int value) {
            return new Options(value, prefetchFactor, pinMemory, timeout);
        }

        public Options prefetchFactor(int value) {
            return new Options(numWorkers, value, pinMemory, timeout);
        }

        public Options pinMemory(boolean value) {
            return new Options(numWorkers, prefetchFactor, value, timeout);
        }

        public Options timeout(Duration value) {
            return new Options(numWorkers, prefetchFactor, pinMemory, value);
        }
    }

    /**
     * @param sampler the visiting order (e.g. a DistributedSampler); the dataset order when null
     * @param dropLast drop a last batch smaller than batchSize
     * @param options worker threads and prefetching
     * @throws IllegalArgumentException if batchSize &lt; 1, or a timeout other than the default is set
     *     without workers (as PyTorch, which takes {@code timeout} only with {@code num_workers > 0})
     */
    public DataLoader(Dataset dataset, int batchSize, Sampler sampler, boolean dropLast, Options options) {
        if (batchSize < 1) {
            throw new IllegalArgumentException("batch size must be >= 1, got " + batchSize);
        }
        this.dataset = Objects.requireNonNull(dataset, "dataset");
        this.batchSize = batchSize;
        this.sampler = sampler == null ? new SequentialSampler(dataset.size()) : sampler;
        this.dropLast = dropLast;
        this.options = Objects.requireNonNull(options, "options");
        if (options.numWorkers() == 0 && !options.timeout().equals(DEFAULT_TIMEOUT)) {
            // As PyTorch's, which accepts a timeout only with workers: nothing can stop a read that
            // hangs on the thread that iterates.
            throw new IllegalArgumentException("DataLoader: a timeout (" + options.timeout() + ") needs workers: with"
                    + " numWorkers 0 each batch is read on the iterating thread, where a read that hangs cannot be"
                    + " stopped; set numWorkers(1) or more, or leave the timeout at its default");
        }
    }

    /** No workers: each batch made on the iterating thread. */
    public DataLoader(Dataset dataset, int batchSize, Sampler sampler, boolean dropLast) {
        this(dataset, batchSize, sampler, dropLast, Options.defaults());
    }

    /** In dataset order, keeping a short last batch. */
    public DataLoader(Dataset dataset, int batchSize) {
        this(dataset, batchSize, null, false);
    }

    /** Number of batches per epoch. Mirrors {@code len(loader)}. */
    public int size() {
        int n = sampler.size();
        return dropLast ? n / batchSize : (n + batchSize - 1) / batchSize;
    }

    public Dataset dataset() {
        return dataset;
    }

    public Options options() {
        return options;
    }

    /**
     * Starts an epoch: asks the sampler for this epoch's order. With workers, starting an epoch
     * ends the previous one's iteration (its batches not yet taken are freed).
     */
    @Override
    public Iterator<Batch> iterator() {
        int[] order = sampler.indices();
        if (options.numWorkers() == 0) {
            return new Iterator<>() {
                private int next;
                private float[] features;

                @Override
                public boolean hasNext() {
                    return next < size();
                }

                @Override
                public Batch next() {
                    if (!hasNext()) {
                        throw new NoSuchElementException();
                    }
                    if (features == null) {
                        features = new float[batchSize * dataset.exampleNumel()];
                    }
                    return make(order, next++, features);
                }
            };
        }
        synchronized (this) {
            if (current != null) {
                current.cancel();
            }
            if (workers == null) {
                workers = Executors.newFixedThreadPool(options.numWorkers(), workerThreads());
            }
            current = new Epoch(order, workers);
            return current;
        }
    }

    /** Stops the worker threads and frees the batches they made that were not taken. Idempotent. */
    @Override
    public synchronized void close() {
        if (current != null) {
            current.cancel();
            current = null;
        }
        if (workers != null) {
            workers.shutdownNow();
            workers = null;
        }
    }

    /** Batch {@code index} of an epoch in the given order, gathered through {@code features} (reused). */
    private Batch make(int[] order, int index, float[] features) {
        long[] exampleShape = dataset.exampleShape();
        int exampleNumel = dataset.exampleNumel();
        int start = index * batchSize;
        int count = Math.min(batchSize, order.length - start);
        long[] labels = dataset.hasLabels() ? new long[count] : null;
        for (int i = 0; i < count; i++) {
            int example = order[start + i];
            dataset.copyFeatures(example, features, i * exampleNumel);
            if (labels != null) {
                labels[i] = dataset.label(example);
            }
        }
        long[] shape = new long[exampleShape.length + 1];
        shape[0] = count;
        System.arraycopy(exampleShape, 0, shape, 1, exampleShape.length);
        Tensor inputs = Tensor.ofRegion(features, 0, shape);
        return new Batch(inputs, labels == null ? null : Tensor.ofLongs(labels, count));
    }

    private ThreadFactory workerThreads() {
        int loader = LOADERS.incrementAndGet();
        AtomicInteger n = new AtomicInteger();
        return r -> {
            Thread t = new Thread(r, "ddp4j-dataloader-" + loader + "-worker-" + n.getAndIncrement());
            t.setDaemon(true);
            return t;
        };
    }

    /** One epoch over worker threads: futures of the next batches, in order. */
    private final class Epoch implements Iterator<Batch> {
        private final int[] order;
        private final ExecutorService pool;
        private final ArrayDeque<Future<Batch>> inFlight = new ArrayDeque<>();
        private final ThreadLocal<float[]> features = ThreadLocal.withInitial(
                () -> new float[batchSize * dataset.exampleNumel()]);
        private final int batches = size();
        private int submitted;
        private int taken;
        private volatile boolean cancelled;

        Epoch(int[] order, ExecutorService pool) {
            this.order = order;
            this.pool = pool;
            fill();
        }

        private void fill() {
            int ahead = options.numWorkers() * options.prefetchFactor();
            while (submitted < batches && inFlight.size() < ahead) {
                int index = submitted++;
                inFlight.add(pool.submit(() -> {
                    // on the worker: no scope is open here, so the batch is freed by whoever takes it
                    return cancelled ? null : make(order, index, features.get());
                }));
            }
        }

        @Override
        public boolean hasNext() {
            return !cancelled && taken < batches;
        }

        @Override
        public Batch next() {
            if (cancelled) {
                throw new IllegalStateException("DataLoader: this epoch's iteration ended (a new epoch started, or the"
                        + " loader was closed); take batches from the new iterator");
            }
            if (taken >= batches) {
                throw new NoSuchElementException();
            }
            Future<Batch> head = inFlight.poll();
            int index = taken++;
            Batch batch;
            try {
                batch = head.get(options.timeout().toMillis(), TimeUnit.MILLISECONDS);
            } catch (TimeoutException e) {
                head.cancel(true);
                throw new IllegalStateException("DataLoader: batch " + index + " was not ready after " + options.timeout()
                        + " on its worker thread (a dataset read that hangs?); raise DataLoader.Options.timeout if the"
                        + " dataset is that slow", e);
            } catch (ExecutionException e) {
                throw new IllegalStateException("DataLoader: a worker thread failed to make batch " + index + ": "
                        + e.getCause(), e.getCause());
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new IllegalStateException("DataLoader: interrupted while waiting for batch " + index, e);
            }
            fill();
            Tensors.adopt(batch.inputs());
            if (batch.labels() != null) {
                Tensors.adopt(batch.labels());
            }
            return batch;
        }

        /** Ends the iteration: batches made but not taken are freed; ones still being made are left to the Cleaner. */
        void cancel() {
            cancelled = true;
            for (Future<Batch> f : inFlight) {
                if (!f.cancel(false)) { // already made
                    try {
                        Batch b = f.get();
                        if (b != null) {
                            b.close();
                        }
                    } catch (ExecutionException | InterruptedException | java.util.concurrent.CancellationException e) {
                        // nothing was made, or nothing to free
                    }
                }
            }
            inFlight.clear();
        }
    }
}

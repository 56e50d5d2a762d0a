package org.ddp4j.amp;

import java.util.ArrayList;
import java.util.IdentityHashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import org.ddp4j.distributed.Distributed;
import org.ddp4j.distributed.ProcessGroup;
import org.ddp4j.distributed.ReduceOp;
import org.ddp4j.internal.AmpNatives;
import org.ddp4j.internal.TensorHandles;
import org.ddp4j.optim.Optimizer;
import org.ddp4j.tensor.Device;
import org.ddp4j.tensor.Tensor;

/**
 * Loss scaling for float16 training, as {@code torch.amp.GradScaler} ({@code torch.cuda.amp.GradScaler}):
 * {@link #scale} multiplies the loss by the scale so that small float16 gradients do not flush to
 * zero; {@link #unscale} divides the gradients back in place and checks them for inf/NaN (one
 * threaded native pass over each gradient); {@link #step} runs the optimizer only when none was
 * found; {@link #update} then halves the scale after a skipped step, or doubles it after
 * {@code growthInterval} steps in a row without one.
 *
 * <pre>{@code
 * GradScaler scaler = new GradScaler();
 * for (Batch b : loader) {
 *     optimizer.zeroGrad();
 *     Tensor loss;
 *     try (var ac = Autocast.enable(Device.CPU, DType.FLOAT16)) { loss = lossFn.apply(model.forward(b.x()), b.y()); }
 *     scaler.scale(loss).backward();
 *     scaler.step(optimizer);     // skipped when a gradient is inf or NaN
 *     scaler.update();
 * }
 * }</pre>
 *
 * <p><b>Under DDP.</b> DDP averages the gradients, so an inf on one rank reaches every rank's
 * gradient and every rank skips the same step. Gradients that were not all-reduced (inside
 * {@code noSync()}, or without DDP) would let ranks disagree, so whenever a process group applies
 * — the one given to {@link Options#processGroup}, else the default group when
 * {@link Distributed#isInitialized()} — {@link #unscale} also all-reduces the found-inf flag with
 * {@link ReduceOp#MAX} (one float per step; {@link Options#syncFoundInf(boolean) syncFoundInf(false)}
 * turns this off). Every rank must then call {@link #unscale} / {@link #step} the same number of
 * times, as it calls DDP's forward.
 *
 * <p>Parameters and gradients must be float32 (master weights, as under {@link Autocast}). Not
 * thread-safe: one scaler per training thread. The scale is a float32, as PyTorch's
 * {@code _scale} tensor; {@link #update}'s arithmetic is {@code torch._amp_update_scale_}'s.
 */
public final class GradScaler {
    private enum Stage { READY, UNSCALED, STEPPED }

    private static final class PerOptimizer {
        Stage stage = Stage.READY;
        boolean foundInf;
        /** unscale saw at least one gradient (PyTorch: an inf check was recorded). */
        boolean checkedAny;
    }

    private float scale;
    private double growthFactor;
    private double backoffFactor;
    private int growthInterval;
    private int growthTracker;
    private final boolean enabled;
    private final ProcessGroup processGroup;
    private final boolean syncFoundInf;
    private final Map<Optimizer, PerOptimizer> perOptimizer = new IdentityHashMap<>();

    /** PyTorch's defaults: scale 2^16, growth 2, backoff 0.5, interval 2000, enabled. */
    public GradScaler() {
        this(new Options());
    }

    /**
     * {@code torch.amp.GradScaler(init_scale, growth_factor, backoff_factor, growth_interval, enabled)}.
     *
     * @throws IllegalArgumentException unless initScale is positive and finite, growthFactor &gt; 1,
     *     0 &lt; backoffFactor &lt; 1 and growthInterval &ge; 1
     */
    public GradScaler(double initScale, double growthFactor, double backoffFactor, int growthInterval,
            boolean enabled) {
        this(new Options().initScale(initScale).growthFactor(growthFactor).backoffFactor(backoffFactor)
                .growthInterval(growthInterval).enabled(enabled));
    }

    /** A scaler with these options (see {@link Options}). */
    public GradScaler(Options options) {
        Objects.requireNonNull(options, "GradScaler: options is null");
        checkScale(options.initScale);
        checkGrowthFactor(options.growthFactor);
        checkBackoffFactor(options.backoffFactor);
        checkGrowthInterval(options.growthInterval);
        this.scale = (float) options.initScale;
        this.growthFactor = options.growthFactor;
        this.backoffFactor = options.backoffFactor;
        this.growthInterval = options.growthInterval;
        this.enabled = options.enabled;
        this.processGroup = options.processGroup;
        this.syncFoundInf = options.syncFoundInf;
    }

    /**
     * {@code outputs * scale} (differentiable; call {@code backward()} on it): {@code GradScaler.scale}.
     * Returns {@code outputs} itself when the scaler is disabled.
     */
    public Tensor scale(Tensor outputs) {
        Objects.requireNonNull(outputs, "GradScaler.scale: outputs is null");
        return enabled ? outputs.mul(scale) : outputs;
    }

    /**
     * Divides the optimizer's gradients by the scale in place and records whether any is inf or NaN
     * ({@code GradScaler.unscale_}): call it before clipping gradients. Parameters without a gradient
     * are skipped. Does nothing when disabled.
     *
     * @throws IllegalStateException if called twice for this optimizer, or after {@link #step}, since
     *     the last {@link #update}
     * @throws IllegalArgumentException if a gradient is not float32
     */
    public void unscale(Optimizer optimizer) {
        Objects.requireNonNull(optimizer, "GradScaler.unscale: optimizer is null");
        if (!enabled) {
            return;
        }
        PerOptimizer state = perOptimizer.computeIfAbsent(optimizer, o -> new PerOptimizer());
        if (state.stage == Stage.UNSCALED) {
            throw new IllegalStateException(
                    "GradScaler.unscale() has already been called on this optimizer since the last update()");
        }
        if (state.stage == Stage.STEPPED) {
            throw new IllegalStateException("GradScaler.unscale() is being called after step(); call update() first");
        }
        // PyTorch: the reciprocal in double, then float32.
        float invScale = (float) (1.0 / (double) scale);
        List<Tensor> grads = new ArrayList<>();
        for (Tensor p : optimizer.params()) {
            Tensor g = p.grad();
            if (g != null) {
                grads.add(g);
            }
        }
        Device device = grads.isEmpty() ? Device.CPU : grads.get(0).device();
        ProcessGroup group = foundInfGroup();
        if (group != null) {
            device = group.device();
        }
        try (Tensor found = Tensor.zeros(1).to(device)) {
            long[] handles = new long[grads.size()];
            for (int i = 0; i < handles.length; i++) {
                handles[i] = TensorHandles.nativeHandle(grads.get(i));
            }
            if (handles.length > 0) {
                AmpNatives.nonFiniteCheckAndUnscale(handles, invScale, TensorHandles.nativeHandle(found));
            }
            if (group != null) {
                group.allReduce(found, ReduceOp.MAX).await();
            }
            state.foundInf = found.item() != 0.0f;
        }
        state.checkedAny = !grads.isEmpty();
        state.stage = Stage.UNSCALED;
    }

    /**
     * Unscales the gradients unless {@link #unscale} already did, then runs {@code optimizer.step()}
     * unless an inf or NaN was found ({@code GradScaler.step}). When disabled, simply steps.
     *
     * @return whether the optimizer stepped (PyTorch returns the optimizer's result; skipped steps
     *     are what a caller usually wants to know)
     * @throws IllegalStateException if step was already called for this optimizer since the last
     *     {@link #update}, or if none of its parameters has a gradient (no backward ran: PyTorch's
     *     "No inf checks were recorded for this optimizer")
     */
    public boolean step(Optimizer optimizer) {
        Objects.requireNonNull(optimizer, "GradScaler.step: optimizer is null");
        if (!enabled) {
            optimizer.step();
            return true;
        }
        PerOptimizer state = perOptimizer.computeIfAbsent(optimizer, o -> new PerOptimizer());
        if (state.stage == Stage.STEPPED) {
            throw new IllegalStateException("GradScaler.step() has already been called since the last update()");
        }
        if (state.stage == Stage.READY) {
            unscale(optimizer);
        }
        if (!state.checkedAny) {
            // As PyTorch's "No inf checks were recorded for this optimizer": stepping would apply nothing.
            state.stage = Stage.READY;
            throw new IllegalStateException("GradScaler.step(): no parameter of this optimizer has a gradient, so nothing"
                    + " was checked for inf or NaN; call scaler.scale(loss).backward() before step(optimizer)");
        }
        boolean stepped = !state.foundInf;
        if (stepped) {
            optimizer.step();
        }
        state.stage = Stage.STEPPED;
        return stepped;
    }

    /**
     * Updates the scale from this iteration's checks ({@code GradScaler.update()}, i.e.
     * {@code torch._amp_update_scale_}): any inf/NaN found → scale × backoffFactor and the growth
     * tracker back to 0; else the tracker counts one more clean step, and when it reaches
     * growthInterval the scale × growthFactor (kept only if finite) and the tracker returns to 0.
     * Then every optimizer is ready for the next iteration. Does nothing when disabled.
     *
     * @throws IllegalStateException if no optimizer was unscaled or stepped since the last update
     */
    public void update() {
        if (!enabled) {
            return;
        }
        if (perOptimizer.isEmpty()) {
            throw new IllegalStateException("GradScaler.update(): no inf checks were recorded prior to update();"
                    + " call step(optimizer) (or unscale(optimizer)) first");
        }
        boolean foundInf = perOptimizer.values().stream().anyMatch(s -> s.foundInf);
        if (foundInf) {
            scale = (float) (scale * backoffFactor);
            growthTracker = 0;
        } else {
            int successful = growthTracker + 1;
            if (successful == growthInterval) {
                float grown = (float) (scale * growthFactor);
                if (Float.isFinite(grown)) {
                    scale = grown;
                }
                growthTracker = 0;
            } else {
                growthTracker = successful;
            }
        }
        perOptimizer.clear();
    }

    /**
     * Sets the scale to newScale instead of the rule ({@code GradScaler.update(new_scale)}); the
     * growth tracker is kept, as PyTorch keeps it.
     */
    public void update(double newScale) {
        if (!enabled) {
            return;
        }
        checkScale(newScale);
        scale = (float) newScale;
        perOptimizer.clear();
    }

    /** The current scale, 1.0 when disabled ({@code GradScaler.get_scale}). */
    public double getScale() {
        return enabled ? scale : 1.0;
    }

    /** {@code GradScaler.get_growth_factor}. */
    public double getGrowthFactor() {
        return growthFactor;
    }

    /** {@code GradScaler.set_growth_factor}; must be &gt; 1. */
    public void setGrowthFactor(double growthFactor) {
        checkGrowthFactor(growthFactor);
        this.growthFactor = growthFactor;
    }

    /** {@code GradScaler.get_backoff_factor}. */
    public double getBackoffFactor() {
        return backoffFactor;
    }

    /** {@code GradScaler.set_backoff_factor}; must be in (0, 1). */
    public void setBackoffFactor(double backoffFactor) {
        checkBackoffFactor(backoffFactor);
        this.backoffFactor = backoffFactor;
    }

    /** {@code GradScaler.get_growth_interval}. */
    public int getGrowthInterval() {
        return growthInterval;
    }

    /** {@code GradScaler.set_growth_interval}; must be &ge; 1. */
    public void setGrowthInterval(int growthInterval) {
        checkGrowthInterval(growthInterval);
        this.growthInterval = growthInterval;
    }

    /** Clean steps in a row since the last growth or backoff (PyTorch's {@code _growth_tracker}). */
    public int getGrowthTracker() {
        return growthTracker;
    }

    /** {@code GradScaler.is_enabled}. */
    public boolean isEnabled() {
        return enabled;
    }

    /**
     * PyTorch's state dict: {@code scale} (Double), {@code growth_factor}, {@code backoff_factor}
     * (Double), {@code growth_interval}, {@code _growth_tracker} (Integer), in that order; empty when
     * disabled, as PyTorch's.
     */
    public Map<String, Object> stateDict() {
        Map<String, Object> out = new LinkedHashMap<>();
        if (!enabled) {
            return out;
        }
        out.put("scale", (double) scale);
        out.put("growth_factor", growthFactor);
        out.put("backoff_factor", backoffFactor);
        out.put("growth_interval", growthInterval);
        out.put("_growth_tracker", growthTracker);
        return out;
    }

    /**
     * Restores {@link #stateDict()}'s values ({@code GradScaler.load_state_dict}); numbers of any
     * boxed type are accepted.
     *
     * @throws IllegalStateException if this scaler is disabled
     * @throws IllegalArgumentException if the map is empty (saved from a disabled scaler), misses a
     *     key, or holds a value out of range or not a number
     */
    public void loadStateDict(Map<String, ?> state) {
        Objects.requireNonNull(state, "GradScaler.loadStateDict: state is null");
        if (!enabled) {
            throw new IllegalStateException("GradScaler.loadStateDict: this scaler is disabled (enabled=false)");
        }
        if (state.isEmpty()) {
            throw new IllegalArgumentException("GradScaler.loadStateDict: the state dict is empty, possibly because it"
                    + " was saved from a disabled GradScaler");
        }
        double newScale = number(state, "scale").doubleValue();
        double newGrowth = number(state, "growth_factor").doubleValue();
        double newBackoff = number(state, "backoff_factor").doubleValue();
        int newInterval = number(state, "growth_interval").intValue();
        int newTracker = number(state, "_growth_tracker").intValue();
        checkScale(newScale);
        checkGrowthFactor(newGrowth);
        checkBackoffFactor(newBackoff);
        checkGrowthInterval(newInterval);
        if (newTracker < 0) {
            throw new IllegalArgumentException("GradScaler.loadStateDict: _growth_tracker must be >= 0, got " + newTracker);
        }
        scale = (float) newScale;
        growthFactor = newGrowth;
        backoffFactor = newBackoff;
        growthInterval = newInterval;
        growthTracker = newTracker;
    }

    @Override
    public String toString() {
        return "GradScaler(scale=" + getScale() + ", growth_factor=" + growthFactor + ", backoff_factor="
                + backoffFactor + ", growth_interval=" + growthInterval + ", enabled=" + enabled + ")";
    }

    private ProcessGroup foundInfGroup() {
        if (!syncFoundInf) {
            return null;
        }
        if (processGroup != null) {
            return processGroup;
        }
        return Distributed.isInitialized() ? Distributed.defaultGroup() : null;
    }

    private static Number number(Map<String, ?> state, String key) {
        Object v = state.get(key);
        if (!(v instanceof Number n)) {
            throw new IllegalArgumentException("GradScaler.loadStateDict: key " + key + " must be a number, got "
                    + (v == null ? "nothing" : v.getClass().getSimpleName() + " " + v) + " (keys: " + state.keySet() + ")");
        }
        return n;
    }

    private static void checkScale(double s) {
        if (!(s > 0) || !Double.isFinite(s) || !Float.isFinite((float) s)) {
            throw new IllegalArgumentException("GradScaler: scale must be positive and finite in float32, got " + s);
        }
    }

    private static void checkGrowthFactor(double f) {
        if (!(f > 1.0)) {
            throw new IllegalArgumentException("GradScaler: the growth factor must be > 1.0, got " + f);
        }
    }

    private static void checkBackoffFactor(double f) {
        if (!(f > 0.0 && f < 1.0)) {
            throw new IllegalArgumentException("GradScaler: the backoff factor must be in (0, 1), got " + f);
        }
    }

    private static void checkGrowthInterval(int n) {
        if (n < 1) {
            throw new IllegalArgumentException("GradScaler: the growth interval must be >= 1, got " + n);
        }
    }

    /** The constructor's options, PyTorch's defaults. */
    public static final class Options {
        private double initScale = 65536.0;
        private double growthFactor = 2.0;
        private double backoffFactor = 0.5;
        private int growthInterval = 2000;
        private boolean enabled = true;
        private ProcessGroup processGroup;
        private boolean syncFoundInf = true;

        /** init_scale: the first scale (2^16). */
        public Options initScale(double v) {
            initScale = v;
            return this;
        }

        /** growth_factor (2.0). */
        public Options growthFactor(double v) {
            growthFactor = v;
            return this;
        }

        /** backoff_factor (0.5). */
        public Options backoffFactor(double v) {
            backoffFactor = v;
            return this;
        }

        /** growth_interval (2000). */
        public Options growthInterval(int v) {
            growthInterval = v;
            return this;
        }

        /** enabled (true): false makes every method a pass-through. */
        public Options enabled(boolean v) {
            enabled = v;
            return this;
        }

        /** The group whose ranks agree on skipping (default: the default group when initialised). */
        public Options processGroup(ProcessGroup group) {
            processGroup = group;
            return this;
        }

        /** Whether to all-reduce the found-inf flag (MAX) over that group (true). */
        public Options syncFoundInf(boolean v) {
            syncFoundInf = v;
            return this;
        }
    }
}

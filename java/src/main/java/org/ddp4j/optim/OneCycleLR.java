package org.ddp4j.optim;

import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The 1cycle policy, stepped once per batch: each group's lr rises from {@code max_lr / div_factor}
 * to {@code max_lr} over the first {@code pct_start} of {@code total_steps}, then falls to
 * {@code max_lr / div_factor / final_div_factor} by the last step; the momentum (SGD's
 * {@code momentum}, or Adam's first beta) moves the other way, from {@code max_momentum} down to
 * {@code base_momentum} and back. Mirrors {@code torch.optim.lr_scheduler.OneCycleLR} (PyTorch 1.13)
 * with its closed-form phases, so the lr and momentum sequences equal PyTorch's.
 * Example: {@code var s = new OneCycleLR(optimizer, 0.1, epochs * loader.size()); ... optimizer.step(); s.step();}
 *
 * <p>Construction sets each group's lr to {@code max_lr / div_factor} (so that lr is
 * {@link #baseLrs()}) and, with {@code cycle_momentum}, its momentum to {@code max_momentum}.
 * {@link #step()} may be called {@code total_steps} times after construction; the last call (after the
 * last batch, so no optimizer step uses its lr) holds the schedule's end values where PyTorch
 * extrapolates past them (to a negative lr with linear annealing) — the only departure from PyTorch.
 */
public final class OneCycleLR extends LRScheduler {
    /** How the lr and momentum move within a phase: PyTorch's {@code anneal_strategy}. */
    public enum AnnealStrategy {
        /** Half a cosine from start to end ({@code 'cos'}, the default). */
        COS,
        /** A straight line ({@code 'linear'}). */
        LINEAR;

        /** @deprecated Java names enum constants in capitals: use {@link #COS} */
        @Deprecated
        public static final AnnealStrategy cos = COS;

        /** @deprecated Java names enum constants in capitals: use {@link #LINEAR} */
        @Deprecated
        public static final AnnealStrategy linear = LINEAR;

        /** PyTorch's name, as its state dict stores it: {@code cos} or {@code linear}. */
        public String pytorchName() {
            return name().toLowerCase(java.util.Locale.ROOT);
        }
    }

    /**
     * OneCycleLR's keyword arguments other than {@code max_lr} and {@code total_steps}, with
     * PyTorch's defaults from {@link #defaults()}; each wither returns a changed copy.
     */
    public record Options(double pctStart, AnnealStrategy annealStrategy, boolean cycleMomentum, double baseMomentum,
                          double maxMomentum, double divFactor, double finalDivFactor, boolean threePhase) {
        /**
         * @throws IllegalArgumentException naming the argument: pct_start outside [0, 1], a null anneal strategy,
         *     or a div factor that is not positive
         */
        public Options {
            if (!(pctStart >= 0 && pctStart <= 1)) {
                throw new IllegalArgumentException("OneCycleLR: pct_start is the share of the steps spent raising the lr,"
                        + " a number in [0, 1], got " + pctStart + " (PyTorch's default is 0.3)");
            }
            if (annealStrategy == null) {
                throw new IllegalArgumentException("OneCycleLR: anneal_strategy must be cos or linear, got null");
            }
            if (!(divFactor > 0) || !(finalDivFactor > 0)) {
                throw new IllegalArgumentException("OneCycleLR: div_factor and final_div_factor divide the lr and must be"
                        + " positive, got " + divFactor + " and " + finalDivFactor);
            }
        }

        /** pct_start 0.3, cos, cycle_momentum true, momentum 0.85 to 0.95, div_factor 25, final_div_factor 1e4, two phases. */
        public static Options defaults() {
            return new Options(0.3, AnnealStrategy.COS, true, 0.85, 0.95, 25, 1e4, false);
        }

        /** The share of the steps spent raising the lr. */
        public Options pctStart(double value) {
            return new Options(value, annealStrategy, cycleMomentum, baseMomentum, maxMomentum, divFactor, finalDivFactor, threePhase);
        }

        /** Cosine or linear moves within each phase. */
        public Options annealStrategy(AnnealStrategy value) {
            return new Options(pctStart, value, cycleMomentum, baseMomentum, maxMomentum, divFactor, finalDivFactor, threePhase);
        }

        /** Whether the momentum moves against the lr (the optimizer must have momentum or betas). */
        public Options cycleMomentum(boolean value) {
            return new Options(pctStart, annealStrategy, value, baseMomentum, maxMomentum, divFactor, finalDivFactor, threePhase);
        }

        /** The momentum at the lr's peak. */
        public Options baseMomentum(double value) {
            return new Options(pctStart, annealStrategy, cycleMomentum, value, maxMomentum, divFactor, finalDivFactor, threePhase);
        }

        /** The momentum at the start and the end. */
        public Options maxMomentum(double value) {
            return new Options(pctStart, annealStrategy, cycleMomentum, baseMomentum, value, divFactor, finalDivFactor, threePhase);
        }

        /** The first lr is max_lr / div_factor. */
        public Options divFactor(double value) {
            return new Options(pctStart, annealStrategy, cycleMomentum, baseMomentum, maxMomentum, value, finalDivFactor, threePhase);
        }

        /** The last lr is the first lr / final_div_factor. */
        public Options finalDivFactor(double value) {
            return new Options(pctStart, annealStrategy, cycleMomentum, baseMomentum, maxMomentum, divFactor, value, threePhase);
        }

        /** Three phases (up, back down to the first lr, then down to the last) instead of two. */
        public Options threePhase(boolean value) {
            return new Options(pctStart, annealStrategy, cycleMomentum, baseMomentum, maxMomentum, divFactor, finalDivFactor, value);
        }
    }

    /** One phase under PyTorch's keys: end_step, and the names of the per-group values it moves between. */
    private record Phase(double endStep, String startLr, String endLr, String startMomentum, String endMomentum) {
        Map<String, Object> toMap() {
            Map<String, Object> out = new LinkedHashMap<>();
            out.put("end_step", endStep);
            out.put("start_lr", startLr);
            out.put("end_lr", endLr);
            out.put("start_momentum", startMomentum);
            out.put("end_momentum", endMomentum);
            return out;
        }
    }

    private static final List<String> GROUP_VALUES = List.of("initial_lr", "max_lr", "min_lr", "max_momentum", "base_momentum");

    private int totalSteps;
    private List<Phase> phases;
    private AnnealStrategy annealStrategy;
    private boolean cycleMomentum;
    private boolean useBeta1;
    /** Per group, the values PyTorch keeps in the group dict: initial_lr, max_lr, min_lr, max_momentum, base_momentum. */
    private List<Map<String, Double>> groupValues;

    /** {@code OneCycleLR(optimizer, max_lr, total_steps)} with PyTorch's defaults for the rest. */
    public OneCycleLR(Optimizer optimizer, double maxLr, int totalSteps) {
        this(optimizer, Collections.nCopies(optimizer.paramGroups().size(), maxLr), totalSteps, Options.defaults());
    }

    /**
     * @param maxLrs the peak lr of each parameter group, in {@code paramGroups()} order
     * @param totalSteps the number of {@link #step()} calls the schedule spans (epochs × batches per epoch), {@code >= 1}
     * @throws IllegalArgumentException for total_steps below 1, a max_lr list whose length is not the
     *     group count, or cycle_momentum with an optimizer that has neither momentum nor betas
     */
    public OneCycleLR(Optimizer optimizer, List<Double> maxLrs, int totalSteps, Options options) {
        super(prepare(optimizer, maxLrs, totalSteps, options));
        this.totalSteps = totalSteps;
        this.annealStrategy = options.annealStrategy();
        this.cycleMomentum = options.cycleMomentum();
        this.useBeta1 = optimizer.paramGroups().get(0).options().containsKey("betas");
        this.phases = phases(totalSteps, options);
        this.groupValues = new ArrayList<>();
        for (double maxLr : maxLrs) {
            Map<String, Double> values = new LinkedHashMap<>();
            values.put("initial_lr", maxLr / options.divFactor());
            values.put("max_lr", maxLr);
            values.put("min_lr", maxLr / options.divFactor() / options.finalDivFactor());
            values.put("max_momentum", options.maxMomentum());
            values.put("base_momentum", options.baseMomentum());
            groupValues.add(values);
        }
        initialStep();
    }

    /** Checks the arguments and sets each group's lr to max_lr / div_factor and its momentum to max_momentum, before super(). */
    private static Optimizer prepare(Optimizer optimizer, List<Double> maxLrs, int totalSteps, Options options) {
        if (totalSteps < 1) {
            throw new IllegalArgumentException("OneCycleLR: total_steps must be a positive number of steps (epochs times"
                    + " batches per epoch), got " + totalSteps);
        }
        List<ParamGroup> groups = optimizer.paramGroups();
        if (maxLrs.size() != groups.size()) {
            throw new IllegalArgumentException("OneCycleLR: expected " + groups.size() + " values for max_lr, one per parameter"
                    + " group, got " + maxLrs.size());
        }
        boolean hasMomentum = groups.get(0).options().containsKey("momentum");
        boolean hasBetas = groups.get(0).options().containsKey("betas");
        if (options.cycleMomentum() && !hasMomentum && !hasBetas) {
            throw new IllegalArgumentException("OneCycleLR: optimizer must support momentum with `cycle_momentum` option"
                    + " enabled (" + optimizer.getClass().getSimpleName() + " has neither momentum nor betas: pass"
                    + " Options.defaults().cycleMomentum(false))");
        }
        for (int i = 0; i < groups.size(); i++) {
            groups.get(i).setLr(maxLrs.get(i) / options.divFactor());
            groups.get(i).setInitialLr(maxLrs.get(i) / options.divFactor()); // PyTorch sets group["initial_lr"] too
            if (options.cycleMomentum()) {
                setMomentum(groups.get(i), hasBetas, options.maxMomentum());
            }
        }
        return optimizer;
    }

    private static List<Phase> phases(int totalSteps, Options o) {
        double up = o.pctStart() * totalSteps - 1;
        if (o.threePhase()) {
            return List.of(new Phase(up, "initial_lr", "max_lr", "max_momentum", "base_momentum"),
                    new Phase(2 * o.pctStart() * totalSteps - 2, "max_lr", "initial_lr", "base_momentum", "max_momentum"),
                    new Phase(totalSteps - 1, "initial_lr", "min_lr", "max_momentum", "max_momentum"));
        }
        return List.of(new Phase(up, "initial_lr", "max_lr", "max_momentum", "base_momentum"),
                new Phase(totalSteps - 1, "max_lr", "min_lr", "base_momentum", "max_momentum"));
    }

    private static void setMomentum(ParamGroup group, boolean useBeta1, double momentum) {
        if (useBeta1) {
            List<?> betas = (List<?>) group.get("betas");
            group.set("betas", List.of(momentum, betas.get(1)));
        } else {
            group.set("momentum", momentum);
        }
    }

    /**
     * Advances one batch and sets every group's lr (and momentum, with cycle_momentum).
     *
     * @throws IllegalStateException "Tried to step 102 times. The specified number of total steps is 100" past the
     *     end of the schedule; nothing changes then
     */
    @Override
    public void step() {
        if (lastEpoch() + 1 > totalSteps) {
            throw new IllegalStateException("OneCycleLR: tried to step " + (lastEpoch() + 2) + " times. The specified number"
                    + " of total steps is " + totalSteps + " (make the schedule with total_steps = epochs times batches per"
                    + " epoch, and step it once per batch)");
        }
        super.step();
    }

    @Override
    protected double computeLr(int group, double currentLr, double baseLr) {
        int stepNum = lastEpoch();
        Map<String, Double> values = groupValues.get(group);
        double startStep = 0;
        for (int i = 0; i < phases.size(); i++) {
            Phase phase = phases.get(i);
            if (stepNum <= phase.endStep() || i == phases.size() - 1) {
                // Past the last phase's end (the total_steps-th step, after the last batch) PyTorch extrapolates,
                // to a negative lr with linear annealing; hold the end value instead.
                double pct = Math.min(1, (stepNum - startStep) / (phase.endStep() - startStep));
                if (cycleMomentum) {
                    setMomentum(optimizer().paramGroups().get(group), useBeta1,
                            anneal(values.get(phase.startMomentum()), values.get(phase.endMomentum()), pct));
                }
                return anneal(values.get(phase.startLr()), values.get(phase.endLr()), pct);
            }
            startStep = phase.endStep();
        }
        throw new AssertionError("the last phase always matches");
    }

    private double anneal(double start, double end, double pct) {
        if (annealStrategy == AnnealStrategy.LINEAR) {
            return (end - start) * pct + start;
        }
        double cosOut = Math.cos(Math.PI * pct) + 1;
        return end + (start - end) / 2.0 * cosOut;
    }

    /** The number of steps the schedule spans. Mirrors {@code total_steps}. */
    public int totalSteps() {
        return totalSteps;
    }

    @Override
    protected void putHyperParameters(Map<String, Object> out) {
        out.put("total_steps", totalSteps);
        List<Map<String, Object>> phaseMaps = new ArrayList<>();
        phases.forEach(p -> phaseMaps.add(p.toMap()));
        out.put("_schedule_phases", phaseMaps);
        out.put("anneal_strategy", annealStrategy.pytorchName());
        out.put("cycle_momentum", cycleMomentum);
        for (String key : GROUP_VALUES) {
            List<Double> perGroup = new ArrayList<>();
            groupValues.forEach(v -> perGroup.add(v.get(key)));
            out.put(key, perGroup); // PyTorch keeps these in each param group; one list per key here
        }
    }

    @Override
    protected void loadHyperParameters(Map<String, ?> state) {
        int newTotalSteps = (int) number(state, "total_steps");
        if (!(state.get("anneal_strategy") instanceof String strategy) || !List.of("cos", "linear").contains(strategy)
                || !(state.get("cycle_momentum") instanceof Boolean newCycleMomentum)
                || !(state.get("_schedule_phases") instanceof List<?> phaseList) || phaseList.isEmpty()) {
            throw new IllegalArgumentException("OneCycleLR.loadStateDict: the state dict lacks anneal_strategy (cos or"
                    + " linear), cycle_momentum or _schedule_phases (a state dict of another scheduler?)");
        }
        List<Phase> newPhases = new ArrayList<>();
        for (Object p : phaseList) {
            if (!(p instanceof Map<?, ?> m) || !(m.get("end_step") instanceof Number end)
                    || !GROUP_VALUES.containsAll(List.of(String.valueOf(m.get("start_lr")), String.valueOf(m.get("end_lr")),
                            String.valueOf(m.get("start_momentum")), String.valueOf(m.get("end_momentum"))))) {
                throw new IllegalArgumentException("OneCycleLR.loadStateDict: malformed phase in _schedule_phases: " + p);
            }
            newPhases.add(new Phase(end.doubleValue(), (String) m.get("start_lr"), (String) m.get("end_lr"),
                    (String) m.get("start_momentum"), (String) m.get("end_momentum")));
        }
        int groups = optimizer().paramGroups().size();
        List<Map<String, Double>> newValues = new ArrayList<>();
        for (int g = 0; g < groups; g++) {
            newValues.add(new LinkedHashMap<>());
        }
        for (String key : GROUP_VALUES) {
            if (!(state.get(key) instanceof List<?> list) || list.size() != groups
                    || !list.stream().allMatch(Number.class::isInstance)) {
                throw new IllegalArgumentException("OneCycleLR.loadStateDict: the state dict has no '" + key + "' list of "
                        + groups + " numbers, one per parameter group (got " + state.get(key) + ")");
            }
            for (int g = 0; g < groups; g++) {
                newValues.get(g).put(key, ((Number) list.get(g)).doubleValue());
            }
        }
        totalSteps = newTotalSteps;
        phases = List.copyOf(newPhases);
        annealStrategy = AnnealStrategy.valueOf(strategy.toUpperCase(java.util.Locale.ROOT));
        cycleMomentum = newCycleMomentum;
        groupValues = newValues;
    }
}

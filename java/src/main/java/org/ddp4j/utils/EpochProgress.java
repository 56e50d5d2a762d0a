package org.ddp4j.utils;

import java.io.PrintStream;
import java.util.Locale;
import java.util.Map;
import me.tongfei.progressbar.ConsoleProgressBarConsumer;
import me.tongfei.progressbar.ProgressBar;
import me.tongfei.progressbar.ProgressBarBuilder;
import me.tongfei.progressbar.ProgressBarStyle;
import org.ddp4j.internal.Setting;

/**
 * One epoch's progress bar on rank 0 (me.tongfei:progressbar), for a training loop under
 * {@code ddp4j-run}: draw it when {@link #enabled} says the launcher's output is a terminal
 * ({@code DDP4J_PROGRESS=1}, which the launcher sets for rank 0), print plain log lines otherwise.
 * The bar redraws one line with '\r', which the launcher passes through prefixed; the line keeps
 * one width from the first draw (room for the loss is kept before it is known), so it never wraps
 * or jumps; closing ends it with a newline, leaving the epoch's final bar.
 *
 * <pre>{@code
 * try (var bar = EpochProgress.enabled(rank, System.getenv())
 *         ? EpochProgress.start(System.out, System.getenv(), epoch, epochs, loader.size()) : null) {
 *     for (Batch b : loader) { ...; if (bar != null) { bar.showLoss(loss); bar.step(); } }
 * }
 * }</pre>
 */
public final class EpochProgress implements AutoCloseable {
    /** Set to 1 by the launcher for rank 0 when its stdout is a terminal. */
    public static final String ENV = Setting.PROGRESS.variable();
    /** The loss's place after the bar, as wide as any loss it shows ({@code "loss %7.4f"}). */
    private static final String NO_LOSS_YET = "loss       -";

    /**
     * Width of the bar's line: {@code COLUMNS} when exported, else 80, less the launcher's
     * {@code [rankN]: } prefix, so the line does not wrap (a wrapped line cannot be redrawn with '\r').
     */
    private static final int PREFIX_WIDTH = 10;

    private final ProgressBar bar;

    private EpochProgress(ProgressBar bar) {
        this.bar = bar;
    }

    /** Whether this rank draws bars: rank 0, with {@code DDP4J_PROGRESS}=1 in its environment. */
    public static boolean enabled(int rank, Map<String, String> env) {
        return rank == 0 && "1".equals(env.getOrDefault(ENV, "").trim());
    }

    /**
     * Starts the bar of one epoch, drawn to {@code out} every half second.
     *
     * @param epoch the epoch, from 0
     * @param epochs the number of epochs
     * @param steps the steps in this epoch (the bar's 100 %)
     */
    public static EpochProgress start(PrintStream out, Map<String, String> env, int epoch, int epochs, long steps) {
        ProgressBar bar = new ProgressBarBuilder()
                .setTaskName(String.format(Locale.ROOT, "Epoch %d/%d", epoch + 1, epochs))
                .setInitialMax(steps)
                .setUnit(" steps", 1)
                .setStyle(ProgressBarStyle.ASCII) // any terminal encoding shows it
                .setUpdateIntervalMillis(500)
                .setConsumer(new ConsoleProgressBarConsumer(out, lineWidth(env)))
                .build();
        bar.setExtraMessage(NO_LOSS_YET); // room for the loss from the start: the bar keeps its width when it shows
        return new EpochProgress(bar);
    }

    private static int lineWidth(Map<String, String> env) {
        int columns = 80;
        try {
            columns = Integer.parseInt(env.getOrDefault("COLUMNS", "80").trim());
        } catch (NumberFormatException e) {
            // not a number: keep 80
        }
        return Math.max(40, columns - PREFIX_WIDTH);
    }

    /** One more step done. */
    public void step() {
        bar.step();
    }

    /** Shows {@code loss} after the bar (in the room kept for it; a loss of 1000 or more widens the line). */
    public void showLoss(float loss) {
        bar.setExtraMessage(String.format(Locale.ROOT, "loss %7.4f", loss));
    }

    /** Draws the final state and ends the line. */
    @Override
    public void close() {
        bar.close();
    }
}

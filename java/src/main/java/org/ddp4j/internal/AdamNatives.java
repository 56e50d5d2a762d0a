package org.ddp4j.internal;

/**
 * JNI declaration of the Adam / AdamW update, native/src/core/ops_adam.cpp's family
 * (native/src/jni/adam_natives.cpp; Java side {@link org.ddp4j.optim.Adam} and
 * {@link org.ddp4j.optim.AdamW}). Bad dtypes, shapes or options throw IllegalArgumentException
 * with the native message.
 */
public final class AdamNatives {
    static {
        NativeLibrary.load();
    }

    private AdamNatives() {}

    /**
     * One {@code torch.optim.Adam} ({@code decoupled} false) or {@code AdamW} ({@code decoupled}
     * true) update of param in place, for update number {@code step} (1 first); maxExpAvgSq may be
     * 0 without amsgrad.
     */
    public static native void adamStep(long param, long grad, long expAvg, long expAvgSq, long maxExpAvgSq, double lr,
            double beta1, double beta2, double eps, double weightDecay, boolean amsgrad, boolean decoupled, long step);

    /**
     * {@link #adamStep} for every parameter of a group in one call: entry i of each array belongs
     * to parameter i (steps[i] its update number); maxExpAvgSqs may be null without amsgrad. The
     * same bits as one adamStep per parameter; on the CPU the group's elements are split among
     * the intra-op threads.
     */
    public static native void adamSteps(long[] params, long[] grads, long[] expAvgs, long[] expAvgSqs,
            long[] maxExpAvgSqs, long[] steps, double lr, double beta1, double beta2, double eps, double weightDecay,
            boolean amsgrad, boolean decoupled);
}

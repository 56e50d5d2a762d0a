package org.ddp4j.internal;

/**
 * The key-value store that a native process group rendezvouses through, as the C++ side calls it
 * (native/src/jni/java_store.cpp; the method names and JNI signatures are in
 * native/src/jni/java_names.h, which must change with this interface). The caller adapts its public
 * store to this; the native side may call it from any thread (a native thread is attached to the
 * JVM as a daemon), only while {@link GlooNatives#create} runs, except the group's records store, which it
 * calls for the group's life.
 *
 * <p>Errors: a {@code DistributedTimeoutException} thrown here reaches the caller of
 * {@link GlooNatives#create} as a {@code DistributedTimeoutException}, any other
 * {@code DistributedException} as a {@code DistributedException}, both with their message; any
 * other exception as a {@code DistributedException} whose message names the store call and the
 * exception.
 */
public interface NativeStore {

    /** Sets {@code key} to {@code value} (any length, possibly empty), replacing any old value. */
    void set(String key, byte[] value);

    /**
     * The value of {@code key}, waiting up to the store's own timeout for it to be set; never null.
     *
     * @throws RuntimeException ({@code DistributedTimeoutException}) if the key is not set in time
     */
    byte[] get(String key);

    /**
     * Blocks until every key exists, up to the store's own timeout.
     *
     * @throws RuntimeException ({@code DistributedTimeoutException}) naming the missing keys
     */
    void waitFor(String[] keys);

    /**
     * Blocks until every key exists, up to {@code timeoutMs} milliseconds.
     *
     * @throws RuntimeException ({@code DistributedTimeoutException}) naming the missing keys
     */
    void waitFor(String[] keys, long timeoutMs);
}

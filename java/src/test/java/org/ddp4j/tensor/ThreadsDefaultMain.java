package org.ddp4j.tensor;

/** Prints {@code threads=N}, this JVM's default intra-op thread count; ThreadsTest runs it under chosen environments. */
public final class ThreadsDefaultMain {
    private ThreadsDefaultMain() {}

    public static void main(String[] args) {
        System.out.println("threads=" + Threads.getNumThreads());
    }
}

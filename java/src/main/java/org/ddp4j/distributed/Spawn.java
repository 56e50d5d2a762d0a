package org.ddp4j.distributed;

import java.io.PrintStream;
import java.time.Duration;
import java.util.List;

/**
 * The old home of {@link org.ddp4j.multiprocessing.Spawn}, kept so that code importing
 * {@code org.ddp4j.distributed.Spawn} still compiles: every method hands over to the new class.
 *
 * @deprecated spawning lives in {@code org.ddp4j.multiprocessing}, as PyTorch's
 *     {@code torch.multiprocessing.spawn}: import {@code org.ddp4j.multiprocessing.Spawn}
 */
@Deprecated
public final class Spawn {
    /** @deprecated see the class comment */
    @Deprecated
    public static final Duration DEFAULT_STOP_GRACE = org.ddp4j.multiprocessing.Spawn.DEFAULT_STOP_GRACE;

    private final org.ddp4j.multiprocessing.Spawn spawn;

    private Spawn(org.ddp4j.multiprocessing.Spawn spawn) {
        this.spawn = spawn;
    }

    /** @deprecated see the class comment */
    @Deprecated
    public static void spawn(org.ddp4j.multiprocessing.SpawnFunction fn, int nprocs, String... args) {
        org.ddp4j.multiprocessing.Spawn.spawn(fn, nprocs, args);
    }

    /** @deprecated see the class comment */
    @Deprecated
    public static void spawn(Class<?> type, String methodName, int nprocs, String... args) {
        org.ddp4j.multiprocessing.Spawn.spawn(type, methodName, nprocs, args);
    }

    /** @deprecated see the class comment */
    @Deprecated
    public static Spawn of(org.ddp4j.multiprocessing.SpawnFunction fn) {
        return new Spawn(org.ddp4j.multiprocessing.Spawn.of(fn));
    }

    /** @deprecated see the class comment */
    @Deprecated
    public static Spawn of(Class<?> type, String methodName) {
        return new Spawn(org.ddp4j.multiprocessing.Spawn.of(type, methodName));
    }

    /** @deprecated see the class comment */
    @Deprecated
    public Spawn nprocs(int nprocs) {
        spawn.nprocs(nprocs);
        return this;
    }

    /** @deprecated see the class comment */
    @Deprecated
    public Spawn args(String... args) {
        spawn.args(args);
        return this;
    }

    /** @deprecated see the class comment */
    @Deprecated
    public Spawn args(List<String> args) {
        spawn.args(args);
        return this;
    }

    /** @deprecated see the class comment */
    @Deprecated
    public Spawn env(String name, String value) {
        spawn.env(name, value);
        return this;
    }

    /** @deprecated see the class comment */
    @Deprecated
    public Spawn rankOffset(int offset) {
        spawn.rankOffset(offset);
        return this;
    }

    /** @deprecated see the class comment */
    @Deprecated
    public Spawn stopGrace(Duration grace) {
        spawn.stopGrace(grace);
        return this;
    }

    /** @deprecated see the class comment */
    @Deprecated
    public Spawn output(PrintStream out, PrintStream err) {
        spawn.output(out, err);
        return this;
    }

    /** @deprecated see the class comment */
    @Deprecated
    public org.ddp4j.multiprocessing.SpawnContext start() {
        return spawn.start();
    }

    /** @deprecated see the class comment */
    @Deprecated
    public void run() {
        spawn.run();
    }
}

package org.ddp4j.internal;

import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * Hands the native library the DDP4J_* variables it reads, parsed and validated by {@link Setting}
 * (one policy on both sides: a switch takes 1/0, true/false, on/off, yes/no; a bad value names the
 * variable), in one canonical form the C++ side reads as is (native/src/core/settings.h): a switch
 * as {@code 1} or {@code 0}, a byte count or a number in decimal, a choice in lower case. Called
 * once, by {@link NativeLibrary#load()}, before any native call.
 */
final class NativeSettings {
    /** The flight recorder's most entries per group (native/src/comm/flight_recorder.h, kMaxEntries). */
    static final long MAX_FLIGHT_RECORDER_ENTRIES = 1L << 20;

    private static final List<String> BF16_KERNELS = List.of("auto", "avx512bf16", "widen");

    private NativeSettings() {}

    /**
     * The canonical values of the set native variables of {@code env}, as (variable, value) pairs.
     *
     * @throws IllegalStateException naming the variable, its value and what it accepts, for a bad value
     */
    static List<String[]> canonical(Map<String, String> env) {
        List<String[]> out = new ArrayList<>();
        for (Setting s : List.of(Setting.CONV_DIRECT, Setting.CPU_BF16_KERNEL, Setting.CPU_CACHE_LIMIT,
                Setting.CUDA_CACHE_LIMIT, Setting.FLIGHT_RECORDER_ENTRIES, Setting.SHM_HOST_ID)) {
            String raw = s.raw(env);
            if (raw == null) {
                continue;
            }
            String value = switch (s) {
                case CONV_DIRECT -> s.flag(env, true) ? "1" : "0";
                case CPU_BF16_KERNEL -> {
                    String v = raw.toLowerCase(Locale.ROOT);
                    if (!BF16_KERNELS.contains(v)) {
                        throw s.bad(raw, "one of auto, avx512bf16, widen");
                    }
                    yield v;
                }
                case CPU_CACHE_LIMIT, CUDA_CACHE_LIMIT -> Long.toString(s.bytes(env, 0));
                case FLIGHT_RECORDER_ENTRIES -> Long.toString(count(s, raw, MAX_FLIGHT_RECORDER_ENTRIES));
                default -> raw;
            };
            out.add(new String[] {s.variable(), value});
        }
        return out;
    }

    /** Hands {@code env}'s native settings down (validated first: a bad one throws before any is handed). */
    static void handDown(Map<String, String> env) {
        List<String[]> values = canonical(env);
        handDown(values.stream().map(v -> v[0]).toArray(String[]::new), values.stream().map(v -> v[1]).toArray(String[]::new));
    }

    private static long count(Setting s, String raw, long max) {
        try {
            long n = Long.parseLong(raw);
            if (n >= 0 && n <= max) {
                return n;
            }
        } catch (NumberFormatException e) {
            // named below
        }
        throw s.bad(raw, "a whole number in [0, " + max + "]");
    }

    private static native void handDown(String[] names, String[] values);
}

package org.ddp4j.tensor;

import java.util.Objects;

/** Where a tensor lives: {@code cpu} or {@code cuda:N}. Mirrors {@code torch.device}. */
public final class Device {
    /** Kind of device; ordinals match the native {@code ddp4j::DeviceType}. */
    public enum Type { CPU, CUDA }

    /** The CPU. */
    public static final Device CPU = new Device(Type.CPU, 0);

    private final Type type;
    private final int index;

    private Device(Type type, int index) {
        this.type = type;
        this.index = index;
    }

    /**
     * GPU number {@code index} (as numbered inside CUDA_VISIBLE_DEVICES).
     *
     * @throws IllegalArgumentException if index is negative
     */
    public static Device cuda(int index) {
        if (index < 0) {
            throw new IllegalArgumentException("CUDA device index must be >= 0, got " + index);
        }
        return new Device(Type.CUDA, index);
    }

    /**
     * Parses {@code "cpu"}, {@code "cuda"} (= cuda:0) or {@code "cuda:N"}.
     *
     * @throws IllegalArgumentException for anything else
     */
    public static Device parse(String text) {
        String t = text.trim().toLowerCase();
        if (t.equals("cpu")) {
            return CPU;
        }
        if (t.equals("cuda")) {
            return cuda(0);
        }
        if (t.startsWith("cuda:")) {
            try {
                return cuda(Integer.parseInt(t.substring(5)));
            } catch (NumberFormatException e) {
                // fall through to the error below
            }
        }
        throw new IllegalArgumentException("unknown device '" + text + "': use cpu, cuda or cuda:N");
    }

    public Type type() {
        return type;
    }

    public int index() {
        return index;
    }

    public boolean isCuda() {
        return type == Type.CUDA;
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof Device d && d.type == type && d.index == index;
    }

    @Override
    public int hashCode() {
        return Objects.hash(type, index);
    }

    @Override
    public String toString() {
        return type == Type.CPU ? "cpu" : "cuda:" + index;
    }
}

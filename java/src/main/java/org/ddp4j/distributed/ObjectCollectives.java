package org.ddp4j.distributed;

import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.ObjectInputFilter;
import java.io.ObjectInputStream;
import java.io.ObjectOutputStream;
import java.io.Serializable;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;
import org.ddp4j.internal.Setting;
import org.ddp4j.tensor.Tensor;

/**
 * Collectives of Java objects: {@code torch.distributed}'s {@code all_gather_object},
 * {@code broadcast_object_list}, {@code gather_object} and {@code scatter_object_list}, for what
 * is not a tensor (a rank's random state, its metrics, a file list). Every rank of the group must
 * call the same one, as for tensor collectives.
 *
 * <p><b>Format.</b> An object travels as its Java serialization ({@link ObjectOutputStream}): an
 * int64 tensor whose words hold the serialized bytes (little-endian, zero-padded to a multiple of
 * 8), preceded by a collective of the byte lengths so that every rank sizes its buffers. Each
 * object may take at most {@code DDP4J_OBJECT_MAX_BYTES} serialized bytes (default 64M); a larger
 * one fails on every rank, naming the rank and the size, before its bytes move. Reading back uses
 * an {@link ObjectInputFilter} with the same byte cap, depth 64 and at most a million references.
 * As with PyTorch's pickle, reading runs the classes' own deserialization code: exchange objects
 * only among the ranks of your own job (the store's secret keeps strangers out of the group).
 */
public final class ObjectCollectives {

    /** The default cap on one object's serialized bytes, when {@code DDP4J_OBJECT_MAX_BYTES} is unset. */
    public static final long DEFAULT_MAX_BYTES = 64L << 20;

    private static final int MAX_DEPTH = 64;
    private static final long MAX_REFERENCES = 1_000_000;

    private ObjectCollectives() {}

    /**
     * Every rank's {@code obj}, in rank order, on every rank. Mirrors {@code all_gather_object}.
     *
     * @param obj this rank's object (null allowed)
     * @return the group's objects, index = group rank
     * @throws IllegalArgumentException on every rank when a rank's object is not serializable or
     *     larger than the cap (named with its rank and size)
     */
    public static <T extends Serializable> List<T> allGatherObject(ProcessGroup group, T obj) {
        return allGatherObject(group, obj, maxBytes());
    }

    /** {@link #allGatherObject(ProcessGroup, Serializable)} with a cap of {@code cap} bytes an object. */
    static <T extends Serializable> List<T> allGatherObject(ProcessGroup group, T obj, long cap) {
        byte[] mine = serializeOrNull(obj);
        // Lengths first, -1 for an object that cannot be serialized: every rank refuses alike.
        long[] lengths = exchangeLengths(group, mine == null ? -1 : mine.length);
        long longest = 0;
        for (int r = 0; r < lengths.length; r++) {
            checkSize(lengths[r], cap, "allGatherObject", r);
            longest = Math.max(longest, lengths[r]);
        }
        int words = wordsFor(longest);
        if ((long) words * group.size() > Integer.MAX_VALUE - 8) {
            throw new IllegalArgumentException("allGatherObject: " + group.size() + " objects of up to " + longest
                    + " bytes do not fit one all-gather; send large data as tensors");
        }
        try (Tensor in = Tensor.ofLongs(pack(mine, words), words);
                Tensor out = Tensor.ofLongs(new long[words * group.size()], (long) words * group.size())) {
            group.allGatherIntoTensor(out, in).await();
            long[] all = out.toLongArray();
            List<T> objects = new ArrayList<>(group.size());
            for (int r = 0; r < group.size(); r++) {
                objects.add(deserialize(unpack(all, r * words, (int) lengths[r]), cap, "allGatherObject", r));
            }
            return objects;
        }
    }

    /**
     * Replaces the elements of {@code objects} on every rank by those of rank {@code src}'s list.
     * Mirrors {@code broadcast_object_list}: every rank passes a list of the same size.
     *
     * @param objects a mutable list; on {@code src} its elements are sent, elsewhere they are overwritten
     * @param src the group rank that sends
     * @throws IllegalArgumentException on every rank when {@code src}'s list cannot be serialized or
     *     is larger than the cap; on a rank whose list has another size than {@code src}'s
     */
    public static void broadcastObjectList(ProcessGroup group, List<Object> objects, int src) {
        checkRank(group, src, "broadcastObjectList", "src");
        List<Object> sent = broadcastList(group, new ArrayList<>(objects), src, "broadcastObjectList");
        if (sent.size() != objects.size()) {
            throw new IllegalArgumentException("broadcastObjectList: rank " + src + " sent " + sent.size()
                    + " objects but this rank's (" + group.rank() + ") list has " + objects.size()
                    + "; every rank must pass a list of the same size, as in PyTorch");
        }
        for (int i = 0; i < sent.size(); i++) {
            objects.set(i, sent.get(i));
        }
    }

    /**
     * Every rank's {@code obj} on rank {@code dst}, in rank order; null on the other ranks. Mirrors
     * {@code gather_object}. (Carried by an all-gather: every rank receives the bytes.)
     */
    public static <T extends Serializable> List<T> gatherObject(ProcessGroup group, T obj, int dst) {
        checkRank(group, dst, "gatherObject", "dst");
        List<T> all = allGatherObject(group, obj);
        return group.rank() == dst ? all : null;
    }

    /**
     * Rank {@code src}'s {@code inputs.get(r)} on each rank r. Mirrors {@code scatter_object_list}
     * (which returns it in a one-element output list). (Carried by a broadcast of the whole list.)
     *
     * @param inputs read on {@code src} only, one object per rank; ignored (may be null) elsewhere
     * @throws IllegalArgumentException on every rank when {@code src}'s list does not hold one
     *     object per rank, cannot be serialized or is larger than the cap
     */
    @SuppressWarnings("unchecked")
    public static <T extends Serializable> T scatterObjectList(ProcessGroup group, List<T> inputs, int src) {
        checkRank(group, src, "scatterObjectList", "src");
        List<Object> sent = broadcastList(group, group.rank() == src ? listOf(inputs, group) : null, src,
                "scatterObjectList");
        return (T) sent.get(group.rank());
    }

    private static ArrayList<Object> listOf(List<?> inputs, ProcessGroup group) {
        if (inputs == null || inputs.size() != group.size()) {
            return null; // refused on every rank by broadcastList
        }
        return new ArrayList<>(inputs);
    }

    /**
     * Rank {@code src}'s {@code list} on every rank. A length of -1 (src's list is null: wrong
     * size) or one above the cap fails every rank alike, before any object bytes move.
     */
    @SuppressWarnings("unchecked")
    private static List<Object> broadcastList(ProcessGroup group, ArrayList<Object> list, int src, String op) {
        boolean sender = group.rank() == src;
        byte[] bytes = sender && list != null ? serializeOrNull(list) : null;
        long length = sender ? (bytes == null ? -1 : bytes.length) : 0;
        try (Tensor header = Tensor.ofLongs(new long[] {length}, 1)) {
            group.broadcast(header, src).await();
            length = header.toLongArray()[0];
        }
        if (length < 0) {
            throw new IllegalArgumentException(op + ": rank " + src + "'s list "
                    + (op.equals("scatterObjectList") ? "does not hold one object per rank (" + group.size() + "), or "
                            : "") + "cannot be serialized (a class in it does not implement java.io.Serializable)");
        }
        checkSize(length, maxBytes(), op, src);
        int words = wordsFor(length);
        try (Tensor data = Tensor.ofLongs(sender ? pack(bytes, words) : new long[words], words)) {
            group.broadcast(data, src).await();
            return (List<Object>) deserialize(unpack(data.toLongArray(), 0, (int) length), maxBytes(), op, src);
        }
    }

    /** Every rank's length, by an all-gather of one int64 each. */
    private static long[] exchangeLengths(ProcessGroup group, long length) {
        try (Tensor in = Tensor.ofLongs(new long[] {length}, 1);
                Tensor out = Tensor.ofLongs(new long[group.size()], group.size())) {
            group.allGatherIntoTensor(out, in).await();
            return out.toLongArray();
        }
    }

    private static void checkRank(ProcessGroup group, int rank, String op, String role) {
        if (rank < 0 || rank >= group.size()) {
            throw new IllegalArgumentException(op + ": " + role + " rank " + rank + " is not in [0, " + group.size()
                    + ") (the group's ranks)");
        }
    }

    private static void checkSize(long length, long cap, String op, int rank) {
        if (length < 0) {
            throw new IllegalArgumentException(op + ": rank " + rank + "'s object cannot be serialized (a class in it"
                    + " does not implement java.io.Serializable); pass objects that do");
        }
        if (length > cap) {
            throw new IllegalArgumentException(op + ": rank " + rank + "'s object takes " + length
                    + " serialized bytes, more than " + Setting.OBJECT_MAX_BYTES.variable() + "=" + cap
                    + "; send large data as tensors, or raise the cap on every rank");
        }
    }

    /** The Java serialization of {@code obj}, or null when it cannot be serialized. */
    private static byte[] serializeOrNull(Object obj) {
        ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        try (ObjectOutputStream out = new ObjectOutputStream(bytes)) {
            out.writeObject(obj);
        } catch (IOException e) {
            return null;
        }
        return bytes.toByteArray();
    }

    @SuppressWarnings("unchecked")
    private static <T> T deserialize(byte[] bytes, long cap, String op, int rank) {
        try (ObjectInputStream in = new ObjectInputStream(new ByteArrayInputStream(bytes))) {
            in.setObjectInputFilter(ObjectInputFilter.Config.createFilter(
                    "maxbytes=" + cap + ";maxdepth=" + MAX_DEPTH + ";maxrefs=" + MAX_REFERENCES + ";maxarray=" + cap));
            return (T) in.readObject();
        } catch (IOException | ClassNotFoundException e) {
            throw new IllegalArgumentException(op + ": cannot read rank " + rank + "'s object: " + e
                    + " (is its class on this rank's class path, in the same version?)", e);
        }
    }

    private static long maxBytes() {
        return Setting.OBJECT_MAX_BYTES.bytes(System.getenv(), DEFAULT_MAX_BYTES);
    }

    private static int wordsFor(long bytes) {
        return (int) Math.max(1, (bytes + 7) / 8);
    }

    private static long[] pack(byte[] bytes, int words) {
        ByteBuffer buffer = ByteBuffer.allocate(words * 8).order(java.nio.ByteOrder.LITTLE_ENDIAN);
        buffer.put(bytes).rewind(); // the whole buffer: the last word's padding is zeros
        long[] out = new long[words];
        buffer.asLongBuffer().get(out);
        return out;
    }

    private static byte[] unpack(long[] words, int from, int length) {
        ByteBuffer buffer = ByteBuffer.allocate(wordsFor(length) * 8).order(java.nio.ByteOrder.LITTLE_ENDIAN);
        for (int i = 0; i < wordsFor(length); i++) {
            buffer.putLong(words[from + i]);
        }
        byte[] out = new byte[length];
        buffer.flip();
        buffer.get(out);
        return out;
    }
}

package org.ddp4j.distributed.optim;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.ddp4j.distributed.ProcessGroup;
import org.ddp4j.tensor.DType;
import org.ddp4j.tensor.Tensor;

/**
 * Sends one parameter's optimizer state (named tensors of any shape and dtype) from its owner to
 * every rank with broadcasts alone: the header's length, the header (each entry's dtype, shape and
 * name as int64 values), then each tensor. The receivers learn what to allocate from the header.
 */
final class StateBroadcast {
    private StateBroadcast() {}

    /**
     * A collective: every rank of {@code group} calls it with the same {@code src}. On {@code src},
     * {@code entries} is the state to send (left as it is); elsewhere it is ignored.
     *
     * @param keep whether this rank keeps the result: then it gets copies outside any scope (the
     *     caller closes them), else an empty map
     */
    static Map<String, Tensor> broadcast(ProcessGroup group, int src, Map<String, Tensor> entries, boolean keep) {
        boolean sender = group.rank() == src;
        long[] header = sender ? header(entries) : null;
        Tensor length = Tensor.ofLongs(new long[] {sender ? header.length : 0}, 1).to(group.device());
        group.broadcast(length, src).await();
        Tensor headerTensor = sender ? Tensor.ofLongs(header, header.length).to(group.device())
                : Tensor.full(0, DType.INT64, group.device(), length.toLongArray()[0]);
        group.broadcast(headerTensor, src).await();
        List<Entry> described = entries(headerTensor.toLongArray());
        Map<String, Tensor> out = new LinkedHashMap<>();
        for (Entry e : described) {
            Tensor t = sender ? entries.get(e.name).to(group.device())
                    : Tensor.full(0, e.dtype, group.device(), e.shape);
            group.broadcast(t, src).await();
            if (keep) {
                out.put(e.name, t.zerosLike().keep().copyFrom(t));
            }
        }
        return out;
    }

    private record Entry(String name, DType dtype, long[] shape) {}

    /** [count, then per entry: dtype ordinal, rank, sizes..., name length, name chars...]. */
    private static long[] header(Map<String, Tensor> entries) {
        List<Long> out = new ArrayList<>();
        out.add((long) entries.size());
        entries.forEach((name, t) -> {
            out.add((long) t.dtype().ordinal());
            out.add((long) t.shape().length);
            for (long d : t.shape()) {
                out.add(d);
            }
            out.add((long) name.length());
            name.chars().forEach(c -> out.add((long) c));
        });
        return out.stream().mapToLong(Long::longValue).toArray();
    }

    private static List<Entry> entries(long[] header) {
        List<Entry> out = new ArrayList<>();
        int at = 1;
        for (long k = 0; k < header[0]; k++) {
            DType dtype = DType.values()[(int) header[at++]];
            long[] shape = new long[(int) header[at++]];
            for (int d = 0; d < shape.length; d++) {
                shape[d] = header[at++];
            }
            StringBuilder name = new StringBuilder();
            for (long c = header[at++]; c > 0; c--) {
                name.append((char) header[at++]);
            }
            out.add(new Entry(name.toString(), dtype, shape));
        }
        return out;
    }
}

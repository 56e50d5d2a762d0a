package org.ddp4j.nn.parallel;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import org.ddp4j.nn.Module;
import org.ddp4j.tensor.DType;
import org.ddp4j.tensor.Tensor;
import org.ddp4j.tensor.Tensors;
import org.ddp4j.distributed.DistributedException;
import org.ddp4j.distributed.ProcessGroup;

/**
 * DDP's check, once at construction, that every rank wraps parameters of the same shapes with the
 * same bucket cap (PyTorch's {@code _verify_param_shape_across_processes}). Bucket layouts then
 * agree across ranks by construction; a rank that calls something else at a bucket's turn is
 * caught per step by the bucket all-reduce's fingerprint (see {@link Reducer}).
 */
final class ParameterLayout {
    private ParameterLayout() {}

    /**
     * Encodes the layout as {bucket cap, parameter count, then per parameter: rank, dims...}.
     */
    static long[] signature(List<Tensor> params, long bucketCapBytes) {
        List<Long> out = new ArrayList<>();
        out.add(bucketCapBytes);
        out.add((long) params.size());
        for (Tensor p : params) {
            long[] shape = p.shape();
            out.add((long) shape.length);
            for (long d : shape) {
                out.add(d);
            }
        }
        return out.stream().mapToLong(Long::longValue).toArray();
    }

    /**
     * Compares this rank's layout with every other rank's: one all-gather of (length, hash), and
     * only on a difference a second one of the whole signatures, to say what differs.
     *
     * @throws DistributedException naming each rank's parameter shapes if they differ
     */
    static void verifyAcrossRanks(ProcessGroup group, Module module, List<Tensor> params, long bucketCapBytes) {
        int world = group.size();
        if (world == 1) {
            return;
        }
        long[] mine = signature(params, bucketCapBytes);
        long[] summaries = allGather(group, new long[] {mine.length, Arrays.hashCode(mine)});
        int maxLength = 0;
        boolean same = true;
        for (int r = 0; r < world; r++) {
            maxLength = (int) Math.max(maxLength, summaries[2 * r]);
            same &= summaries[2 * r] == mine.length && summaries[2 * r + 1] == Arrays.hashCode(mine);
        }
        if (same) {
            return;
        }
        long[] all = allGather(group, Arrays.copyOf(mine, maxLength));
        List<String> names = new ArrayList<>();
        for (Map.Entry<String, Tensor> e : module.namedParameters().entrySet()) {
            if (params.contains(e.getValue())) {
                names.add(e.getKey());
            }
        }
        long[] minePadded = Arrays.copyOf(mine, maxLength);
        StringBuilder ranks = new StringBuilder();
        String first = "a place the signatures do not show";
        boolean found = false;
        for (int r = 0; r < world; r++) {
            long[] theirs = Arrays.copyOfRange(all, r * maxLength, (r + 1) * maxLength);
            ranks.append(r == 0 ? "" : "; ").append("rank ").append(r).append(": ").append(describe(theirs));
            if (!found && !Arrays.equals(theirs, minePadded)) {
                first = firstDifference(mine, group.rank(), theirs, r, names);
                found = true;
            }
        }
        throw new DistributedException("DistributedDataParallel on rank " + group.rank() + ": the ranks' models differ,"
                + " first at " + first + ". Every rank must wrap the same model (parameters of the same shapes, in the same"
                + " order, with the same requiresGrad) and the same bucket cap. All ranks: " + ranks + "; this rank's"
                + " parameters are " + names);
    }

    /**
     * Where two signatures first differ, naming this rank's parameter: "parameter 61 (fc.weight):
     * [10, 512] on rank 0, [11, 512] on rank 1", or the bucket caps, or the parameter counts.
     */
    static String firstDifference(long[] mine, int myRank, long[] theirs, int theirRank, List<String> myNames) {
        if (mine[0] != theirs[0]) {
            return "the bucket cap: " + mine[0] + " B on rank " + myRank + ", " + theirs[0] + " B on rank " + theirRank;
        }
        List<long[]> a = shapes(mine), b = shapes(theirs);
        for (int i = 0; i < Math.min(a.size(), b.size()); i++) {
            if (!Arrays.equals(a.get(i), b.get(i))) {
                String name = i < myNames.size() ? " (" + myNames.get(i) + " here)" : "";
                return "parameter " + i + name + ": " + Arrays.toString(a.get(i)) + " on rank " + myRank + ", "
                        + Arrays.toString(b.get(i)) + " on rank " + theirRank;
            }
        }
        return "the parameter count: " + a.size() + " on rank " + myRank + ", " + b.size() + " on rank " + theirRank;
    }

    /** The parameter shapes of a signature (a signature padded with zeros by the all-gather ends where its count says). */
    private static List<long[]> shapes(long[] signature) {
        List<long[]> out = new ArrayList<>();
        int at = 2;
        for (int i = 0; i < signature[1] && at < signature.length; i++) {
            int rank = (int) signature[at++];
            out.add(Arrays.copyOfRange(signature, at, Math.min(signature.length, at + rank)));
            at += rank;
        }
        return out;
    }

    private static long[] allGather(ProcessGroup group, long[] values) {
        try (var scope = Tensors.scope()) {
            Tensor in = Tensor.ofLongs(values, values.length).to(group.device());
            Tensor out = Tensor.full(0, DType.INT64, group.device(), (long) values.length * group.size());
            group.allGatherIntoTensor(out, in).await();
            return out.toLongArray();
        }
    }

    /** "2 parameters with shapes [2, 2], [2], bucket cap 26214400 B". */
    static String describe(long[] signature) {
        int count = (int) signature[1];
        StringBuilder s = new StringBuilder().append(count).append(count == 1 ? " parameter" : " parameters");
        List<long[]> shapes = shapes(signature);
        for (int i = 0; i < shapes.size(); i++) {
            s.append(i == 0 ? " with shapes " : ", ").append(Arrays.toString(shapes.get(i)));
        }
        return s.append(", bucket cap ").append(signature[0]).append(" B").toString();
    }
}

package org.ddp4j.distributed;

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import org.ddp4j.tensor.Device;
import org.ddp4j.tensor.Tensor;

/**
 * One rank's membership of a group of processes that run collectives together. Mirrors
 * {@code torch.distributed.ProcessGroup}. Obtain the default group through
 * {@link Distributed#initProcessGroup}, or build one directly, e.g. {@link ProcessGroupGloo}.
 *
 * <p>Every collective is asynchronous: it queues the operation and returns a {@link Work} at
 * once; the tensors may be read only after {@link Work#await()}. Collectives of one group run in
 * issue order. Every rank must issue the same collectives in the same order, with tensors of the
 * same dtype and number of elements; a rank that does not gets a {@link DistributedException}
 * from {@link Work#await()} naming what each rank passed (not a hang, not a crash).
 *
 * <p>Tensors are used in place and must stay open until the Work is awaited (the native storage
 * is kept alive regardless). Supported dtypes: float32, int64, bfloat16 and float16 (AVG on the
 * floating ones only). Gloo reduces bfloat16 and float16 in float32 and rounds once at the end
 * (as DeepSpeed's CPU all-reduce does) over shared memory and its small all-reduce; Gloo's ring
 * (tensors over 256 KiB, and between hosts) sends its partial sums in the 16-bit type, rounding
 * once per hop: exact for two ranks, within about (p - 1) half-ulps of the sum of |inputs| for p
 * ranks. NCCL reduces them natively. Broadcast, allGather and send/recv move the bits unchanged.
 * The Gloo backend needs CPU tensors. Local argument errors (wrong device or dtype, output sizes that cannot fit) throw
 * {@link IllegalArgumentException} at the call; calls on a closed group throw
 * {@link IllegalStateException}.
 *
 * <p>Ranks passed to a group's methods ({@code src}, {@code dst}) are ranks <em>in this group</em>,
 * in {@code [0, size())}, as for the methods of PyTorch's ProcessGroup object; a subgroup made by
 * {@link Distributed#newGroup} maps them to the default group's ranks with {@link #ranks()}.
 */
public abstract class ProcessGroup implements AutoCloseable {
    /** Subclassed by the backends in this package only. */
    ProcessGroup() {}

    /** This process's rank in the group, in {@code [0, size())}. Mirrors {@code ProcessGroup.rank()}. */
    public abstract int rank();

    /** The number of ranks in the group (the world size). Mirrors {@code ProcessGroup.size()}. */
    public abstract int size();

    /** The backend's name: {@code "gloo"} or {@code "nccl"}. Mirrors {@code ProcessGroup.name()}. */
    public abstract String backend();

    /**
     * The default group's ranks of this group's members, in group-rank order: group rank r is
     * default-group rank {@code ranks().get(r)}. For a group made without {@link Distributed#newGroup}:
     * {@code [0, size())}. Mirrors {@code get_process_group_ranks(group)}.
     */
    public List<Integer> ranks() {
        List<Integer> all = new ArrayList<>(size());
        for (int r = 0; r < size(); r++) {
            all.add(r);
        }
        return Collections.unmodifiableList(all);
    }

    /**
     * Whether this process belongs to the group: false only for what {@link Distributed#newGroup}
     * returns on a rank not in its list (PyTorch's {@code GroupMember.NON_GROUP_MEMBER}), whose
     * {@link #rank()} is -1 and whose collectives throw {@link IllegalStateException}.
     */
    public boolean isMember() {
        return true;
    }

    /**
     * Reduces {@code tensor} element-wise over all ranks, in place: when the Work completes, every
     * rank's tensor holds the result. Mirrors {@code all_reduce(tensor, op, async_op=True)}.
     *
     * @param tensor any dtype: float32, int64, bfloat16, float16 (AVG: not int64); same number of elements on every rank
     * @throws IllegalArgumentException for an unsupported dtype or device, or AVG on int64
     */
    public abstract Work allReduce(Tensor tensor, ReduceOp op);

    /** {@link #allReduce(Tensor, ReduceOp)} with {@link ReduceOp#SUM}. */
    public Work allReduce(Tensor tensor) {
        return allReduce(tensor, ReduceOp.SUM);
    }

    /**
     * The device whose tensors this group takes: {@link Device#CPU} for Gloo, the group's GPU for
     * NCCL ({@link ProcessGroupNccl#device()}).
     */
    public Device device() {
        return Device.CPU;
    }

    /**
     * DDP's all-reduce of its bucket {@code bucket} (0-based) of {@code buckets}: like
     * {@link #allReduce(Tensor, ReduceOp)}, but the backend may replace its up-front check that all
     * ranks pass the same collective (a round trip) by a fingerprint that travels with the data
     * (Gloo: a rank whose peer called something else fails with a {@link DistributedException}
     * naming both calls, e.g. "allReduce(AVG) of 1,234 float32 elements (#57, DDP bucket 2 of 3)"),
     * and with {@code runInline} it may run the collective on the calling thread when nothing else
     * is queued, returning a completed Work. Public for DDP's {@code Reducer} (in
     * {@code org.ddp4j.nn.parallel}); not meant for user code.
     */
    public Work allReduceBucket(Tensor tensor, ReduceOp op, boolean runInline, int bucket, int buckets) {
        return allReduce(tensor, op);
    }

    /**
     * Copies rank {@code src}'s {@code tensor} into {@code tensor} on every other rank. Mirrors
     * {@code broadcast(tensor, src, async_op=True)}.
     *
     * @param tensor same dtype and number of elements on every rank
     * @param src the rank whose tensor is sent, in {@code [0, size())}
     * @throws IllegalArgumentException if {@code src} is out of range
     */
    public abstract Work broadcast(Tensor tensor, int src);

    /**
     * Gathers every rank's {@code input} into {@code outputs}: {@code outputs.get(r)} receives rank
     * r's input. Mirrors {@code all_gather(tensor_list, tensor, async_op=True)}.
     *
     * @param outputs {@link #size()} tensors, each with the input's dtype and number of elements
     *     (shapes may differ); written when the Work completes. One of them may be {@code input}.
     * @param input same dtype and number of elements on every rank
     * @throws IllegalArgumentException if the list has the wrong length or an output does not fit
     */
    public abstract Work allGather(List<Tensor> outputs, Tensor input);

    /**
     * Gathers every rank's {@code input} into one tensor: rank r's elements occupy
     * {@code [r * input.numel(), (r + 1) * input.numel())} of {@code output}. Mirrors
     * {@code all_gather_into_tensor(output, input, async_op=True)}.
     *
     * @param output {@code size() * input.numel()} elements of the input's dtype (any shape)
     * @throws IllegalArgumentException if the output has the wrong dtype or size
     */
    public abstract Work allGatherIntoTensor(Tensor output, Tensor input);

    /**
     * Completes once every rank has entered the barrier. Mirrors {@code barrier(async_op=True)}.
     */
    public abstract Work barrier();

    /**
     * Reduces every rank's {@code tensor} element-wise into rank {@code dst}'s {@code tensor}, in
     * place there; the other ranks' tensors are left as they were. Mirrors
     * {@code reduce(tensor, dst, op, async_op=True)}.
     *
     * @param tensor any dtype: float32, int64, bfloat16, float16 (AVG: not int64); same dtype and number of elements on every rank
     * @param dst the rank that receives the result, in {@code [0, size())}
     * @throws IllegalArgumentException for {@code dst} out of range, an unsupported dtype or device, or AVG on int64
     */
    public abstract Work reduce(Tensor tensor, int dst, ReduceOp op);

    /** {@link #reduce(Tensor, int, ReduceOp)} with {@link ReduceOp#SUM}. */
    public Work reduce(Tensor tensor, int dst) {
        return reduce(tensor, dst, ReduceOp.SUM);
    }

    /**
     * Reduces every rank's {@code inputs} element-wise and leaves the reduction of everybody's
     * {@code inputs.get(rank())} in {@code output}. Mirrors
     * {@code reduce_scatter(output, input_list, op, async_op=True)}.
     *
     * @param output n elements (any shape), written when the Work completes
     * @param inputs {@link #size()} tensors, each with the output's dtype and n elements; read, not changed
     * @throws IllegalArgumentException if the list has the wrong length or an input does not match the output
     */
    public abstract Work reduceScatter(Tensor output, List<Tensor> inputs, ReduceOp op);

    /**
     * Reduces every rank's {@code input} (size() x n elements) element-wise and leaves elements
     * {@code [rank() * n, (rank() + 1) * n)} of the result in {@code output} (n elements). Mirrors
     * {@code reduce_scatter_tensor(output, input, op, async_op=True)}.
     *
     * @param output n elements of the input's dtype (any shape)
     * @param input {@code size() * output.numel()} elements; read, not changed
     * @throws IllegalArgumentException if the sizes or dtypes do not fit
     */
    public abstract Work reduceScatterTensor(Tensor output, Tensor input, ReduceOp op);

    /**
     * Starts sending {@code tensor} to rank {@code dst}, whose {@link #recv} with this rank as
     * source and the same tag receives it. Not a collective: only the two ranks take part. Sends
     * from one rank to another with one tag are received in the order they were sent; different
     * tags are matched independently. Gloo: the two ranks first compare dtype and size (a mismatch
     * fails both with a {@link DistributedException} naming both calls, and nothing moves); NCCL
     * ignores tags and a mismatch ends at the timeout, as in PyTorch. The Work completes once the
     * data has left {@code tensor}. Mirrors {@code isend(tensor, dst, tag)}.
     *
     * @param dst a rank of this group other than this one
     * @param tag in {@code [0, 65536)}
     * @throws IllegalArgumentException for {@code dst} out of range or this rank, or a bad tag
     */
    public abstract Work send(Tensor tensor, int dst, int tag);

    /** {@link #send(Tensor, int, int)} with tag 0. */
    public Work send(Tensor tensor, int dst) {
        return send(tensor, dst, 0);
    }

    /**
     * Starts receiving into {@code tensor} what rank {@code src} sends with {@code tag} (see
     * {@link #send(Tensor, int, int)}); read it after {@link Work#await()}. Mirrors
     * {@code irecv(tensor, src, tag)} (a source is required).
     *
     * @throws IllegalArgumentException for {@code src} out of range or this rank, or a bad tag
     */
    public abstract Work recv(Tensor tensor, int src, int tag);

    /** {@link #recv(Tensor, int, int)} with tag 0. */
    public Work recv(Tensor tensor, int src) {
        return recv(tensor, src, 0);
    }

    /**
     * Leaves the group: collectives queued but not started fail, the running one is waited for
     * (at most the group's timeout), connections close. Idempotent. Mirrors
     * {@code destroy_process_group(group)}.
     */
    @Override
    public abstract void close();
}

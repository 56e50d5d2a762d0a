package org.ddp4j.distributed;

import org.ddp4j.internal.MemoryPlan;
import java.time.Duration;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;
import org.ddp4j.cuda.Cuda;
import org.ddp4j.distributed.store.FileStore;
import org.ddp4j.distributed.store.Store;
import org.ddp4j.distributed.store.TcpStore;
import org.ddp4j.tensor.Device;
import org.ddp4j.tensor.Tensor;
import org.ddp4j.multiprocessing.Spawn;
import org.ddp4j.multiprocessing.SpawnFunction;
import org.ddp4j.distributed.environment.ClusterEnvironment;
import org.ddp4j.distributed.rendezvous.InitKeySpace;
import org.ddp4j.distributed.rendezvous.InitMethod;
import org.ddp4j.distributed.rendezvous.ProcessIdentity;

/**
 * The default process group and collectives on it: ddp4j's {@code torch.distributed} module.
 *
 * <pre>{@code
 * Distributed.initProcessGroup("gloo");            // env://, as under scripts/ddp4j-run
 * Distributed.allReduce(grad, ReduceOp.SUM);         // blocks, as dist.all_reduce; allReduceAsync returns the Work
 * Distributed.destroyProcessGroup();
 * }</pre>
 *
 * <p>Init methods: {@code env://} reads MASTER_ADDR, MASTER_PORT, WORLD_SIZE and RANK (set by
 * {@code scripts/ddp4j-run}); rank 0 hosts a {@link TcpStore} at MASTER_ADDR:MASTER_PORT and the
 * others connect to it. {@code tcp://host:port} does the same with an explicit address (rank and
 * world size from the arguments, the URL's {@code ?rank=&world_size=}, or the environment).
 * {@code file:///path} rendezvous through a {@link FileStore} on a file all ranks can reach (use a
 * new file per job). Under the launcher ({@code DDP4J_AGENT_STORE=1}) the launcher already hosts
 * the store, so every rank connects as a client and works under the prefix
 * {@code ddp4j/worker/<DDP4J_RESTART_COUNT>}. Each init then works in its own key space
 * ({@code ddp4j/init/<n>/} for the n-th init of every rank on that store, see {@link InitKeySpace}),
 * so a job may initialise again after {@link #destroyProcessGroup()}, in the same JVM or in a new
 * one under the same launcher, as long as all ranks do so the same number of times.
 *
 * <p>Backends: {@code gloo} (CPU tensors) and {@code nccl} (GPU tensors, one GPU per process:
 * cuda:LOCAL_RANK; see {@link ProcessGroupNccl}).
 *
 * <p>The collectives' overloads that end in a {@code ProcessGroup group} argument are PyTorch's
 * {@code group=} keyword: they run on that group (e.g. one from {@link #newGroup}), take
 * {@code src}/{@code dst} as default-group ranks as PyTorch does, and on a rank outside the group
 * do nothing and return a completed Work, as PyTorch returns without running. (A group's own
 * methods, e.g. {@code group.broadcast(t, 0)}, take group ranks instead.)
 * The static methods are thread-safe.
 */
public final class Distributed {
    /** The default timeout of {@link #initProcessGroup(String)}: 30 minutes, as in PyTorch; DDP4J_TIMEOUT_SECONDS overrides it. */
    public static final Duration DEFAULT_TIMEOUT = ProcessGroupGloo.DEFAULT_TIMEOUT;

    private static ProcessGroup defaultGroup;
    private static Subgroups subgroups;

    private Distributed() {}

    /**
     * {@code initProcessGroup(backend, "env://", -1, -1, timeout)} with the default timeout (30 min,
     * or {@code DDP4J_TIMEOUT_SECONDS}). Mirrors {@code init_process_group(backend)}.
     *
     * @throws IllegalStateException if MASTER_ADDR, MASTER_PORT, WORLD_SIZE or RANK is missing
     *     (the message names every missing variable), or a group is already initialised
     * @see #initProcessGroup(String, String, int, int, Duration)
     */
    public static ProcessGroup initProcessGroup(String backend) {
        return initProcessGroup(backend, "env://", -1, -1, null);
    }

    /** {@code initProcessGroup(backend, initMethod, worldSize, rank, null)}: the default timeout. */
    public static ProcessGroup initProcessGroup(String backend, String initMethod, int worldSize, int rank) {
        return initProcessGroup(backend, initMethod, worldSize, rank, null);
    }

    /**
     * Joins the default process group; blocks until all {@code worldSize} ranks have joined.
     * Mirrors {@code torch.distributed.init_process_group(backend, init_method, timeout,
     * world_size, rank)}.
     *
     * @param backend {@code "gloo"} (null means gloo) or {@code "nccl"} (on cuda:LOCAL_RANK)
     * @param initMethod {@code "env://"} (null means env://), {@code "tcp://host:port"} or
     *     {@code "file:///path"}
     * @param worldSize the number of ranks, or -1 for WORLD_SIZE (env://, or when the URL has none)
     * @param rank this process's rank in {@code [0, worldSize)}, or -1 for RANK
     * @param timeout how long to wait for the other ranks and for each collective; null for the
     *     default (30 min, or {@code DDP4J_TIMEOUT_SECONDS})
     * @return the default group (also available from {@link #defaultGroup()})
     * @throws IllegalStateException if env:// variables are missing or malformed, a default group
     *     already exists, or the backend is nccl and there is no GPU ("no CUDA device"), no CUDA
     *     library or no NCCL (the message says where NCCL comes from)
     * @throws IllegalArgumentException for an unknown backend or init method, or a rank outside the world
     * @throws DistributedTimeoutException naming the ranks that did not join in time
     * @throws DistributedException if the store cannot be opened (e.g. rank 0's port is in use),
     *     the peers cannot be connected, or a peer has initialised more groups on this store than
     *     this rank (ranks must init in lock-step), two processes claim the same rank ("RANK 1 was
     *     claimed twice: by pid ... and by pid ..."), or ranks were started with different world sizes
     *     ("WORLD_SIZE mismatch: rank 0 (...) started with WORLD_SIZE=2, rank 1 (...) with WORLD_SIZE=3")
     */
    public static synchronized ProcessGroup initProcessGroup(String backend, String initMethod, int worldSize, int rank,
            Duration timeout) {
        if (defaultGroup != null) {
            throw new IllegalStateException("the default process group is already initialized (rank "
                    + defaultGroup.rank() + " of " + defaultGroup.size() + "); call destroyProcessGroup() first");
        }
        MemoryPlan.recordAvailableAtStart(); // before the model exists: the budget each rank plans with
        ErrorFile.installHandler(); // a worker of a launcher records an uncaught failure for it
        World world = World.create(backend, initMethod, worldSize, rank, timeout, System.getenv());
        defaultGroup = world.group();
        subgroups = world.subgroups();
        return defaultGroup;
    }

    /**
     * Creates a group without making it the default: the work of {@link #initProcessGroup}, with
     * the environment passed in (tests; several ranks as threads of one JVM).
     */
    static ProcessGroup createProcessGroup(String backend, String initMethod, int worldSize, int rank,
            Duration timeout, Map<String, String> env) {
        return World.create(backend, initMethod, worldSize, rank, timeout, env).group();
    }

    /** Whether the default group exists. Mirrors {@code is_initialized()}. */
    public static synchronized boolean isInitialized() {
        return defaultGroup != null;
    }

    /**
     * The default group. Mirrors {@code torch.distributed.group.WORLD}.
     *
     * @throws IllegalStateException if {@link #initProcessGroup} has not been called
     */
    public static synchronized ProcessGroup defaultGroup() {
        if (defaultGroup == null) {
            throw new IllegalStateException("the default process group has not been initialized: call"
                    + " Distributed.initProcessGroup(\"gloo\") first (under the launcher, scripts/ddp4j-run or"
                    + " org.ddp4j.launch.Launcher, or with MASTER_ADDR,"
                    + " MASTER_PORT, WORLD_SIZE and RANK set)");
        }
        return defaultGroup;
    }

    /**
     * This process's rank in the default group. Mirrors {@code get_rank()}.
     *
     * @throws IllegalStateException if not initialized
     */
    public static int getRank() {
        return defaultGroup().rank();
    }

    /**
     * The default group's size. Mirrors {@code get_world_size()}.
     *
     * @throws IllegalStateException if not initialized
     */
    public static int getWorldSize() {
        return defaultGroup().size();
    }

    /**
     * The default group's backend, e.g. {@code "gloo"}. Mirrors {@code get_backend()}.
     *
     * @throws IllegalStateException if not initialized
     */
    public static String getBackend() {
        return defaultGroup().backend();
    }

    /**
     * Closes the default group (see {@link ProcessGroup#close()}) and the store it opened; does
     * nothing if there is none. Mirrors {@code destroy_process_group()}.
     */
    public static synchronized void destroyProcessGroup() {
        if (defaultGroup == null) {
            return;
        }
        ProcessGroup g = defaultGroup;
        Subgroups s = subgroups;
        defaultGroup = null;
        subgroups = null;
        try {
            s.close();
        } finally {
            g.close();
        }
    }

    /**
     * Closes {@code group}: the default group (as {@link #destroyProcessGroup()}, with its
     * subgroups) or one subgroup. Mirrors {@code destroy_process_group(group)}.
     */
    public static synchronized void destroyProcessGroup(ProcessGroup group) {
        if (group == defaultGroup) {
            destroyProcessGroup();
        } else if (group != null) {
            group.close();
        }
    }

    /**
     * {@code newGroup(ranks, null, null)}: the default group's timeout and backend. Mirrors
     * {@code new_group(ranks)}.
     *
     * @see #newGroup(List, Duration, String)
     */
    public static ProcessGroup newGroup(List<Integer> ranks) {
        return newGroup(ranks, null, null);
    }

    /**
     * Makes a process group of the default group's ranks {@code ranks}; blocks until every member
     * has called it. Group rank r is the r-th smallest of {@code ranks} (as PyTorch, which sorts
     * them); {@link ProcessGroup#ranks()} maps back. The group has its own connections, collective
     * numbering and mismatch checks, and takes every collective the default group does, plus
     * DistributedDataParallel through {@link org.ddp4j.nn.parallel.DistributedDataParallelOptions#processGroup}. Mirrors
     * {@code new_group(ranks, timeout, backend)}, with one difference for the better: only the
     * members need to call it (PyTorch by default needs every rank of the default group to call
     * every new_group). Members must call it with the same list as often; groups are matched by
     * their list, so groups of different ranks may be made in any order. On a rank not in
     * {@code ranks} it returns at once a group whose {@link ProcessGroup#isMember()} is false and
     * whose collectives throw (PyTorch's {@code GroupMember.NON_GROUP_MEMBER}). Closed by
     * {@link #destroyProcessGroup()} with the default group, or alone by
     * {@link ProcessGroup#close()}.
     *
     * @param ranks default-group ranks, in any order, no duplicates; null: all of them
     * @param timeout the group's rendezvous and per-collective timeout; null: the default group's
     * @param backend {@code "gloo"} or {@code "nccl"}; null: the default group's
     * @throws IllegalStateException if the default group is not initialised
     * @throws IllegalArgumentException for an empty list, a rank outside the default group, a
     *     duplicate, or an unknown backend
     * @throws DistributedTimeoutException naming the members that did not call it in time
     */
    public static ProcessGroup newGroup(List<Integer> ranks, Duration timeout, String backend) {
        Subgroups s;
        synchronized (Distributed.class) {
            defaultGroup();
            s = subgroups;
        }
        return s.newGroup(ranks, timeout, backend);
    }

    /**
     * This process's rank in {@code group}, or -1 if it is not a member. Mirrors {@code get_rank(group)}.
     */
    public static int getRank(ProcessGroup group) {
        return group.rank();
    }

    /** The number of ranks in {@code group}. Mirrors {@code get_world_size(group)}. */
    public static int getWorldSize(ProcessGroup group) {
        return group.size();
    }

    /**
     * The default-group rank of {@code group}'s rank {@code groupRank}. Mirrors
     * {@code get_global_rank(group, group_rank)}.
     *
     * @throws IllegalArgumentException if {@code groupRank} is not in {@code [0, group.size())}
     */
    public static int getGlobalRank(ProcessGroup group, int groupRank) {
        List<Integer> ranks = group.ranks();
        if (groupRank < 0 || groupRank >= ranks.size()) {
            throw new IllegalArgumentException("group rank " + groupRank + " is not in [0, " + ranks.size() + ")");
        }
        return ranks.get(groupRank);
    }

    /**
     * {@code group}'s rank of default-group rank {@code globalRank}. Mirrors
     * {@code get_group_rank(group, global_rank)}.
     *
     * @throws IllegalArgumentException if that rank is not a member of {@code group}
     */
    public static int getGroupRank(ProcessGroup group, int globalRank) {
        int r = group.ranks().indexOf(globalRank);
        if (r < 0) {
            throw new IllegalArgumentException("rank " + globalRank + " is not a member of the group " + group.ranks());
        }
        return r;
    }

    /** The default-group ranks of {@code group}'s members. Mirrors {@code get_process_group_ranks(group)}. */
    public static List<Integer> getProcessGroupRanks(ProcessGroup group) {
        return group.ranks();
    }

    /**
     * Reduces {@code tensor} over all ranks of the default group, in place, and returns when the
     * result is in it. Mirrors {@code all_reduce(tensor, op)} (PyTorch's default
     * {@code async_op=False}): on a GPU, as PyTorch's, the return orders the device's stream after
     * the collective rather than blocking the host, so later kernels and host reads see the result.
     *
     * @param tensor any dtype: float32, int64, bfloat16, float16 (AVG: not int64), the same number of elements on every rank
     * @throws IllegalStateException if the default group is not initialised
     * @throws IllegalArgumentException for an unsupported dtype or device, or AVG on int64
     * @throws DistributedException if the ranks disagree on the collective or a peer fails
     * @throws DistributedTimeoutException if the collective does not finish within the group's timeout
     * @see #allReduceAsync(Tensor, ReduceOp)
     */
    public static void allReduce(Tensor tensor, ReduceOp op) {
        allReduceAsync(tensor, op).await();
    }

    /** {@link #allReduce(Tensor, ReduceOp)} with {@link ReduceOp#SUM}. Mirrors {@code all_reduce(tensor)}. */
    public static void allReduce(Tensor tensor) {
        allReduce(tensor, ReduceOp.SUM);
    }

    /**
     * {@link ProcessGroup#allReduce(Tensor, ReduceOp)} on the default group: returns at once; read
     * the tensor after {@link Work#await()}. Mirrors {@code all_reduce(tensor, op, async_op=True)}.
     *
     * @throws IllegalStateException if the default group is not initialised
     * @throws IllegalArgumentException for an unsupported dtype or device, or AVG on int64
     */
    public static Work allReduceAsync(Tensor tensor, ReduceOp op) {
        return defaultGroup().allReduce(tensor, op);
    }

    /** {@link #allReduceAsync(Tensor, ReduceOp)} with {@link ReduceOp#SUM}. */
    public static Work allReduceAsync(Tensor tensor) {
        return allReduceAsync(tensor, ReduceOp.SUM);
    }

    /**
     * Copies rank {@code src}'s {@code tensor} into {@code tensor} on every rank of the default
     * group and returns when it is there. Mirrors {@code broadcast(tensor, src)}.
     *
     * @param tensor the same dtype and number of elements on every rank
     * @param src the sending rank, in {@code [0, world size)}
     * @throws IllegalArgumentException if {@code src} is out of range
     * @throws DistributedException, DistributedTimeoutException as {@link #allReduce(Tensor, ReduceOp)}
     */
    public static void broadcast(Tensor tensor, int src) {
        broadcastAsync(tensor, src).await();
    }

    /** {@link ProcessGroup#broadcast(Tensor, int)} on the default group. Mirrors {@code broadcast(tensor, src, async_op=True)}. */
    public static Work broadcastAsync(Tensor tensor, int src) {
        return defaultGroup().broadcast(tensor, src);
    }

    /**
     * Gathers every rank's {@code input} into {@code outputs} ({@code outputs.get(r)} gets rank
     * r's) and returns when they are there. Mirrors {@code all_gather(tensor_list, tensor)}.
     *
     * @param outputs world-size tensors, each with the input's dtype and number of elements
     * @throws IllegalArgumentException if the list has the wrong length or an output does not fit
     * @throws DistributedException, DistributedTimeoutException as {@link #allReduce(Tensor, ReduceOp)}
     */
    public static void allGather(List<Tensor> outputs, Tensor input) {
        allGatherAsync(outputs, input).await();
    }

    /** {@link ProcessGroup#allGather(List, Tensor)} on the default group. Mirrors {@code all_gather(tensor_list, tensor, async_op=True)}. */
    public static Work allGatherAsync(List<Tensor> outputs, Tensor input) {
        return defaultGroup().allGather(outputs, input);
    }

    /**
     * Gathers every rank's {@code input} into {@code output} (rank r's elements at
     * {@code [r * input.numel(), (r + 1) * input.numel())}) and returns {@code output} once they
     * are there. Mirrors {@code all_gather_into_tensor(output, input)}.
     *
     * @param output world size x {@code input.numel()} elements of the input's dtype (any shape)
     * @throws IllegalArgumentException if the output has the wrong dtype or size
     * @throws DistributedException, DistributedTimeoutException as {@link #allReduce(Tensor, ReduceOp)}
     */
    public static Tensor allGatherIntoTensor(Tensor output, Tensor input) {
        allGatherIntoTensorAsync(output, input).await();
        return output;
    }

    /** {@link ProcessGroup#allGatherIntoTensor(Tensor, Tensor)} on the default group. Mirrors {@code all_gather_into_tensor(..., async_op=True)}. */
    public static Work allGatherIntoTensorAsync(Tensor output, Tensor input) {
        return defaultGroup().allGatherIntoTensor(output, input);
    }

    /** Every rank's {@code obj} on every rank, in rank order, over the default group; see {@link ObjectCollectives}. Mirrors {@code all_gather_object}. */
    public static <T extends java.io.Serializable> List<T> allGatherObject(T obj) {
        return ObjectCollectives.allGatherObject(defaultGroup(), obj);
    }

    /** Rank {@code src}'s list elements into {@code objects} on every rank; see {@link ObjectCollectives}. Mirrors {@code broadcast_object_list}. */
    public static void broadcastObjectList(List<Object> objects, int src) {
        ObjectCollectives.broadcastObjectList(defaultGroup(), objects, src);
    }

    /** Every rank's {@code obj} on rank {@code dst} (null elsewhere); see {@link ObjectCollectives}. Mirrors {@code gather_object}. */
    public static <T extends java.io.Serializable> List<T> gatherObject(T obj, int dst) {
        return ObjectCollectives.gatherObject(defaultGroup(), obj, dst);
    }

    /** Rank {@code src}'s {@code inputs.get(rank)} on each rank; see {@link ObjectCollectives}. Mirrors {@code scatter_object_list}. */
    public static <T extends java.io.Serializable> T scatterObjectList(List<T> inputs, int src) {
        return ObjectCollectives.scatterObjectList(defaultGroup(), inputs, src);
    }

    /**
     * Returns once every rank of the default group has entered the barrier (blocks the host, on
     * GPUs too). Mirrors {@code barrier()}.
     *
     * @throws DistributedException, DistributedTimeoutException as {@link #allReduce(Tensor, ReduceOp)}
     */
    public static void barrier() {
        barrierAsync().awaitBlocking();
    }

    /** {@link ProcessGroup#barrier()} on the default group. Mirrors {@code barrier(async_op=True)}. */
    public static Work barrierAsync() {
        return defaultGroup().barrier();
    }

    /**
     * Reduces every rank's {@code tensor} into rank {@code dst}'s, in place there, and returns
     * when the result is there (the other ranks' tensors are unchanged). Mirrors
     * {@code reduce(tensor, dst, op)}.
     *
     * @param dst the rank that receives the result, in {@code [0, world size)}
     * @throws IllegalArgumentException for {@code dst} out of range, an unsupported dtype or device, or AVG on int64
     * @throws DistributedException, DistributedTimeoutException as {@link #allReduce(Tensor, ReduceOp)}
     */
    public static void reduce(Tensor tensor, int dst, ReduceOp op) {
        reduceAsync(tensor, dst, op).await();
    }

    /** {@link ProcessGroup#reduce(Tensor, int, ReduceOp)} on the default group. Mirrors {@code reduce(..., async_op=True)}. */
    public static Work reduceAsync(Tensor tensor, int dst, ReduceOp op) {
        return defaultGroup().reduce(tensor, dst, op);
    }

    /**
     * Reduces every rank's {@code inputs} and leaves the reduction of everybody's
     * {@code inputs.get(rank)} in {@code output}; returns when it is there. Mirrors
     * {@code reduce_scatter(output, input_list, op)}.
     *
     * @param inputs world-size tensors, each with the output's dtype and number of elements
     * @throws IllegalArgumentException if the list has the wrong length or an input does not match
     * @throws DistributedException, DistributedTimeoutException as {@link #allReduce(Tensor, ReduceOp)}
     */
    public static void reduceScatter(Tensor output, List<Tensor> inputs, ReduceOp op) {
        reduceScatterAsync(output, inputs, op).await();
    }

    /** {@link ProcessGroup#reduceScatter(Tensor, List, ReduceOp)} on the default group. */
    public static Work reduceScatterAsync(Tensor output, List<Tensor> inputs, ReduceOp op) {
        return defaultGroup().reduceScatter(output, inputs, op);
    }

    /**
     * Reduces every rank's {@code input} (world size x n elements) and leaves this rank's block
     * of n in {@code output}; returns {@code output} once it is there. Mirrors
     * {@code reduce_scatter_tensor(output, input, op)}.
     *
     * @throws IllegalArgumentException if the sizes or dtypes do not fit
     * @throws DistributedException, DistributedTimeoutException as {@link #allReduce(Tensor, ReduceOp)}
     */
    public static Tensor reduceScatterTensor(Tensor output, Tensor input, ReduceOp op) {
        reduceScatterTensorAsync(output, input, op).await();
        return output;
    }

    /** {@link ProcessGroup#reduceScatterTensor(Tensor, Tensor, ReduceOp)} on the default group. */
    public static Work reduceScatterTensorAsync(Tensor output, Tensor input, ReduceOp op) {
        return defaultGroup().reduceScatterTensor(output, input, op);
    }

    /**
     * Sends {@code tensor} to rank {@code dst} of the default group and returns once it has left
     * (see {@link ProcessGroup#send(Tensor, int, int)}). Mirrors {@code send(tensor, dst, tag=0)}.
     *
     * @throws IllegalArgumentException for {@code dst} out of range or this rank
     * @throws DistributedException if the matching recv disagrees on dtype or size, or the peer fails
     * @throws DistributedTimeoutException if the peer does not take part within the timeout
     */
    public static void send(Tensor tensor, int dst) {
        isend(tensor, dst, 0).await();
    }

    /** {@link #send(Tensor, int)} with a tag, in {@code [0, 65536)}. Mirrors {@code send(tensor, dst, tag=tag)}. */
    public static void send(Tensor tensor, int dst, int tag) {
        isend(tensor, dst, tag).await();
    }

    /** Starts a send on the default group; see {@link ProcessGroup#send(Tensor, int, int)}. Mirrors {@code isend}. */
    public static Work isend(Tensor tensor, int dst, int tag) {
        return defaultGroup().send(tensor, dst, tag);
    }

    /** {@link #isend(Tensor, int, int)} with tag 0. */
    public static Work isend(Tensor tensor, int dst) {
        return isend(tensor, dst, 0);
    }

    /**
     * Receives into {@code tensor} what rank {@code src} sends, and returns {@code src} once it is
     * there. Mirrors {@code recv(tensor, src, tag=0)}, which returns the sender's rank.
     *
     * @throws IllegalArgumentException, DistributedException, DistributedTimeoutException as {@link #send(Tensor, int)}
     */
    public static int recv(Tensor tensor, int src) {
        return recv(tensor, src, 0);
    }

    /** {@link #recv(Tensor, int)} with a tag. */
    public static int recv(Tensor tensor, int src, int tag) {
        irecv(tensor, src, tag).await();
        return src;
    }

    /** Starts a recv on the default group; see {@link ProcessGroup#recv(Tensor, int, int)}. Mirrors {@code irecv}. */
    public static Work irecv(Tensor tensor, int src, int tag) {
        return defaultGroup().recv(tensor, src, tag);
    }

    /** {@link #irecv(Tensor, int, int)} with tag 0. */
    public static Work irecv(Tensor tensor, int src) {
        return irecv(tensor, src, 0);
    }

    // ---------------------------------------------------------------------------------------
    // PyTorch's group= keyword (see the class comment): default-group ranks, no-ops off the group.

    /** {@link #allReduce(Tensor, ReduceOp)} on {@code group}. Mirrors {@code all_reduce(tensor, op, group)}. */
    public static void allReduce(Tensor tensor, ReduceOp op, ProcessGroup group) {
        allReduceAsync(tensor, op, group).await();
    }

    /** Mirrors {@code all_reduce(tensor, op, group, async_op=True)}. */
    public static Work allReduceAsync(Tensor tensor, ReduceOp op, ProcessGroup group) {
        return onGroup(group) ? group.allReduce(tensor, op) : Work.COMPLETED;
    }

    /**
     * {@link #broadcast(Tensor, int)} on {@code group} from default-group rank {@code src}. Mirrors
     * {@code broadcast(tensor, src, group)}.
     *
     * @throws IllegalArgumentException if {@code src} is not a member of {@code group}
     */
    public static void broadcast(Tensor tensor, int src, ProcessGroup group) {
        broadcastAsync(tensor, src, group).await();
    }

    /** Mirrors {@code broadcast(tensor, src, group, async_op=True)}. */
    public static Work broadcastAsync(Tensor tensor, int src, ProcessGroup group) {
        return onGroup(group) ? group.broadcast(tensor, groupRankOf("broadcast", "source", group, src)) : Work.COMPLETED;
    }

    /** {@link #reduce(Tensor, int, ReduceOp)} on {@code group} into default-group rank {@code dst}. Mirrors {@code reduce(tensor, dst, op, group)}. */
    public static void reduce(Tensor tensor, int dst, ReduceOp op, ProcessGroup group) {
        reduceAsync(tensor, dst, op, group).await();
    }

    /** Mirrors {@code reduce(tensor, dst, op, group, async_op=True)}. */
    public static Work reduceAsync(Tensor tensor, int dst, ReduceOp op, ProcessGroup group) {
        return onGroup(group) ? group.reduce(tensor, groupRankOf("reduce", "destination", group, dst), op)
                : Work.COMPLETED;
    }

    /** {@link #allGather(List, Tensor)} on {@code group} (one output per member). Mirrors {@code all_gather(tensor_list, tensor, group)}. */
    public static void allGather(List<Tensor> outputs, Tensor input, ProcessGroup group) {
        allGatherAsync(outputs, input, group).await();
    }

    /** Mirrors {@code all_gather(tensor_list, tensor, group, async_op=True)}. */
    public static Work allGatherAsync(List<Tensor> outputs, Tensor input, ProcessGroup group) {
        return onGroup(group) ? group.allGather(outputs, input) : Work.COMPLETED;
    }

    /** {@link #allGatherIntoTensor(Tensor, Tensor)} on {@code group}; returns {@code output}. */
    public static Tensor allGatherIntoTensor(Tensor output, Tensor input, ProcessGroup group) {
        allGatherIntoTensorAsync(output, input, group).await();
        return output;
    }

    /** Mirrors {@code all_gather_into_tensor(output, input, group, async_op=True)}. */
    public static Work allGatherIntoTensorAsync(Tensor output, Tensor input, ProcessGroup group) {
        return onGroup(group) ? group.allGatherIntoTensor(output, input) : Work.COMPLETED;
    }

    /** {@link #reduceScatter(Tensor, List, ReduceOp)} on {@code group} (one input per member). */
    public static void reduceScatter(Tensor output, List<Tensor> inputs, ReduceOp op, ProcessGroup group) {
        reduceScatterAsync(output, inputs, op, group).await();
    }

    /** Mirrors {@code reduce_scatter(output, input_list, op, group, async_op=True)}. */
    public static Work reduceScatterAsync(Tensor output, List<Tensor> inputs, ReduceOp op, ProcessGroup group) {
        return onGroup(group) ? group.reduceScatter(output, inputs, op) : Work.COMPLETED;
    }

    /** {@link #reduceScatterTensor(Tensor, Tensor, ReduceOp)} on {@code group}; returns {@code output}. */
    public static Tensor reduceScatterTensor(Tensor output, Tensor input, ReduceOp op, ProcessGroup group) {
        reduceScatterTensorAsync(output, input, op, group).await();
        return output;
    }

    /** Mirrors {@code reduce_scatter_tensor(output, input, op, group, async_op=True)}. */
    public static Work reduceScatterTensorAsync(Tensor output, Tensor input, ReduceOp op, ProcessGroup group) {
        return onGroup(group) ? group.reduceScatterTensor(output, input, op) : Work.COMPLETED;
    }

    /** {@link #barrier()} on {@code group}. Mirrors {@code barrier(group)}. */
    public static void barrier(ProcessGroup group) {
        if (onGroup(group)) {
            group.barrier().awaitBlocking();
        }
    }

    /** {@link #send(Tensor, int, int)} on {@code group} to default-group rank {@code dst}. Mirrors {@code send(tensor, dst, group, tag)}. */
    public static void send(Tensor tensor, int dst, ProcessGroup group, int tag) {
        isend(tensor, dst, group, tag).await();
    }

    /** Mirrors {@code isend(tensor, dst, group, tag)}. */
    public static Work isend(Tensor tensor, int dst, ProcessGroup group, int tag) {
        return onGroup(group) ? group.send(tensor, groupRankOf("send", "destination", group, dst), tag) : Work.COMPLETED;
    }

    /**
     * {@link #recv(Tensor, int, int)} on {@code group} from default-group rank {@code src}; returns
     * {@code src}. Mirrors {@code recv(tensor, src, group, tag)}.
     */
    public static int recv(Tensor tensor, int src, ProcessGroup group, int tag) {
        irecv(tensor, src, group, tag).await();
        return src;
    }

    /** Mirrors {@code irecv(tensor, src, group, tag)}. */
    public static Work irecv(Tensor tensor, int src, ProcessGroup group, int tag) {
        return onGroup(group) ? group.recv(tensor, groupRankOf("recv", "source", group, src), tag) : Work.COMPLETED;
    }

    /** Whether this rank takes part in {@code group}'s collective (PyTorch: non-members return at once). */
    private static boolean onGroup(ProcessGroup group) {
        return Objects.requireNonNull(group, "group").isMember();
    }

    /** {@code group}'s rank of default-group rank {@code rank}, for an op's {@code role} ("source", ...). */
    private static int groupRankOf(String op, String role, ProcessGroup group, int rank) {
        int r = group.ranks().indexOf(rank);
        if (r < 0) {
            throw new IllegalArgumentException(op + ": " + role + " rank " + rank + " is not a member of the group "
                    + group.ranks() + " (with a group argument, ranks are the default group's, as in PyTorch)");
        }
        return r;
    }

    /**
     * Mirrors {@code torch.multiprocessing.spawn}.
     *
     * @deprecated spawn lives where PyTorch keeps it: use
     *     {@link org.ddp4j.multiprocessing.Spawn#spawn(SpawnFunction, int, String...)}
     */
    @Deprecated
    public static void spawn(SpawnFunction fn, int nprocs, String... args) {
        Spawn.spawn(fn, nprocs, args);
    }

    /**
     * @deprecated use {@link org.ddp4j.multiprocessing.Spawn#spawn(Class, String, int, String...)}
     */
    @Deprecated
    public static void spawn(Class<?> type, String methodName, int nprocs, String... args) {
        Spawn.spawn(type, methodName, nprocs, args);
    }
}

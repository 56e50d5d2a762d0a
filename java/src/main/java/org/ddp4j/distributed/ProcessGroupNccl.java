package org.ddp4j.distributed;

import java.net.InetAddress;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.WeakHashMap;
import org.ddp4j.cuda.Cuda;
import org.ddp4j.distributed.store.HashStore;
import org.ddp4j.distributed.store.Store;
import org.ddp4j.distributed.store.TcpStore;
import org.ddp4j.internal.NcclNatives;
import org.ddp4j.tensor.Device;
import org.ddp4j.tensor.Tensor;

/**
 * The GPU backend: collectives over NCCL on one GPU per rank. Mirrors
 * {@code torch.distributed.ProcessGroupNCCL}.
 *
 * <p>NCCL is opened at run time: {@code DDP4J_NCCL_LIBRARY} (a path) or {@code libnccl.so.2} from
 * the library path; it comes from the Python package {@code nvidia-nccl-cu13} or Debian's
 * {@code libnccl2}. Version 2.14 or newer is needed.
 *
 * <p>The constructor is the rendezvous: every rank publishes its host and GPU (UUID, PCI bus id)
 * through the store, and fails if two ranks share a GPU (naming both ranks and the device); rank
 * 0 creates NCCL's unique id and sets it in the store, the others read it; then every rank joins
 * the communicator. Keys live under {@code ddp4j/nccl/<n>/}, where n counts the NCCL groups this
 * rank created on that store, so several groups on one store stay apart (every rank must create
 * them in the same order, as in PyTorch).
 *
 * <p>Collectives run on the device's communication stream, after the work already queued on its
 * compute stream; {@link Work#await()} makes the compute stream wait for them without blocking
 * the host, {@link Work#awaitBlocking()} blocks. Tensors must be on {@link #device()} (float32 or
 * int64); a tensor elsewhere gives {@link IllegalArgumentException} at the call. All-reduce runs
 * {@code ncclAllReduce} in place (AVG is {@code ncclAvg}, float32 only); broadcast
 * {@code ncclBroadcast}; {@code allGatherIntoTensor} {@code ncclAllGather}; {@code allGather} into
 * a list gathers into a temporary on the device, copied into the outputs on the communication
 * stream. A barrier is a one-element all-reduce, and {@link Work#await()} on it blocks the host
 * until every rank has reached it, as PyTorch's NCCL barrier does. A watchdog
 * thread aborts the communicator on an NCCL error or when a collective exceeds the timeout: that
 * collective's Work throws {@link DistributedTimeoutException} naming the op, its size and the
 * timeout, the other pending ones {@link DistributedException}, and so does every later call.
 * Close the group and create a new one then.
 */
public final class ProcessGroupNccl extends NativeProcessGroup {
    /** PyTorch's default process-group timeout: 30 minutes. */
    public static final Duration DEFAULT_TIMEOUT = Duration.ofMinutes(30);

    /** NCCL groups created per store and rank, for key prefixes (see the class comment). */
    private static final Map<Store, Map<Integer, Integer>> GROUPS_PER_STORE = new WeakHashMap<>();

    private final Device device;

    /**
     * Joins the group of {@code size} ranks that rendezvous through {@code store}, on the GPU
     * {@code device}. Blocks until every rank has joined.
     *
     * @param store the rendezvous store shared by all ranks (a {@link TcpStore}; a
     *     {@link HashStore} for ranks that are threads of one JVM)
     * @param rank this rank, in {@code [0, size)}
     * @param size the number of ranks, at least 1
     * @param timeout how long to wait for the other ranks, and for each collective
     * @param device this rank's GPU, e.g. {@code Cuda.localDevice(System.getenv())}; one GPU per rank
     * @throws IllegalStateException without a GPU ("no CUDA device: ..."), without the CUDA library,
     *     or without a usable NCCL (the message names DDP4J_NCCL_LIBRARY and where NCCL comes from)
     * @throws IllegalArgumentException for a bad rank, size, timeout or a device that is not a visible GPU
     * @throws DistributedException if two ranks use the same GPU, or the communicator cannot be created
     * @throws DistributedTimeoutException if not every rank joined within {@code timeout}
     */
    public ProcessGroupNccl(Store store, int rank, int size, Duration timeout, Device device) {
        this(store, rank, size, timeout, device, null);
    }

    /** {@code resources} (stores that {@link Distributed} opened for this group) are closed with the group. */
    ProcessGroupNccl(Store store, int rank, int size, Duration timeout, Device device, AutoCloseable resources) {
        super(store, rank, size, timeout, resources);
        Objects.requireNonNull(device, "device");
        if (!device.isCuda()) {
            throw new IllegalArgumentException("the nccl backend needs a CUDA device, got " + device
                    + "; use the gloo backend for CPU tensors");
        }
        this.device = device;
        Cuda.checkDevice(device); // loads the CUDA library; "no CUDA device" without a GPU
        NcclNatives.version(); // opens NCCL here, so that a missing NCCL fails on every rank at once

        String prefix = "ddp4j/nccl/" + nextGroupNumber(store, rank) + "/";
        DeviceIdentity mine = new DeviceIdentity(hostname(), Cuda.deviceUuid(device),
                NcclNatives.pciBusId(device.index()), device.toString());
        store.set(prefix + "device/" + rank, mine.encode());
        List<String> keys = new ArrayList<>();
        for (int r = 0; r < size; r++) {
            keys.add(prefix + "device/" + r);
        }
        store.waitFor(keys, timeout);
        List<DeviceIdentity> all = new ArrayList<>();
        for (String key : keys) {
            all.add(DeviceIdentity.decode(store.get(key)));
        }
        String shared = sharedDeviceError(all);
        if (shared != null) {
            throw new DistributedException(shared);
        }

        byte[] id;
        if (rank == 0) {
            id = NcclNatives.uniqueId();
            store.set(prefix + "id", id);
        } else {
            store.waitFor(List.of(prefix + "id"), timeout);
            id = store.get(prefix + "id");
        }
        setHandle(NcclNatives.create(id, rank, size, device.index(), millis(timeout)));
    }

    private static int nextGroupNumber(Store store, int rank) {
        synchronized (GROUPS_PER_STORE) {
            Map<Integer, Integer> perRank = GROUPS_PER_STORE.computeIfAbsent(store, s -> new HashMap<>());
            int n = perRank.getOrDefault(rank, 0);
            perRank.put(rank, n + 1);
            return n;
        }
    }

    private static String hostname() {
        try {
            return InetAddress.getLocalHost().getHostName();
        } catch (Exception e) {
            String env = System.getenv("HOSTNAME");
            return env != null ? env : "unknown-host";
        }
    }

    /** One rank's GPU as published through the store at init. */
    record DeviceIdentity(String host, String uuid, String pciBusId, String device) {
        byte[] encode() {
            return String.join("\t", host, uuid, pciBusId, device).getBytes(StandardCharsets.UTF_8);
        }

        static DeviceIdentity decode(byte[] bytes) {
            String[] f = new String(bytes, StandardCharsets.UTF_8).split("\t", -1);
            if (f.length != 4) {
                throw new DistributedException("malformed NCCL device record in the store: "
                        + new String(bytes, StandardCharsets.UTF_8));
            }
            return new DeviceIdentity(f[0], f[1], f[2], f[3]);
        }

        /** What identifies the physical GPU: its UUID (unique across machines), else host and PCI bus id. */
        String key() {
            return uuid.isEmpty() ? "pci:" + host + "/" + pciBusId : "uuid:" + uuid;
        }

        String describe() {
            return device + " on " + host + " (" + (uuid.isEmpty() ? "" : uuid + ", ") + "PCI " + pciBusId + ")";
        }
    }

    /**
     * Finds two ranks on the same GPU, which NCCL does not support (its init fails or hangs).
     *
     * @param byRank each rank's GPU, indexed by rank
     * @return null when every rank has its own GPU, else a message naming the first two ranks that
     *     share one, the device, and how to fix it
     */
    static String sharedDeviceError(List<DeviceIdentity> byRank) {
        Map<String, Integer> firstRank = new HashMap<>();
        for (int r = 0; r < byRank.size(); r++) {
            DeviceIdentity d = byRank.get(r);
            Integer other = firstRank.putIfAbsent(d.key(), r);
            if (other != null) {
                DeviceIdentity o = byRank.get(other);
                return "ranks " + other + " and " + r + " both use the same GPU: rank " + other + " has "
                        + o.describe() + ", rank " + r + " has " + d.describe() + ". NCCL needs one GPU per rank:"
                        + " start at most as many processes per node as GPUs (the launcher gives local rank r"
                        + " cuda:r), and check LOCAL_RANK and CUDA_VISIBLE_DEVICES";
            }
        }
        return null;
    }

    /**
     * Checks, before any native call, that {@code t} is on the group's GPU.
     *
     * @throws IllegalArgumentException naming the tensor's device and the group's, and saying to
     *     call {@code tensor.to(device)}
     */
    static void checkOnDevice(String op, String what, Tensor t, Device groupDevice) {
        Objects.requireNonNull(t, what);
        Device d = t.device();
        if (!d.equals(groupDevice)) {
            throw new IllegalArgumentException(op + ": the nccl process group works on " + groupDevice
                    + " tensors, but the " + what + " is on " + d + " (" + t.describe() + "); call tensor.to("
                    + (groupDevice.isCuda() ? "Device.cuda(" + groupDevice.index() + ")" : groupDevice.toString())
                    + ") first");
        }
    }

    /** {@code "nccl"}. */
    @Override
    public String backend() {
        return "nccl";
    }

    /** This rank's GPU: the device every tensor passed to this group must be on. */
    @Override
    public Device device() {
        return device;
    }

    /** NCCL's version, e.g. "2.28.5" (a process-wide library: the same for every group). */
    public static String ncclVersion() {
        Cuda.ensureLoaded();
        int code = NcclNatives.version();
        return code >= 10000 ? (code / 10000) + "." + (code % 10000) / 100 + "." + code % 100
                : (code / 1000) + "." + (code % 1000) / 100 + "." + code % 100;
    }

    /** Checks that {@code t} is on {@link #device()}, before any native call. */
    @Override
    void checkTensor(String op, String what, Tensor t) {
        checkOnDevice(op, what, t, device);
    }

    @Override
    public String toString() {
        return "ProcessGroupNccl(rank " + rank() + " of " + size() + ", " + device + (isClosed() ? ", closed" : "") + ")";
    }
}

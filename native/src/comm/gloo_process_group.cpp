// The Gloo backend: rendezvous, a full mesh of TCP pairs, and a worker thread that runs queued
// collectives in order. See gloo_process_group.h for the contract.
#include "comm/gloo_process_group.h"

#include <gloo/allgather.h>
#include <gloo/allreduce.h>
#include <gloo/broadcast.h>
#include <gloo/common/error.h>
#include <gloo/rendezvous/context.h>
#include <gloo/rendezvous/prefix_store.h>
#include <gloo/rendezvous/store.h>
#include <gloo/transport/tcp/device.h>

#include <cstring>
#include <sstream>

#include "comm/gloo_point_to_point.h"
#include "comm/host_collectives.h"
#include "comm/peer_errors.h"
#include "comm/small_allreduce.h"

namespace ddp4j {
namespace {

using Millis = std::chrono::milliseconds;

/** Element-wise c[i] = f(a[i], b[i]) for Gloo's reduction callback (a or b may alias c). */
template <typename T, typename F>
void reduce_into(void* c, const void* a, const void* b, size_t n) {
  T* out = static_cast<T*>(c);
  const T* x = static_cast<const T*>(a);
  const T* y = static_cast<const T*>(b);
  F f;
  for (size_t i = 0; i < n; i++) out[i] = f(x[i], y[i]);
}

struct Add {
  template <typename T>
  T operator()(T a, T b) const { return a + b; }
};
struct Mul {
  template <typename T>
  T operator()(T a, T b) const { return a * b; }
};
struct Min {
  template <typename T>
  T operator()(T a, T b) const { return b < a ? b : a; }
};
struct Max {
  template <typename T>
  T operator()(T a, T b) const { return b > a ? b : a; }
};

template <typename T>
gloo::AllreduceOptions::Func reduce_function(ReduceOp op) {
  switch (op) {
    case ReduceOp::SUM:
    case ReduceOp::AVG: return &reduce_into<T, Add>;
    case ReduceOp::PRODUCT: return &reduce_into<T, Mul>;
    case ReduceOp::MIN: return &reduce_into<T, Min>;
    case ReduceOp::MAX: return &reduce_into<T, Max>;
  }
  throw Error(ErrorKind::InvalidArgument, "allReduce: unknown ReduceOp");
}

void check_collective_tensor(const char* op, const char* what, const Tensor& t) {
  DDP4J_CHECK_ARG(t.defined(), op, ": the ", what, " tensor is missing");
  DDP4J_CHECK_ARG(t.device().type == DeviceType::CPU, op, ": the gloo backend works on CPU tensors, but the ", what,
                  " is ", t.describe(), "; move it with to(Device.CPU) or use the nccl backend for CUDA tensors");
  DDP4J_CHECK_ARG(t.dtype() == DType::Float32 || t.dtype() == DType::Int64, op, ": unsupported dtype of ", what, " ",
                  t.describe());
}

/** The checks of every reduction (allReduce, reduce, reduceScatter) on the tensor it reduces. */
void check_reduction(const char* op, const char* what, const Tensor& t, ReduceOp reduce_op) {
  check_collective_tensor(op, what, t);
  DDP4J_CHECK_ARG(static_cast<int>(reduce_op) >= 0 && static_cast<int>(reduce_op) < kNumReduceOps, op,
                  ": unknown ReduceOp ", static_cast<int>(reduce_op));
  DDP4J_CHECK_ARG(reduce_op != ReduceOp::AVG || t.dtype() == DType::Float32, op,
                  ": ReduceOp.AVG needs a float32 tensor, got ", t.describe(), "; use SUM and divide by the world size");
}

}  // namespace

void gloo_detail::ring_allreduce(const std::shared_ptr<gloo::Context>& context, const Tensor& t, size_t n,
                                 ReduceOp op, uint32_t tag, Millis timeout) {
  gloo::AllreduceOptions opts(context);
  opts.setTag(tag);
  opts.setTimeout(timeout);
  if (t.dtype() == DType::Float32) {
    opts.setOutput<float>(t.data<float>(), n);
    opts.setReduceFunction(reduce_function<float>(op));
  } else {
    opts.setOutput<int64_t>(t.data<int64_t>(), n);
    opts.setReduceFunction(reduce_function<int64_t>(op));
  }
  gloo::allreduce(opts);
}

// ---------------------------------------------------------------------------------------------
// Construction: device, rendezvous, full mesh.

GlooProcessGroup::GlooProcessGroup(gloo::rendezvous::Store& store, int rank, int size, GlooOptions options)
    : ProcessGroup(rank, size), options_(std::move(options)) {
  DDP4J_CHECK_ARG(size >= 1, "process group size must be at least 1, got ", size);
  DDP4J_CHECK_ARG(rank >= 0 && rank < size, "rank must be in [0, ", size, "), got ", rank);
  DDP4J_CHECK_ARG(options_.timeout.count() > 0, "process group timeout must be positive, got ",
                  options_.timeout.count(), " ms");

  std::shared_ptr<gloo::transport::Device> device;
  try {
    gloo::transport::tcp::attr attr;
    if (!options_.hostname.empty()) {
      attr.hostname = options_.hostname;
    } else if (!options_.iface.empty()) {
      attr.iface = options_.iface;
    }
    device = gloo::transport::tcp::CreateDevice(attr);
  } catch (const std::exception& e) {
    std::string where = !options_.hostname.empty() ? "address \"" + options_.hostname + "\""
                        : !options_.iface.empty()  ? "interface \"" + options_.iface + "\""
                                                   : std::string("this host's name");
    throw Error(ErrorKind::Distributed,
                detail::concat("rank ", rank, ": cannot open Gloo's TCP transport on ", where, ": ",
                               strip_location(e.what()),
                               "; set DDP4J_GLOO_HOSTNAME to an address of this machine that the other ranks can reach"
                               " (or GLOO_SOCKET_IFNAME to its network interface)"));
  }

  rendezvous(store);

  auto connect = [&](const char* prefix) {
    auto context = std::make_shared<gloo::rendezvous::Context>(rank, size);
    context->setTimeout(options_.timeout);
    gloo::rendezvous::PrefixStore gloo_store(prefix, store);
    try {
      context->connectFullMesh(gloo_store, device);
    } catch (const Error& e) {
      // From the Java store (a Java exception turned into a C++ one).
      throw Error(e.kind(), detail::concat("rank ", rank, " of ", size,
                                           ": connecting to the other ranks failed: ", e.what()));
    } catch (const std::exception& e) {
      std::string m = strip_location(e.what());
      throw Error(is_gloo_timeout(m) ? ErrorKind::Timeout : ErrorKind::Distributed,
                  detail::concat("rank ", rank, " of ", size, ": connecting to the other ranks failed (",
                                 m, ") within ", duration_str(options_.timeout),
                                 "; check that every rank can reach the address the others advertise (this rank: ",
                                 device->str(), "; set DDP4J_GLOO_HOSTNAME to change it)"));
    }
    return context;
  };
  context_ = connect("ddp4j/gloo");
  {
    gloo::rendezvous::PrefixStore gloo_store("ddp4j/gloo", store);
    record_peer_addresses(gloo_store, *context_, &peer_addresses_);
  }
  p2p_ = std::make_unique<GlooPointToPoint>(
      context_, rank, options_.timeout, [this] { return broken(); },
      [this](const std::string& reason) {
        set_broken(reason);
        try {
          context_->closeConnections();  // peers blocked on this rank fail now, not at their timeout
          if (small_) small_->context->closeConnections();
        } catch (const std::exception&) {
        }
      },
      [this](const std::string& description, const std::string& gloo_message) {
        return translate_gloo_error(description, gloo_message, options_.timeout, this->rank(), peer_addresses_);
      });
  if (size > 1 && size <= 8 && options_.small_allreduce_bytes > 0) {
    // Its own connections: Gloo sizes a socket's send buffer on the first bound-buffer send and
    // so turns off the kernel's autotuning, which would slow the large all-reduces down ~100x.
    auto small_context = connect("ddp4j/gloo-small");
    try {
      gloo::rendezvous::PrefixStore small_store("ddp4j/gloo-small", store);
      record_peer_addresses(small_store, *small_context, &peer_addresses_);  // so that its errors name the peer too
      small_ = std::make_shared<SmallAllreduce>(small_context, options_.small_allreduce_bytes,
                                                options_.small_allreduce_sync_reads);
    } catch (const std::exception& e) {
      std::string m = strip_location(e.what());
      throw Error(is_gloo_timeout(m) ? ErrorKind::Timeout : ErrorKind::Distributed,
                  detail::concat("rank ", rank, " of ", size, ": setting up the connections failed (", m, ")"));
    }
  }
  host_ = HostCollectives::create(store, device, rank, size, options_.timeout, options_.shm, options_.shm_host_id);
  worker_ = std::thread([this] { worker_loop(); });
}

void GlooProcessGroup::rendezvous(gloo::rendezvous::Store& store) {
  const int r = rank();
  const int n = size();
  auto key = [](int i) { return "ddp4j/joined/" + std::to_string(i); };
  const std::string mine = std::to_string(r);
  store.set(key(r), std::vector<char>(mine.begin(), mine.end()));
  std::vector<std::string> keys;
  for (int i = 0; i < n; i++) keys.push_back(key(i));

  bool timed_out = false;
  std::string cause;
  try {
    store.wait(keys, options_.timeout);
  } catch (const Error& e) {
    if (e.kind() != ErrorKind::Timeout) throw;
    timed_out = true;
    cause = e.what();
  } catch (const gloo::IoException& e) {
    if (!is_gloo_timeout(e.what())) throw Error(ErrorKind::Distributed, strip_location(e.what()));
    timed_out = true;
    cause = strip_location(e.what());
  }
  if (!timed_out) return;

  // Which ranks are missing? Probe each key with a tiny timeout (0 means "forever" for Gloo's stores).
  std::vector<int> missing;
  for (int i = 0; i < n; i++) {
    try {
      store.wait({key(i)}, Millis(1));
    } catch (const std::exception&) {
      missing.push_back(i);
    }
  }
  std::ostringstream list;
  for (size_t i = 0; i < missing.size(); i++) list << (i ? ", " : "") << missing[i];
  std::string who = missing.empty() ? std::string("some ranks")
                    : missing.size() == 1 ? detail::concat("rank ", list.str(), " of ", n)
                                          : detail::concat("ranks [", list.str(), "] of ", n);
  throw Error(ErrorKind::Timeout,
              detail::concat(who, " did not join within ", duration_str(options_.timeout), " (seen from rank ", r,
                             "): ", missing.size() == 1 ? "was it" : "were they",
                             " started? check MASTER_ADDR/MASTER_PORT, WORLD_SIZE and RANK (store: ", cause, ")"));
}

GlooProcessGroup::~GlooProcessGroup() {
  std::deque<Op> abandoned;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
    abandoned.swap(queue_);
  }
  cv_.notify_all();
  for (auto& op : abandoned) {
    op.work->finish(std::make_exception_ptr(
        Error(ErrorKind::Distributed, detail::concat(op.work->description(), " did not run: rank ", rank(),
                                                     " closed its process group first"))));
  }
  if (worker_.joinable()) worker_.join();
  // Transfers still running fail; Gloo holds their buffers until the connections close, so those
  // close before the buffers go.
  if (p2p_ && p2p_->close()) {
    try {
      context_->closeConnections();
    } catch (const std::exception&) {
    }
  }
  p2p_.reset();  // joins the transfers' threads, frees their buffers
  // Peers still waiting in the segment for this rank fail now, naming it, instead of at their timeout.
  if (host_) host_->abort(detail::concat("rank ", rank(), " closed its process group"));
  host_.reset();     // unmaps the segment, closes the leaders' connections
  small_.reset();    // unregisters its buffers from the pairs
  context_.reset();  // closes the pairs and stops Gloo's network thread
}

// ---------------------------------------------------------------------------------------------
// Submission (caller's thread): validate, describe, queue.

bool GlooProcessGroup::shm_only() const { return host_ && host_->single_host(); }

// A small op costs microseconds through shared memory; a hand-off to the worker would cost tens.
bool GlooProcessGroup::shm_inline(size_t bytes) const { return shm_only() && bytes <= host_->inline_bytes(); }

std::string GlooProcessGroup::transport() const { return host_ ? host_->transport() : "gloo"; }

std::shared_ptr<Work> GlooProcessGroup::enqueue(const Fingerprint& fp, std::vector<Tensor> keep_alive,
                                                std::function<void(uint32_t, const Fingerprint&)> run, Check check,
                                                bool run_inline) {
  if (check == Check::kBefore && !options_.check_collectives) check = Check::kNone;
  Op op{nullptr, fp, std::move(run), check};
  {
    std::lock_guard<std::mutex> lock(mutex_);
    DDP4J_CHECK(!stopping_, IllegalState, describe(fp), ": the process group is closed");
    // Numbered in issue order, which is run order: every rank numbers its collectives alike.
    op.fp.seq = ++seq_;
    const Fingerprint described = op.fp;
    op.work = std::make_shared<Work>(std::function<std::string()>([described] { return describe(described); }),
                                     std::move(keep_alive));
    if (!run_inline || running_ || !queue_.empty()) {
      queue_.push_back(op);
      run_inline = false;
    } else {
      running_ = true;  // keeps the worker off until this op is done, so ops stay in issue order
    }
  }
  std::shared_ptr<Work> work = op.work;
  if (!run_inline) {
    cv_.notify_one();
    return work;
  }
  run_op(op);
  bool queued_meanwhile;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    running_ = false;
    queued_meanwhile = !queue_.empty();
  }
  // Wake the worker only for ops other threads queued meanwhile: a needless wake-up costs a
  // system call and, on a busy machine, a context switch per microsecond collective.
  if (queued_meanwhile) cv_.notify_one();
  return work;
}

std::shared_ptr<Work> GlooProcessGroup::allreduce_any(const Tensor& tensor, ReduceOp op, bool run_inline, int bucket,
                                                      int buckets) {
  check_reduction("allReduce", "input", tensor, op);
  Fingerprint fp;
  fp.kind = Fingerprint::kAllReduce;
  fp.arg = static_cast<uint32_t>(op);
  fp.dtype = static_cast<uint32_t>(tensor.dtype());
  fp.numel = static_cast<uint64_t>(tensor.numel());
  fp.bucket = bucket >= 0 ? bucket : -1;
  fp.buckets = bucket >= 0 ? buckets : 0;
  Movement m = allreduce_movement(tensor, op);
  return enqueue(fp, {tensor}, std::move(m.run), m.check, run_inline || shm_inline(tensor.nbytes()));
}

GlooProcessGroup::Movement GlooProcessGroup::allreduce_movement(const Tensor& tensor, ReduceOp op) {
  Tensor t = tensor;
  const int world = size();
  auto divide_if_avg = [t, op, world] {
    if (op != ReduceOp::AVG) return;
    float* p = t.data<float>();
    const size_t n = static_cast<size_t>(t.numel());
    const float inv = 1.0f / static_cast<float>(world);
    for (size_t i = 0; i < n; i++) p[i] *= inv;
  };

  if (host_) {
    // One host: the transport compares fingerprints in every step. Hierarchical: the ranks
    // exchange them first, since the leaders' ring follows (see below).
    std::shared_ptr<HostCollectives> host = host_;
    return {[t, op, host](uint32_t tag, const Fingerprint& f) { host->allreduce(t, op, tag, &f); },
            shm_only() ? Check::kAlong : Check::kBefore};
  }
  if (small_ && t.nbytes() <= small_->capacity) {
    // The fingerprint rides in the message's header: no message of its own.
    std::shared_ptr<SmallAllreduce> small = small_;
    GlooProcessGroup* self = this;  // ops run before the destructor returns (it joins the worker)
    return {[t, op, small, self, divide_if_avg](uint32_t, const Fingerprint& f) {
              const size_t n = static_cast<size_t>(t.numel());
              const int parity = small->exchange(f, t.raw_data(), t.nbytes());
              self->check_peers(f, parity);  // before any peer data is used
              if (n == 0) return;
              if (t.dtype() == DType::Float32) {
                small->reduce_into<float>(parity, t.data<float>(), n, reduce_function<float>(op));
              } else {
                small->reduce_into<int64_t>(parity, t.data<int64_t>(), n, reduce_function<int64_t>(op));
              }
              divide_if_avg();
            },
            Check::kAlong};
  }
  // Gloo's ring: fingerprints first (one small message each way, on the small all-reduce's
  // connections when the group has them). Not after the ring: ranks that enter it with different
  // sizes make Gloo abort the process (an enforce in its network thread when a peer's chunk
  // exceeds the posted receive), e.g. DDP bucket 1 on one rank against bucket 2 on another.
  auto context = context_;
  const Millis timeout = options_.timeout;
  return {[t, op, context, timeout, divide_if_avg](uint32_t tag, const Fingerprint&) {
            if (t.numel() == 0) return;
            gloo_detail::ring_allreduce(context, t, static_cast<size_t>(t.numel()), op, tag, timeout);
            divide_if_avg();
          },
          Check::kBefore};
}

std::shared_ptr<Work> GlooProcessGroup::allreduce(const Tensor& tensor, ReduceOp op) {
  return allreduce_any(tensor, op, /*run_inline=*/false, -1, 0);
}

std::shared_ptr<Work> GlooProcessGroup::allreduce_bucket(const Tensor& tensor, ReduceOp op, bool run_inline,
                                                            int bucket, int buckets) {
  return allreduce_any(tensor, op, run_inline, bucket, buckets);
}

std::shared_ptr<Work> GlooProcessGroup::broadcast(const Tensor& tensor, int root) {
  check_collective_tensor("broadcast", "input", tensor);
  DDP4J_CHECK_ARG(root >= 0 && root < size(), "broadcast: source rank ", root, " is not in [0, ", size(), ")");
  Fingerprint fp;
  fp.kind = Fingerprint::kBroadcast;
  fp.arg = static_cast<uint32_t>(root);
  fp.dtype = static_cast<uint32_t>(tensor.dtype());
  fp.numel = static_cast<uint64_t>(tensor.numel());
  Tensor t = tensor;
  auto context = context_;
  const Millis timeout = options_.timeout;
  if (host_) {
    std::shared_ptr<HostCollectives> host = host_;
    // The fingerprint exchange stays on even on one host: the transport's broadcast root only
    // publishes and never reads its peers, so two ranks that both think they are the root would
    // not notice.
    return enqueue(fp, {tensor}, [t, root, host](uint32_t tag, const Fingerprint& f) { host->broadcast(t, root, tag, &f); },
                   Check::kBefore, shm_inline(t.nbytes()));
  }
  return enqueue(fp, {tensor}, [t, root, context, timeout](uint32_t tag, const Fingerprint&) {
    if (t.numel() == 0) return;
    gloo::BroadcastOptions opts(context);
    opts.setTag(tag);
    opts.setTimeout(timeout);
    opts.setRoot(root);
    opts.setOutput<uint8_t>(static_cast<uint8_t*>(t.raw_data()), t.nbytes());
    gloo::broadcast(opts);
  }, Check::kBefore);
}

std::shared_ptr<Work> GlooProcessGroup::allgather(const Tensor& output, const Tensor& input) {
  check_collective_tensor("allGather", "input", input);
  check_collective_tensor("allGather", "output", output);
  DDP4J_CHECK_ARG(output.dtype() == input.dtype(), "allGather: output ", output.describe(),
                  " and input ", input.describe(), " have different dtypes");
  DDP4J_CHECK_ARG(output.numel() == input.numel() * size(), "allGather: output ", output.describe(), " must have ",
                  size(), " x ", input.numel(), " = ", input.numel() * size(), " elements (world size x input)");
  Fingerprint fp;
  fp.kind = Fingerprint::kAllGather;
  fp.dtype = static_cast<uint32_t>(input.dtype());
  fp.numel = static_cast<uint64_t>(input.numel());
  Tensor in = input;
  Tensor out = output;
  auto context = context_;
  const Millis timeout = options_.timeout;
  if (shm_only()) {
    std::shared_ptr<HostCollectives> host = host_;
    return enqueue(fp, {input, output}, [in, out, host](uint32_t, const Fingerprint& f) {
      host->allgather(in.raw_data(), out.raw_data(), in.nbytes(), &f);
    }, Check::kAlong, shm_inline(out.nbytes()));
  }
  return enqueue(fp, {input, output}, [in, out, context, timeout](uint32_t tag, const Fingerprint&) {
    if (in.numel() == 0) return;
    gloo::AllgatherOptions opts(context);
    opts.setTag(tag);
    opts.setTimeout(timeout);
    opts.setInput<uint8_t>(static_cast<uint8_t*>(in.raw_data()), in.nbytes());
    opts.setOutput<uint8_t>(static_cast<uint8_t*>(out.raw_data()), out.nbytes());
    gloo::allgather(opts);
  }, Check::kBefore);
}

std::shared_ptr<Work> GlooProcessGroup::allgather(const std::vector<Tensor>& outputs, const Tensor& input) {
  check_collective_tensor("allGather", "input", input);
  check_allgather_outputs(outputs, input, [&](const Tensor& t) { check_collective_tensor("allGather", "output", t); });
  Fingerprint fp;
  fp.kind = Fingerprint::kAllGather;
  fp.dtype = static_cast<uint32_t>(input.dtype());
  fp.numel = static_cast<uint64_t>(input.numel());
  std::vector<Tensor> keep(outputs);
  keep.push_back(input);
  Tensor in = input;
  std::vector<Tensor> outs = outputs;
  auto context = context_;
  const Millis timeout = options_.timeout;
  const int world = size();
  std::shared_ptr<HostCollectives> host = shm_only() ? host_ : nullptr;
  const bool inline_ok = shm_inline(in.nbytes() * static_cast<size_t>(world));
  return enqueue(fp, std::move(keep), [in, outs, context, timeout, world, host](uint32_t tag, const Fingerprint& f) {
    if (in.numel() == 0) return;
    // Gather into one flat buffer (Gloo's layout), then copy each rank's block out. The flat buffer
    // also keeps this correct when an output aliases the input.
    Tensor flat = Tensor::empty({in.numel() * world}, in.dtype(), in.device());
    if (host) {
      host->allgather(in.raw_data(), flat.raw_data(), in.nbytes(), &f);
    } else {
      gloo::AllgatherOptions opts(context);
      opts.setTag(tag);
      opts.setTimeout(timeout);
      opts.setInput<uint8_t>(static_cast<uint8_t*>(in.raw_data()), in.nbytes());
      opts.setOutput<uint8_t>(static_cast<uint8_t*>(flat.raw_data()), flat.nbytes());
      gloo::allgather(opts);
    }
    const size_t block = in.nbytes();
    for (size_t r = 0; r < outs.size(); r++) {
      std::memcpy(outs[r].raw_data(), static_cast<const char*>(flat.raw_data()) + r * block, block);
    }
  }, host ? Check::kAlong : Check::kBefore, host && inline_ok);
}

std::shared_ptr<Work> GlooProcessGroup::reduce(const Tensor& tensor, int root, ReduceOp op) {
  check_reduction("reduce", "input", tensor, op);
  check_peer("reduce", "destination", root, /*may_be_self=*/true);
  Fingerprint fp;
  fp.kind = Fingerprint::kReduce;
  fp.arg = static_cast<uint32_t>(op);
  fp.dtype = static_cast<uint32_t>(tensor.dtype());
  fp.numel = static_cast<uint64_t>(tensor.numel());
  fp.peer = static_cast<uint32_t>(root);
  const bool inline_ok = shm_inline(tensor.nbytes());
  if (shm_only()) {
    // The fingerprints are exchanged first (through the segment, microseconds), as for broadcast:
    // the transport's small reduce lets a non-root publish and leave without reading its peers,
    // so it would not notice a peer that named another root.
    std::shared_ptr<HostCollectives> host = host_;
    Tensor t = tensor;
    return enqueue(fp, {tensor}, [t, root, op, host](uint32_t, const Fingerprint& f) { host->reduce(t, root, op, &f); },
                   Check::kBefore, inline_ok);
  }
  if (rank() == root) {
    Movement m = allreduce_movement(tensor, op);
    return enqueue(fp, {tensor}, std::move(m.run), m.check, inline_ok);
  }
  // The others reduce a copy, taken when the op runs (as the data an in-place op would read).
  Tensor scratch = Tensor::empty({tensor.numel()}, tensor.dtype());
  Movement m = allreduce_movement(scratch, op);
  Tensor t = tensor;
  Run inner = std::move(m.run);
  return enqueue(fp, {tensor, scratch}, [t, scratch, inner](uint32_t tag, const Fingerprint& f) {
    if (t.nbytes() > 0) std::memcpy(scratch.raw_data(), t.raw_data(), t.nbytes());
    inner(tag, f);
  }, m.check, inline_ok);
}

std::shared_ptr<Work> GlooProcessGroup::reduce_scatter(const Tensor& output, const Tensor& input, ReduceOp op) {
  check_reduction("reduceScatter", "input", input, op);
  check_collective_tensor("reduceScatter", "output", output);
  DDP4J_CHECK_ARG(output.dtype() == input.dtype(), "reduceScatter: output ", output.describe(), " and input ",
                  input.describe(), " have different dtypes");
  DDP4J_CHECK_ARG(input.numel() == output.numel() * size(), "reduceScatter: input ", input.describe(), " must have ",
                  size(), " x ", output.numel(), " = ", output.numel() * size(),
                  " elements (world size x output)");
  return reduce_scatter_blocks(output, {input}, input.numel(), op);
}

std::shared_ptr<Work> GlooProcessGroup::reduce_scatter(const Tensor& output, const std::vector<Tensor>& inputs,
                                                       ReduceOp op) {
  check_reduction("reduceScatter", "output", output, op);
  check_reduce_scatter_inputs(output, inputs,
                              [&](const Tensor& t) { check_collective_tensor("reduceScatter", "input", t); });
  return reduce_scatter_blocks(output, inputs, output.numel() * size(), op);
}

std::shared_ptr<Work> GlooProcessGroup::reduce_scatter_blocks(const Tensor& output, const std::vector<Tensor>& blocks,
                                                              int64_t elements, ReduceOp op) {
  Fingerprint fp;
  fp.kind = Fingerprint::kReduceScatter;
  fp.arg = static_cast<uint32_t>(op);
  fp.dtype = static_cast<uint32_t>(output.dtype());
  fp.numel = static_cast<uint64_t>(elements);
  // All-reduce a copy of the whole input and keep this rank's block: the copy also makes an
  // output that aliases an input safe.
  Tensor scratch = Tensor::empty({elements}, output.dtype());
  Movement m = allreduce_movement(scratch, op);
  Tensor out = output;
  const size_t offset = static_cast<size_t>(rank()) * output.nbytes();
  std::vector<Tensor> keep(blocks);
  keep.push_back(output);
  keep.push_back(scratch);
  Run inner = std::move(m.run);
  return enqueue(fp, std::move(keep), [blocks, out, scratch, offset, inner](uint32_t tag, const Fingerprint& f) {
    char* flat = static_cast<char*>(scratch.raw_data());
    size_t at = 0;
    for (const Tensor& b : blocks) {
      if (b.nbytes() > 0) std::memcpy(flat + at, b.raw_data(), b.nbytes());
      at += b.nbytes();
    }
    inner(tag, f);
    if (out.nbytes() > 0) std::memcpy(out.raw_data(), flat + offset, out.nbytes());
  }, m.check, shm_inline(scratch.nbytes()));
}

std::shared_ptr<Work> GlooProcessGroup::send(const Tensor& tensor, int dst, int tag) {
  check_collective_tensor("send", "input", tensor);
  check_peer("send", "destination", dst, /*may_be_self=*/false);
  return p2p_->send(tensor, dst, tag);
}

std::shared_ptr<Work> GlooProcessGroup::recv(const Tensor& tensor, int src, int tag) {
  check_collective_tensor("recv", "output", tensor);
  check_peer("recv", "source", src, /*may_be_self=*/false);
  return p2p_->recv(tensor, src, tag);
}

std::string GlooProcessGroup::broken() const {
  std::lock_guard<std::mutex> lock(broken_mutex_);
  return broken_;
}

void GlooProcessGroup::set_broken(const std::string& reason) {
  std::lock_guard<std::mutex> lock(broken_mutex_);
  if (broken_.empty()) broken_ = reason;
}

std::shared_ptr<Work> GlooProcessGroup::barrier() {
  // The header exchange is an allgather, which no rank leaves before every rank has entered it:
  // that is the barrier. On one host the shared-memory barrier replaces it.
  Fingerprint fp;
  fp.kind = Fingerprint::kBarrier;
  if (shm_only()) {
    std::shared_ptr<HostCollectives> host = host_;
    return enqueue(fp, {}, [host](uint32_t, const Fingerprint& f) { host->barrier(&f); }, Check::kAlong, true);
  }
  return enqueue(fp, {}, nullptr, Check::kBefore);
}

// ---------------------------------------------------------------------------------------------
// Worker thread.

void GlooProcessGroup::worker_loop() {
  while (true) {
    Op op;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      cv_.wait(lock, [this] { return stopping_ || (!queue_.empty() && !running_); });
      if (queue_.empty()) return;  // stopping
      op = std::move(queue_.front());
      queue_.pop_front();
      running_ = true;
    }
    run_op(op);
    std::lock_guard<std::mutex> lock(mutex_);
    running_ = false;
  }
}

void GlooProcessGroup::run_op(Op& op) {
  const uint64_t seq = op.fp.seq;
  // Distinct tags per op keep a fast rank's next collective apart from a slow rank's current one.
  const uint32_t header_tag = static_cast<uint32_t>(seq * 2);
  const uint32_t data_tag = header_tag + 1;
  std::exception_ptr error;
  const std::string failed = broken();
  if (!failed.empty()) {
    if (host_ && !host_aborted_) {
      // A failed transfer broke the group from another thread: release this host's other ranks.
      host_aborted_ = true;
      host_->abort(detail::concat("rank ", rank(), "'s process group failed: ", failed));
    }
    error = std::make_exception_ptr(Error(
        ErrorKind::Distributed,
        detail::concat(op.work->description(), " cannot run: this process group failed earlier (", failed,
                       "); destroy it and create a new one (Distributed.destroyProcessGroup, then initProcessGroup)")));
  } else {
    try {
      if (op.check == Check::kBefore || (op.fp.kind == Fingerprint::kBarrier && !op.run)) {
        exchange_headers(op, header_tag);
      }
      if (op.run) op.run(data_tag, op.fp);
    } catch (const Error& e) {
      // A disagreement between ranks, found before any data moved (every rank finds it in the
      // same exchange): the connections are intact.
      error = std::current_exception();
      if (host_ && host_->broken()) {
        // The shared-memory transport fails for good (its peers see the segment aborted); the
        // other hosts' ranks must not wait for this one until their timeout either.
        set_broken(e.what());
        close_connections();
      }
    } catch (const std::exception& e) {
      Error translated = translate_gloo_error(op.work->description(), strip_location(e.what()), options_.timeout,
                                             rank(), peer_addresses_);
      set_broken(translated.what());
      error = std::make_exception_ptr(translated);
      // Gloo leaves the other connections open; close them so that peers blocked on this rank
      // fail now instead of at their timeout (Gloo does the same itself after a timeout).
      close_connections();
    }
  }
  op.work->finish(error);
}

void GlooProcessGroup::check_peers(const Fingerprint& mine, int parity) {
  for (int r = 0; r < size(); r++) {
    if (r == rank()) continue;
    const Fingerprint theirs = small_->fingerprint(parity, r);
    if (!same_call(mine, theirs)) {
      throw Error(ErrorKind::Distributed, mismatch_message(mine, rank(), detail::concat("rank ", r), theirs));
    }
  }
}

void GlooProcessGroup::close_connections() {
  try {
    context_->closeConnections();
    if (small_) small_->context->closeConnections();
  } catch (const std::exception&) {
  }
  if (host_) {
    host_->close_connections();
    // A leader whose Gloo step failed must release its host's other ranks too, not only its sockets.
    host_aborted_ = true;
    host_->abort(detail::concat("rank ", rank(), "'s process group failed: ", broken()));
  }
}

void GlooProcessGroup::exchange_headers(const Op& op, uint32_t tag) {
  const int n = size();
  if (n == 1) return;
  const Fingerprint& mine = op.fp;
  if (small_ && !shm_only()) {
    // One message to each peer over the small all-reduce's connections.
    check_peers(mine, small_->exchange(mine, nullptr, 0));
    return;
  }
  std::vector<Fingerprint> all(static_cast<size_t>(n));
  if (shm_only()) {
    // Through the segment: a peer inside any other shared-memory collective is seen at once (the
    // transport compares fingerprints) instead of both waiting for the timeout.
    host_->allgather(&mine, all.data(), sizeof(Fingerprint), &mine);
  } else {
    gloo::AllgatherOptions opts(context_);
    opts.setTag(tag);
    opts.setTimeout(options_.timeout);
    opts.setInput<uint8_t>(reinterpret_cast<uint8_t*>(const_cast<Fingerprint*>(&mine)), sizeof(Fingerprint));
    opts.setOutput<uint8_t>(reinterpret_cast<uint8_t*>(all.data()), sizeof(Fingerprint) * all.size());
    gloo::allgather(opts);
  }
  for (int r = 0; r < n; r++) {
    if (r == rank() || same_call(all[static_cast<size_t>(r)], mine)) continue;
    throw Error(ErrorKind::Distributed,
                mismatch_message(mine, rank(), detail::concat("rank ", r), all[static_cast<size_t>(r)]));
  }
}

}  // namespace ddp4j

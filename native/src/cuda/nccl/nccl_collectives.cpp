// The NCCL group's collectives and send/recv: validate, describe, and launch the NCCL call
// (with copies into or out of a flat temporary where NCCL needs one buffer).
#include <cstring>

#include "cuda/cuda_context.h"
#include "cuda/nccl/nccl_process_group.h"

namespace ddp4j {
namespace {

/** The op's fingerprint for the flight record (seq is assigned when it is queued). */
Fingerprint fingerprint(Fingerprint::Kind kind, uint32_t arg, DType dtype, int64_t numel) {
  Fingerprint fp;
  fp.kind = kind;
  fp.arg = arg;
  fp.dtype = static_cast<uint32_t>(dtype);
  fp.numel = static_cast<uint64_t>(numel);
  return fp;
}

std::string size_str(int64_t numel, DType dtype) {
  const int64_t bytes = numel * static_cast<int64_t>(dtype_size(dtype));
  return detail::concat(numel, " ", dtype_name(dtype), numel == 1 ? " element (" : " elements (", bytes,
                        bytes == 1 ? " byte)" : " bytes)");
}

nccl::DataType nccl_type(DType dtype) {
  switch (dtype) {
    case DType::Float32: return nccl::kFloat32;
    case DType::Int64: return nccl::kInt64;
    case DType::BFloat16: return nccl::kBfloat16;  // NCCL reduces these natively (in float32 inside its kernels)
    case DType::Float16: return nccl::kFloat16;
    case DType::Bool: break;  // no reduction of masks; the message below names the dtype
  }
  throw Error(ErrorKind::InvalidArgument, detail::concat("nccl: dtype ", dtype_name(dtype), " (", static_cast<int>(dtype),
                                                       ") is not supported by the collectives"));
}

nccl::RedOp nccl_op(ReduceOp op) {
  switch (op) {
    case ReduceOp::SUM: return nccl::kSum;
    case ReduceOp::AVG: return nccl::kAvg;
    case ReduceOp::PRODUCT: return nccl::kProd;
    case ReduceOp::MIN: return nccl::kMin;
    case ReduceOp::MAX: return nccl::kMax;
  }
  throw Error(ErrorKind::InvalidArgument, "nccl: unknown ReduceOp");
}

/** Whether the bytes of `a` and `b` overlap. */
bool overlaps(const Tensor& a, const Tensor& b) {
  const char* a0 = static_cast<const char*>(a.raw_data());
  const char* b0 = static_cast<const char*>(b.raw_data());
  return a.nbytes() > 0 && b.nbytes() > 0 && a0 < b0 + b.nbytes() && b0 < a0 + a.nbytes();
}

/**
 * Appended to the watchdog's timeout message when a send or recv times out: NCCL matches them
 * by order alone and cannot tell a mismatch from a slow peer.
 */
constexpr const char* kPointToPointTimeoutHint =
    ". For send/recv: the peer must post the matching recv/send with the same number of elements and dtype "
    "(NCCL ignores tags and matches by order), and two ranks that both send to each other before receiving "
    "can deadlock: let one rank send first and the other receive first.";

}  // namespace

std::shared_ptr<Work> ProcessGroupNccl::allreduce(const Tensor& tensor, ReduceOp op) {
  check_tensor("allReduce", "input", tensor);
  check_reduce_op("allReduce", op, tensor);
  const std::string description =
      detail::concat("allReduce(", reduce_op_name(op), ") of ", size_str(tensor.numel(), tensor.dtype()));
  void* data = tensor.raw_data();
  const size_t count = static_cast<size_t>(tensor.numel());
  const nccl::DataType type = nccl_type(tensor.dtype());
  const nccl::RedOp red = nccl_op(op);
  return launch(fingerprint(Fingerprint::kAllReduce, static_cast<uint32_t>(op), tensor.dtype(), tensor.numel()), description,
                {tensor}, false, [&](cudaStream_t s) {
    return count == 0 ? nccl::kSuccess : api_.all_reduce(data, data, count, type, red, comm_, s);
  });
}

std::shared_ptr<Work> ProcessGroupNccl::broadcast(const Tensor& tensor, int root) {
  check_tensor("broadcast", "input", tensor);
  DDP4J_CHECK_ARG(root >= 0 && root < size(), "broadcast: source rank ", root, " is not in [0, ", size(), ")");
  const std::string description =
      detail::concat("broadcast from rank ", root, " of ", size_str(tensor.numel(), tensor.dtype()));
  void* data = tensor.raw_data();
  const size_t count = static_cast<size_t>(tensor.numel());
  const nccl::DataType type = nccl_type(tensor.dtype());
  return launch(fingerprint(Fingerprint::kBroadcast, static_cast<uint32_t>(root), tensor.dtype(), tensor.numel()),
                description, {tensor}, false, [&](cudaStream_t s) {
    return count == 0 ? nccl::kSuccess : api_.broadcast(data, data, count, type, root, comm_, s);
  });
}

std::shared_ptr<Work> ProcessGroupNccl::allgather(const Tensor& output, const Tensor& input) {
  check_tensor("allGather", "input", input);
  check_tensor("allGather", "output", output);
  DDP4J_CHECK_ARG(output.dtype() == input.dtype(), "allGather: output ", output.describe(), " and input ",
                  input.describe(), " have different dtypes");
  DDP4J_CHECK_ARG(output.numel() == input.numel() * size(), "allGather: output ", output.describe(), " must have ",
                  size(), " x ", input.numel(), " = ", input.numel() * size(), " elements (world size x input)");
  const std::string description =
      detail::concat("allGather of ", size_str(input.numel(), input.dtype()), " per rank");
  const void* in = input.raw_data();
  void* out = output.raw_data();
  const size_t count = static_cast<size_t>(input.numel());
  const nccl::DataType type = nccl_type(input.dtype());
  return launch(fingerprint(Fingerprint::kAllGather, 0, input.dtype(), input.numel()), description, {input, output},
                false, [&](cudaStream_t s) {
    return count == 0 ? nccl::kSuccess : api_.all_gather(in, out, count, type, comm_, s);
  });
}

std::shared_ptr<Work> ProcessGroupNccl::allgather(const std::vector<Tensor>& outputs, const Tensor& input) {
  check_tensor("allGather", "input", input);
  check_allgather_outputs(outputs, input, [&](const Tensor& t) { check_tensor("allGather", "output", t); });
  const std::string description =
      detail::concat("allGather of ", size_str(input.numel(), input.dtype()), " per rank");
  // NCCL gathers into one buffer; a flat temporary (from the caching allocator, allocated before
  // the start event so the communication stream sees it ready) also keeps this right when an
  // output aliases the input.
  Tensor flat = Tensor::empty({input.numel() * size()}, input.dtype(), input.device());
  std::vector<Tensor> keep(outputs);
  keep.push_back(input);
  keep.push_back(flat);
  const void* in = input.raw_data();
  void* out = flat.raw_data();
  const size_t count = static_cast<size_t>(input.numel());
  const size_t block = input.nbytes();
  const nccl::DataType type = nccl_type(input.dtype());
  std::vector<void*> targets;
  for (const Tensor& t : outputs) targets.push_back(t.raw_data());
  return launch(
      fingerprint(Fingerprint::kAllGather, 0, input.dtype(), input.numel()), description, std::move(keep), false,
      [&](cudaStream_t s) { return count == 0 ? nccl::kSuccess : api_.all_gather(in, out, count, type, comm_, s); },
      [&](cudaStream_t s) {
        if (block == 0) return;
        for (size_t r = 0; r < targets.size(); r++) {
          DDP4J_CUDA_CHECK(cudaMemcpyAsync(targets[r], static_cast<const char*>(out) + r * block, block,
                                           cudaMemcpyDeviceToDevice, s));
        }
      });
}

std::shared_ptr<Work> ProcessGroupNccl::barrier() {
  float* buffer = barrier_buffer_;
  return launch(fingerprint(Fingerprint::kBarrier, 0, DType::Float32, 0), "barrier", {}, /*blocking_sync=*/true, [&](cudaStream_t s) {
    return api_.all_reduce(buffer, buffer, 1, nccl::kFloat32, nccl::kSum, comm_, s);
  });
}

std::shared_ptr<Work> ProcessGroupNccl::reduce(const Tensor& tensor, int root, ReduceOp op) {
  check_tensor("reduce", "input", tensor);
  check_peer("reduce", "destination", root, /*may_be_self=*/true);
  check_reduce_op("reduce", op, tensor);
  const std::string description = detail::concat("reduce(", reduce_op_name(op), ") to rank ", root, " of ",
                                                 size_str(tensor.numel(), tensor.dtype()));
  void* data = tensor.raw_data();
  const size_t count = static_cast<size_t>(tensor.numel());
  const nccl::DataType type = nccl_type(tensor.dtype());
  const nccl::RedOp red = nccl_op(op);
  // In place on every rank, as PyTorch: NCCL writes recvbuff on the root only.
  Fingerprint fp = fingerprint(Fingerprint::kReduce, static_cast<uint32_t>(op), tensor.dtype(), tensor.numel());
  fp.peer = static_cast<uint32_t>(root);
  return launch(fp, description, {tensor}, false, [&](cudaStream_t s) {
    return count == 0 ? nccl::kSuccess : api_.reduce(data, data, count, type, red, root, comm_, s);
  });
}

std::shared_ptr<Work> ProcessGroupNccl::reduce_scatter(const Tensor& output, const Tensor& input, ReduceOp op) {
  check_tensor("reduceScatter", "input", input);
  check_tensor("reduceScatter", "output", output);
  DDP4J_CHECK_ARG(output.dtype() == input.dtype(), "reduceScatter: output ", output.describe(), " and input ",
                  input.describe(), " have different dtypes");
  DDP4J_CHECK_ARG(input.numel() == output.numel() * size(), "reduceScatter: input ", input.describe(), " must have ",
                  size(), " x ", output.numel(), " = ", output.numel() * size(),
                  " elements (world size x output)");
  check_reduce_op("reduceScatter", op, input);
  const size_t block = output.nbytes();
  const bool in_place = output.raw_data() == static_cast<char*>(input.raw_data()) + rank() * block;
  DDP4J_CHECK_ARG(in_place || !overlaps(output, input), "reduceScatter: the output ", output.describe(),
                  " overlaps the input ", input.describe(), " but is not its block ", rank(),
                  " (this rank's); use a separate output tensor");
  const std::string description = detail::concat("reduceScatter(", reduce_op_name(op), ") of ",
                                                 size_str(output.numel(), output.dtype()), " per rank");
  const void* in = input.raw_data();
  void* out = output.raw_data();
  const size_t count = static_cast<size_t>(output.numel());
  const nccl::DataType type = nccl_type(output.dtype());
  const nccl::RedOp red = nccl_op(op);
  return launch(fingerprint(Fingerprint::kReduceScatter, static_cast<uint32_t>(op), input.dtype(), input.numel()),
                description, {input, output}, false, [&](cudaStream_t s) {
    return count == 0 ? nccl::kSuccess : api_.reduce_scatter(in, out, count, type, red, comm_, s);
  });
}

std::shared_ptr<Work> ProcessGroupNccl::reduce_scatter(const Tensor& output, const std::vector<Tensor>& inputs,
                                                       ReduceOp op) {
  check_tensor("reduceScatter", "output", output);
  check_reduce_scatter_inputs(output, inputs, [&](const Tensor& t) { check_tensor("reduceScatter", "input", t); });
  check_reduce_op("reduceScatter", op, output);
  const std::string description = detail::concat("reduceScatter(", reduce_op_name(op), ") of ",
                                                 size_str(output.numel(), output.dtype()), " per rank");
  // NCCL reads one buffer; the flat temporary (allocated before the start event, as allgather's)
  // also makes an output that aliases an input safe: the copies finish before NCCL writes.
  Tensor flat = Tensor::empty({output.numel() * size()}, output.dtype(), output.device());
  std::vector<Tensor> keep(inputs);
  keep.push_back(output);
  keep.push_back(flat);
  char* staging = static_cast<char*>(flat.raw_data());
  void* out = output.raw_data();
  const size_t count = static_cast<size_t>(output.numel());
  const size_t block = output.nbytes();
  const nccl::DataType type = nccl_type(output.dtype());
  const nccl::RedOp red = nccl_op(op);
  std::vector<const void*> sources;
  for (const Tensor& t : inputs) sources.push_back(t.raw_data());
  return launch(
      fingerprint(Fingerprint::kReduceScatter, static_cast<uint32_t>(op), output.dtype(), output.numel() * size()),
      description, std::move(keep), false,
      [&](cudaStream_t s) {
        return count == 0 ? nccl::kSuccess : api_.reduce_scatter(staging, out, count, type, red, comm_, s);
      },
      nullptr,
      [&](cudaStream_t s) {
        if (block == 0) return;
        for (size_t r = 0; r < sources.size(); r++) {
          DDP4J_CUDA_CHECK(cudaMemcpyAsync(staging + r * block, sources[r], block,
                                           cudaMemcpyDeviceToDevice, s));
        }
      });
}

// Point-to-point ops share the communication stream with the collectives, in issue order. A
// stream per peer would not buy concurrency: NCCL serialises all kernels of one communicator
// anyway, and PyTorch's way out (a 2-rank communicator per pair, grouped isend/irecv) is a
// batch API this group does not offer. One stream keeps send/recv ordered with the collectives
// around them; the price is the documented deadlock of two ranks that both send first.
std::shared_ptr<Work> ProcessGroupNccl::point_to_point(bool sending, const Tensor& tensor, int peer, int tag) {
  const char* op_name = sending ? "send" : "recv";
  check_tensor(op_name, sending ? "input" : "output", tensor);
  DDP4J_CHECK_ARG(tag >= 0, op_name, ": tag ", tag, " is negative; tags are >= 0 (the nccl backend ignores them)");
  check_peer(op_name, sending ? "destination" : "source", peer, /*may_be_self=*/false);
  const std::string description = detail::concat(op_name, sending ? " to rank " : " from rank ", peer, " of ",
                                                 size_str(tensor.numel(), tensor.dtype()));
  void* data = tensor.raw_data();
  const size_t count = static_cast<size_t>(tensor.numel());
  const nccl::DataType type = nccl_type(tensor.dtype());
  Fingerprint fp = fingerprint(sending ? Fingerprint::kSend : Fingerprint::kRecv, static_cast<uint32_t>(tag), tensor.dtype(),
                               tensor.numel());
  fp.peer = static_cast<uint32_t>(peer);
  return launch(
      fp, description, {tensor}, false,
      [&](cudaStream_t s) {
        if (count == 0) return nccl::kSuccess;
        return sending ? api_.send(data, count, type, peer, comm_, s) : api_.recv(data, count, type, peer, comm_, s);
      },
      nullptr, nullptr, kPointToPointTimeoutHint);
}

std::shared_ptr<Work> ProcessGroupNccl::send(const Tensor& tensor, int dst, int tag) {
  return point_to_point(/*sending=*/true, tensor, dst, tag);
}

std::shared_ptr<Work> ProcessGroupNccl::recv(const Tensor& tensor, int src, int tag) {
  return point_to_point(/*sending=*/false, tensor, src, tag);
}

}  // namespace ddp4j

// The Gloo group's reductions: all-reduce on the path its size takes (shared memory, the small
// all-reduce, Gloo's ring), and reduce and reduce-scatter built on it. See process_group.h.
#include <algorithm>
#include <cstring>
#include <vector>

#include "comm/gloo/process_group.h"
#include "comm/gloo/reduce_functions.h"
#include "comm/gloo/ring.h"
#include "comm/gloo/small_allreduce.h"
#include "comm/gloo/tensor_checks.h"
#include "comm/local/local_collectives.h"
#include "comm/local/shm/shm_reduce.h"
#include "comm/local/shm/shm_segment.h"

namespace ddp4j {

using Millis = std::chrono::milliseconds;
using gloo_detail::check_collective_tensor;
using gloo_detail::check_reduction;
using gloo_detail::reduce_function;

std::shared_ptr<Work> ProcessGroupGloo::allreduce_any(const Tensor& tensor, ReduceOp op, bool run_inline, int bucket,
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

ProcessGroupGloo::Movement ProcessGroupGloo::allreduce_movement(const Tensor& tensor, ReduceOp op) {
  Tensor t = tensor;
  const int world = size();
  auto divide_if_avg = [t, op, world] {
    if (op == ReduceOp::AVG) gloo_detail::divide_by_world(t, static_cast<size_t>(t.numel()), world);
  };

  if (local_) {
    // One host: the transport compares fingerprints in every step. Hierarchical: the ranks
    // exchange them first, since the leaders' ring follows (see below).
    std::shared_ptr<LocalCollectives> local = local_;
    return {[t, op, local](uint32_t tag, const Fingerprint& f) { local->allreduce(t, op, tag, &f); },
            shm_only() ? Check::kAlong : Check::kBefore};
  }
  if (small_ && t.nbytes() <= small_->capacity) {
    // The fingerprint rides in the message's header: no message of its own.
    std::shared_ptr<SmallAllreduce> small = small_;
    ProcessGroupGloo* self = this;  // ops run before the destructor returns (it joins the worker)
    return {[t, op, small, self, divide_if_avg](uint32_t, const Fingerprint& f) {
              const size_t n = static_cast<size_t>(t.numel());
              const int parity = small->exchange(f, t.raw_data(), t.nbytes());
              self->check_peers(f, parity);  // before any peer data is used
              if (n == 0) return;
              if (is_reduced_float(t.dtype())) {
                // Every rank's payload at hand: combine them in float32 in one pass and round
                // once (AVG included), as the shared-memory transport does.
                const void* srcs[shm::ShmSegment::kMaxLocalRanks];
                std::vector<const void*> many;
                const void** p = srcs;
                if (small->size > shm::ShmSegment::kMaxLocalRanks) {
                  many.resize(static_cast<size_t>(small->size));
                  p = many.data();
                }
                for (int r = 0; r < small->size; r++) p[r] = small->payload(parity, r);
                shm::reduce_sources(t.raw_data(), p, small->size, n, t.dtype(), op);
                return;
              }
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

std::shared_ptr<Work> ProcessGroupGloo::allreduce(const Tensor& tensor, ReduceOp op) {
  return allreduce_any(tensor, op, /*run_inline=*/false, -1, 0);
}

std::shared_ptr<Work> ProcessGroupGloo::allreduce_bucket(const Tensor& tensor, ReduceOp op, bool run_inline,
                                                            int bucket, int buckets) {
  return allreduce_any(tensor, op, run_inline, bucket, buckets);
}

std::shared_ptr<Work> ProcessGroupGloo::reduce(const Tensor& tensor, int root, ReduceOp op) {
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
    std::shared_ptr<LocalCollectives> local = local_;
    Tensor t = tensor;
    return enqueue(fp, {tensor}, [t, root, op, local](uint32_t, const Fingerprint& f) { local->reduce(t, root, op, &f); },
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

std::shared_ptr<Work> ProcessGroupGloo::reduce_scatter(const Tensor& output, const Tensor& input, ReduceOp op) {
  check_reduction("reduceScatter", "input", input, op);
  check_collective_tensor("reduceScatter", "output", output);
  DDP4J_CHECK_ARG(output.dtype() == input.dtype(), "reduceScatter: output ", output.describe(), " and input ",
                  input.describe(), " have different dtypes");
  DDP4J_CHECK_ARG(input.numel() == output.numel() * size(), "reduceScatter: input ", input.describe(), " must have ",
                  size(), " x ", output.numel(), " = ", output.numel() * size(),
                  " elements (world size x output)");
  return reduce_scatter_blocks(output, {input}, input.numel(), op);
}

std::shared_ptr<Work> ProcessGroupGloo::reduce_scatter(const Tensor& output, const std::vector<Tensor>& inputs,
                                                       ReduceOp op) {
  check_reduction("reduceScatter", "output", output, op);
  check_reduce_scatter_inputs(output, inputs,
                              [&](const Tensor& t) { check_collective_tensor("reduceScatter", "input", t); });
  return reduce_scatter_blocks(output, inputs, output.numel() * size(), op);
}

namespace {

/** Where rank r's block starts: in the one input tensor (r * block bytes), or the r-th of the list. */
const void* block_pointer(const std::vector<Tensor>& blocks, int r, size_t block_bytes) {
  if (blocks.size() == 1) return static_cast<const char*>(blocks[0].raw_data()) + static_cast<size_t>(r) * block_bytes;
  return blocks[static_cast<size_t>(r)].raw_data();
}

/** Whether `output` shares a byte with any block but this rank's own (which the shared-memory path allows). */
bool aliases_another_block(const Tensor& output, const std::vector<Tensor>& blocks, int rank) {
  const auto* lo = static_cast<const char*>(output.raw_data());
  const auto* hi = lo + output.nbytes();
  const int world = blocks.size() == 1 ? static_cast<int>(blocks[0].nbytes() / std::max<size_t>(output.nbytes(), 1))
                                       : static_cast<int>(blocks.size());
  for (int r = 0; r < world; r++) {
    const auto* b = static_cast<const char*>(block_pointer(blocks, r, output.nbytes()));
    const bool overlaps = b < hi && lo < b + output.nbytes();
    if (overlaps && !(r == rank && b == lo)) return true;
  }
  return false;
}

}  // namespace

std::shared_ptr<Work> ProcessGroupGloo::reduce_scatter_blocks(const Tensor& output, const std::vector<Tensor>& blocks,
                                                              int64_t elements, ReduceOp op) {
  Fingerprint fp;
  fp.kind = Fingerprint::kReduceScatter;
  fp.arg = static_cast<uint32_t>(op);
  fp.dtype = static_cast<uint32_t>(output.dtype());
  fp.numel = static_cast<uint64_t>(elements);
  if (shm_only() && !aliases_another_block(output, blocks, rank())) {
    // One host: each rank reduces its own block from the others' pieces in the segment.
    std::shared_ptr<LocalCollectives> local = local_;
    Tensor out = output;
    const int world = size();
    std::vector<Tensor> keep(blocks);
    keep.push_back(output);
    return enqueue(fp, std::move(keep), [local, out, blocks, world, op](uint32_t, const Fingerprint& f) {
      std::vector<const void*> pointers(static_cast<size_t>(world));
      for (int r = 0; r < world; r++) pointers[static_cast<size_t>(r)] = block_pointer(blocks, r, out.nbytes());
      local->reduce_scatter(pointers, out.raw_data(), static_cast<size_t>(out.numel()), out.dtype(), op, &f);
    }, Check::kAlong, shm_inline(out.nbytes() * static_cast<size_t>(world)));
  }
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

}  // namespace ddp4j

// The Gloo group's collectives that move data without reducing it (broadcast, all-gather,
// barrier) and its send and recv: validate, describe, queue. See process_group.h.
#include <gloo/allgather.h>
#include <gloo/broadcast.h>

#include <cstring>

#include "comm/gloo/point_to_point.h"
#include "comm/gloo/process_group.h"
#include "comm/gloo/tensor_checks.h"
#include "comm/local/local_collectives.h"

namespace ddp4j {

using Millis = std::chrono::milliseconds;
using gloo_detail::check_collective_tensor;

bool ProcessGroupGloo::shm_only() const { return local_ && local_->single_host(); }

// A small op costs microseconds through shared memory; a hand-off to the worker would cost tens.
bool ProcessGroupGloo::shm_inline(size_t bytes) const { return shm_only() && bytes <= local_->inline_bytes(); }

std::shared_ptr<Work> ProcessGroupGloo::broadcast(const Tensor& tensor, int root) {
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
  if (local_) {
    std::shared_ptr<LocalCollectives> local = local_;
    // The fingerprint exchange stays on even on one host: the transport's broadcast root only
    // publishes and never reads its peers, so two ranks that both think they are the root would
    // not notice.
    return enqueue(fp, {tensor}, [t, root, local](uint32_t tag, const Fingerprint& f) { local->broadcast(t, root, tag, &f); },
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

std::shared_ptr<Work> ProcessGroupGloo::allgather(const Tensor& output, const Tensor& input) {
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
    std::shared_ptr<LocalCollectives> local = local_;
    return enqueue(fp, {input, output}, [in, out, local](uint32_t, const Fingerprint& f) {
      local->allgather(in.raw_data(), out.raw_data(), in.nbytes(), &f);
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

std::shared_ptr<Work> ProcessGroupGloo::allgather(const std::vector<Tensor>& outputs, const Tensor& input) {
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
  std::shared_ptr<LocalCollectives> local = shm_only() ? local_ : nullptr;
  const bool inline_ok = shm_inline(in.nbytes() * static_cast<size_t>(world));
  return enqueue(fp, std::move(keep), [in, outs, context, timeout, world, local](uint32_t tag, const Fingerprint& f) {
    if (in.numel() == 0) return;
    // Gather into one flat buffer (Gloo's layout), then copy each rank's block out. The flat buffer
    // also keeps this correct when an output aliases the input.
    Tensor flat = Tensor::empty({in.numel() * world}, in.dtype(), in.device());
    if (local) {
      local->allgather(in.raw_data(), flat.raw_data(), in.nbytes(), &f);
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
  }, local ? Check::kAlong : Check::kBefore, local && inline_ok);
}

std::shared_ptr<Work> ProcessGroupGloo::barrier() {
  // The header exchange is an allgather, which no rank leaves before every rank has entered it:
  // that is the barrier. On one host the shared-memory barrier replaces it.
  Fingerprint fp;
  fp.kind = Fingerprint::kBarrier;
  if (shm_only()) {
    std::shared_ptr<LocalCollectives> local = local_;
    return enqueue(fp, {}, [local](uint32_t, const Fingerprint& f) { local->barrier(&f); }, Check::kAlong, true);
  }
  return enqueue(fp, {}, nullptr, Check::kBefore);
}

std::shared_ptr<Work> ProcessGroupGloo::send(const Tensor& tensor, int dst, int tag) {
  check_collective_tensor("send", "input", tensor);
  check_peer("send", "destination", dst, /*may_be_self=*/false);
  return p2p_->send(tensor, dst, tag);
}

std::shared_ptr<Work> ProcessGroupGloo::recv(const Tensor& tensor, int src, int tag) {
  check_collective_tensor("recv", "output", tensor);
  check_peer("recv", "source", src, /*may_be_self=*/false);
  return p2p_->recv(tensor, src, tag);
}

}  // namespace ddp4j

// ring.h: Gloo's own (ring) all-reduce of a tensor over a Gloo context: what the Gloo group runs
// for larger tensors and the hierarchical all-reduce runs among the hosts' leaders.
#pragma once
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>

#include "ddp4j/process_group.h"
#include "ddp4j/tensor.h"

namespace gloo {
class Context;
}

namespace ddp4j {
namespace gloo_detail {

/** Gloo's own (ring) all-reduce of the first n elements of t, in place (AVG reduces as SUM). */
void ring_allreduce(const std::shared_ptr<gloo::Context>& context, const Tensor& t, size_t n, ReduceOp op,
                    uint32_t tag, std::chrono::milliseconds timeout);

}  // namespace gloo_detail
}  // namespace ddp4j

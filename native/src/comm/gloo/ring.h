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

/**
 * Gloo's own (ring) all-reduce of the first n elements of t, in place (AVG reduces as SUM).
 * bfloat16 / float16: the chunks travel between ranks in the 16-bit type and each hop combines
 * in float32 and rounds once (reduce_low_into), so with p ranks a sum is rounded up to p - 1
 * times: exact (rounded once) for p = 2; otherwise within (p - 1) half-ulps of the final
 * magnitude's partial sums, i.e. a relative error of at most about (p - 1) * 2^-9 (bfloat16) or
 * (p - 1) * 2^-12 (float16) of the sum of |inputs|. Rounding once would need float32 on the wire.
 */
void ring_allreduce(const std::shared_ptr<gloo::Context>& context, const Tensor& t, size_t n, ReduceOp op,
                    uint32_t tag, std::chrono::milliseconds timeout);

}  // namespace gloo_detail
}  // namespace ddp4j

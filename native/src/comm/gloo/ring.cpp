// Gloo's ring all-reduce over float32, int64, bfloat16 and float16 tensors; see ring.h.
#include "comm/gloo/ring.h"

#include <gloo/allreduce.h>

#include "comm/gloo/reduce_functions.h"

namespace ddp4j {

void gloo_detail::ring_allreduce(const std::shared_ptr<gloo::Context>& context, const Tensor& t, size_t n,
                                 ReduceOp op, uint32_t tag, std::chrono::milliseconds timeout) {
  gloo::AllreduceOptions opts(context);
  opts.setTag(tag);
  opts.setTimeout(timeout);
  if (t.dtype() == DType::Float32) {
    opts.setOutput<float>(t.data<float>(), n);
    opts.setReduceFunction(reduce_function<float>(op));
  } else if (is_reduced_float(t.dtype())) {
    // The chunks travel in the 16-bit type (half the bytes of float32: the point of compressing),
    // so every hop rounds its partial sum once; see ring.h.
    opts.setOutput<uint16_t>(static_cast<uint16_t*>(t.raw_data()), n);
    opts.setReduceFunction(t.dtype() == DType::BFloat16 ? reduce_low_function<DType::BFloat16>(op)
                                                        : reduce_low_function<DType::Float16>(op));
  } else {
    opts.setOutput<int64_t>(t.data<int64_t>(), n);
    opts.setReduceFunction(reduce_function<int64_t>(op));
  }
  gloo::allreduce(opts);
}

}  // namespace ddp4j

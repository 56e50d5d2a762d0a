// Gloo's ring all-reduce over float32 and int64 tensors; see ring.h.
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
  } else {
    opts.setOutput<int64_t>(t.data<int64_t>(), n);
    opts.setReduceFunction(reduce_function<int64_t>(op));
  }
  gloo::allreduce(opts);
}

}  // namespace ddp4j

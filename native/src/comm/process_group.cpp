// Backend-neutral parts of process_group.h: Work's completion and waiting, names for messages.
#include "ddp4j/process_group.h"

#include <sstream>

namespace ddp4j {

const char* reduce_op_name(ReduceOp op) {
  switch (op) {
    case ReduceOp::SUM: return "SUM";
    case ReduceOp::AVG: return "AVG";
    case ReduceOp::PRODUCT: return "PRODUCT";
    case ReduceOp::MIN: return "MIN";
    case ReduceOp::MAX: return "MAX";
  }
  return "UNKNOWN";
}

std::string duration_str(std::chrono::milliseconds d) {
  const long long ms = d.count();
  std::ostringstream out;
  if (ms >= 60000 && ms % 60000 == 0) {
    out << ms / 60000 << " min";
  } else if (ms >= 1000 && ms % 1000 == 0) {
    out << ms / 1000 << " s";
  } else if (ms >= 1000) {
    out << static_cast<double>(ms) / 1000.0 << " s";
  } else {
    out << ms << " ms";
  }
  return out.str();
}

Work::Work(std::string description, std::vector<Tensor> keep_alive)
    : description_(std::move(description)), keep_alive_(std::move(keep_alive)) {}

Work::Work(std::function<std::string()> describe, std::vector<Tensor> keep_alive)
    : describe_(std::move(describe)), keep_alive_(std::move(keep_alive)) {}

const std::string& Work::description() const {
  std::call_once(described_, [this] {
    if (describe_) description_ = describe_();
  });
  return description_;
}

bool Work::is_completed() {
  std::lock_guard<std::mutex> lock(mutex_);
  return done_;
}

std::exception_ptr Work::error() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return error_;
}

void Work::wait(std::chrono::milliseconds timeout) {
  std::unique_lock<std::mutex> lock(mutex_);
  if (timeout.count() <= 0) {
    done_cv_.wait(lock, [this] { return done_; });
  } else if (!done_cv_.wait_for(lock, timeout, [this] { return done_; })) {
    ErrorFacts facts;
    facts.op = description();
    facts.timeout_ms = timeout.count();
    throw Error(ErrorKind::Timeout,
                detail::concat(description(), " did not complete within ", duration_str(timeout),
                               " (the wait's timeout); it is still running: a peer may be slow or stuck"),
                std::move(facts));
  }
  if (error_) std::rethrow_exception(error_);
}

void Work::synchronize() { wait(); }

void Work::finish(std::exception_ptr error) {
  std::vector<Tensor> release;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (done_) return;
    done_ = true;
    error_ = std::move(error);
    release.swap(keep_alive_);
  }
  done_cv_.notify_all();
  // `release` drops the tensors here, outside the lock.
}

void ProcessGroup::check_allgather_outputs(const std::vector<Tensor>& outputs, const Tensor& input,
                                           const std::function<void(const Tensor&)>& check_output) const {
  DDP4J_CHECK_ARG(static_cast<int>(outputs.size()) == size(), "allGather: got ", outputs.size(),
                  " output tensors for a world of ", size(), "; pass one per rank");
  for (size_t r = 0; r < outputs.size(); r++) {
    check_output(outputs[r]);
    DDP4J_CHECK_ARG(outputs[r].dtype() == input.dtype() && outputs[r].numel() == input.numel(), "allGather: output ",
                    r, " is ", outputs[r].describe(), " but the input is ", input.describe(),
                    "; every output needs the input's dtype and number of elements");
  }
}

void ProcessGroup::check_reduce_scatter_inputs(const Tensor& output, const std::vector<Tensor>& inputs,
                                               const std::function<void(const Tensor&)>& check_input) const {
  DDP4J_CHECK_ARG(static_cast<int>(inputs.size()) == size(), "reduceScatter: got ", inputs.size(),
                  " input tensors for a world of ", size(), "; pass one per rank");
  for (size_t r = 0; r < inputs.size(); r++) {
    check_input(inputs[r]);
    DDP4J_CHECK_ARG(inputs[r].dtype() == output.dtype() && inputs[r].numel() == output.numel(), "reduceScatter: input ",
                    r, " is ", inputs[r].describe(), " but the output is ", output.describe(),
                    "; every input needs the output's dtype and number of elements");
  }
}

void ProcessGroup::check_peer(const char* op, const char* role, int peer, bool may_be_self) const {
  DDP4J_CHECK_ARG(peer >= 0 && peer < size(), op, ": ", role, " rank ", peer, " is not in [0, ", size(),
                  ") (ranks of this group, which has ", size(), size() == 1 ? " rank" : " ranks", ")");
  DDP4J_CHECK_ARG(may_be_self || peer != rank(), op, ": ", role, " rank ", peer,
                  " is this rank itself; a rank cannot send to or receive from itself (copy the tensor instead)");
}

}  // namespace ddp4j

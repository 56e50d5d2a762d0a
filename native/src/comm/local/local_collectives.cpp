// Shared memory inside a Gloo process group: the composed collectives (all on one host, or
// hierarchical across hosts). See local_collectives.h for the contract, local_setup.cpp for create().
#include "comm/local/local_collectives.h"

#include <gloo/broadcast.h>
#include <gloo/context.h>

#include "comm/gloo/reduce_functions.h"
#include "comm/gloo/ring.h"
#include "comm/local/shm/shm_transport.h"

namespace ddp4j {

LocalCollectives::~LocalCollectives() = default;

bool LocalCollectives::broken() const { return shm_ && shm_->broken(); }

int LocalCollectives::dead_rank() const { return shm_ ? shm_->dead_rank() : -1; }

long LocalCollectives::dead_pid() const { return shm_ ? static_cast<long>(shm_->dead_pid()) : 0; }

void LocalCollectives::allreduce(const Tensor& t, ReduceOp op, uint32_t tag, const Fingerprint* fp) {
  if (t.numel() == 0) return;
  const size_t n = static_cast<size_t>(t.numel());
  void* p = t.raw_data();
  if (hosts_ == 1) {
    shm_->allreduce(p, p, n, t.dtype(), op, fp);  // its AVG divides by the local size, here the world
    return;
  }
  const ReduceOp base = op == ReduceOp::AVG ? ReduceOp::SUM : op;
  if (shm_) shm_->reduce(p, p, n, t.dtype(), base, 0, fp);
  if (leaders_) gloo_detail::ring_allreduce(leaders_, t, n, base, tag, timeout_);
  if (shm_) shm_->broadcast(p, t.nbytes(), 0, fp);
  // bfloat16 / float16: the host's reduce rounds once, the leaders' ring once per hop (ring.h),
  // and AVG's division once more.
  if (op == ReduceOp::AVG) gloo_detail::divide_by_world(t, n, world_);
}

void LocalCollectives::reduce(const Tensor& t, int root, ReduceOp op, const Fingerprint* fp) {
  if (t.numel() == 0) return;
  void* p = t.raw_data();
  // The transport's reduce leaves non-roots' buffers alone (their output is null) and skips the
  // copy-out there: less than an all-reduce of a copy.
  shm_->reduce(p, rank_ == root ? p : nullptr, static_cast<size_t>(t.numel()), t.dtype(), op,
               local_index_[static_cast<size_t>(root)], fp);
}

void LocalCollectives::broadcast(const Tensor& t, int root, uint32_t tag, const Fingerprint* fp) {
  if (t.numel() == 0) return;
  void* p = t.raw_data();
  const size_t bytes = t.nbytes();
  const int root_local = local_index_[static_cast<size_t>(root)];
  if (hosts_ == 1) {
    shm_->broadcast(p, bytes, root_local, fp);
    return;
  }
  // Root's host first (so its leader has the data), then the leaders, then the other hosts.
  const int root_host = host_of_[static_cast<size_t>(root)];
  if (host_index_ == root_host && shm_) shm_->broadcast(p, bytes, root_local, fp);
  if (leaders_) {
    gloo::BroadcastOptions opts(leaders_);
    opts.setTag(tag);
    opts.setTimeout(timeout_);
    opts.setRoot(root_host);
    opts.setOutput<uint8_t>(static_cast<uint8_t*>(p), bytes);
    gloo::broadcast(opts);
  }
  if (host_index_ != root_host && shm_) shm_->broadcast(p, bytes, 0, fp);
}

void LocalCollectives::allgather(const void* in, void* out, size_t bytes, const Fingerprint* fp) {
  if (bytes == 0) return;
  shm_->allgather(in, out, bytes, fp);
}

void LocalCollectives::reduce_scatter(const std::vector<const void*>& blocks, void* out, size_t count, DType dtype,
                                     ReduceOp op, const Fingerprint* fp) {
  std::vector<const void*> by_local(blocks.size());
  for (size_t r = 0; r < blocks.size(); r++) by_local[static_cast<size_t>(local_index_[r])] = blocks[r];
  shm_->reduce_scatter(by_local.data(), out, count, dtype, op, fp);
}

void LocalCollectives::barrier(const Fingerprint* fp) { shm_->barrier(fp); }

void LocalCollectives::abort(const std::string& reason, ErrorKind kind) {
  if (shm_) shm_->abort(reason, kind);
}

void LocalCollectives::abort_for_death(const std::string& reason, int dead_rank, long dead_pid) {
  if (shm_) shm_->abort_for_death(reason, dead_rank, static_cast<pid_t>(dead_pid));
}

void LocalCollectives::close_connections() {
  if (!leaders_) return;
  try {
    leaders_->closeConnections();
  } catch (const std::exception&) {
  }
}

}  // namespace ddp4j

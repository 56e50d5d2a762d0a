// The NCCL backend's reduce, reduceScatter (tensor and list form) and send/recv on real GPUs.
// One GPU: a 1-rank group (each op is then the identity, which still runs the NCCL call end to
// end) and every argument error, none of which may abort the group. Two or more GPUs: two ranks
// as threads of this process (NCCL needs one device per rank) with values worked out by hand,
// and a recv that no rank sends to, which must fail at the group's timeout, naming the op.
// Without a GPU or without NCCL it prints "SKIPPED: <reason>" and exits 77 (ctest: skipped).
#include <chrono>
#include <cstdio>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "cuda/cuda_context.h"
#include "cuda/nccl/nccl_loader.h"
#include "cuda/nccl/nccl_process_group.h"
#include "ddp4j/errors.h"
#include "ddp4j/ops.h"
#include "test_util.h"

using namespace ddp4j;

namespace {

const Device kCpu{DeviceType::CPU, 0};

Device gpu(int index) { return Device{DeviceType::CUDA, index}; }

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

/** The message of the Error that f throws with kind `expected` ("" and a failed check otherwise). */
std::string error_of(const std::function<void()>& f, ErrorKind expected) {
  try {
    f();
  } catch (const Error& e) {
    CHECK(e.kind() == expected);
    return e.what();
  }
  CHECK(!"an Error was expected");
  return std::string();
}

Tensor floats_on(int device, const std::vector<float>& values) {
  Tensor t = Tensor::empty({static_cast<int64_t>(values.size())}, DType::Float32);
  for (size_t i = 0; i < values.size(); i++) t.data<float>()[i] = values[i];
  return ops::to_device(t, gpu(device));
}

Tensor longs_on(int device, const std::vector<int64_t>& values) {
  Tensor t = Tensor::empty({static_cast<int64_t>(values.size())}, DType::Int64);
  for (size_t i = 0; i < values.size(); i++) t.data<int64_t>()[i] = values[i];
  return ops::to_device(t, gpu(device));
}

std::vector<float> floats_of(const Tensor& t) {
  Tensor h = ops::to_device(t, kCpu);
  return std::vector<float>(h.data<float>(), h.data<float>() + h.numel());
}

std::vector<int64_t> longs_of(const Tensor& t) {
  Tensor h = ops::to_device(t, kCpu);
  return std::vector<int64_t>(h.data<int64_t>(), h.data<int64_t>() + h.numel());
}

/** CHECK that `got` equals `want` exactly (small integers: every reduction is exact), printing both on failure. */
template <typename T>
void check_values(const char* what, const std::vector<T>& got, const std::vector<T>& want) {
  bool same = got == want;
  if (!same) {
    std::fprintf(stderr, "%s: got", what);
    for (T v : got) std::fprintf(stderr, " %g", static_cast<double>(v));
    std::fprintf(stderr, ", want");
    for (T v : want) std::fprintf(stderr, " %g", static_cast<double>(v));
    std::fprintf(stderr, "\n");
  }
  CHECK(same);
}

NcclOptions options_with_timeout(std::chrono::milliseconds timeout) {
  NcclOptions o;
  o.timeout = timeout;
  return o;
}

// ---- one rank ------------------------------------------------------------------------------

void test_one_rank() {
  ProcessGroupNccl pg(ProcessGroupNccl::create_unique_id(), 0, 1, 0, options_with_timeout(std::chrono::seconds(60)));

  Tensor t = floats_on(0, {1, 2, 3});
  pg.reduce(t, 0, ReduceOp::SUM)->wait();
  check_values<float>("1-rank reduce SUM", floats_of(t), {1, 2, 3});
  pg.reduce(t, 0, ReduceOp::AVG)->wait();
  check_values<float>("1-rank reduce AVG", floats_of(t), {1, 2, 3});

  Tensor in = floats_on(0, {4, 5});
  Tensor out = floats_on(0, {0, 0});
  pg.reduce_scatter(out, in, ReduceOp::MAX)->wait();
  check_values<float>("1-rank reduceScatter", floats_of(out), {4, 5});
  pg.reduce_scatter(in, in, ReduceOp::SUM)->wait();  // in place: block 0 of the input is the input
  check_values<float>("1-rank reduceScatter in place", floats_of(in), {4, 5});

  Tensor l_out = longs_on(0, {0, 0, 0});
  pg.reduce_scatter(l_out, std::vector<Tensor>{longs_on(0, {7, -8, 9})}, ReduceOp::PRODUCT)->wait();
  check_values<int64_t>("1-rank reduceScatter list", longs_of(l_out), {7, -8, 9});
  // Empty tensors complete without calling NCCL.
  pg.reduce(floats_on(0, {}), 0, ReduceOp::SUM)->wait();

  // Argument errors: thrown at the call, and the group stays usable.
  std::string m = error_of([&] { pg.send(t, 0, 0); }, ErrorKind::InvalidArgument);
  CHECK(contains(m, "send: destination rank 0 is this rank itself"));
  m = error_of([&] { pg.recv(t, 1, 0); }, ErrorKind::InvalidArgument);
  CHECK(contains(m, "recv: source rank 1 is not in [0, 1)"));
  m = error_of([&] { pg.send(t, 0, -1); }, ErrorKind::InvalidArgument);
  CHECK(contains(m, "send: tag -1 is negative; tags are >= 0"));
  m = error_of([&] { pg.reduce(t, 1, ReduceOp::SUM); }, ErrorKind::InvalidArgument);
  CHECK(contains(m, "reduce: destination rank 1 is not in [0, 1)"));
  m = error_of([&] { pg.reduce(longs_on(0, {1}), 0, ReduceOp::AVG); }, ErrorKind::InvalidArgument);
  CHECK(contains(m, "reduce: ReduceOp.AVG needs a floating tensor"));
  m = error_of([&] { pg.reduce(Tensor::zeros({2}, DType::Float32), 0, ReduceOp::SUM); },
               ErrorKind::InvalidArgument);
  CHECK(contains(m, "reduce: the nccl process group works on tensors on its device cuda:0"));
  m = error_of([&] { pg.reduce_scatter(floats_on(0, {0, 0}), floats_on(0, {1, 2, 3}), ReduceOp::SUM); },
               ErrorKind::InvalidArgument);
  CHECK(contains(m, "reduceScatter: input float32[3]") && contains(m, "1 x 2 = 2 elements"));
  m = error_of([&] { pg.reduce_scatter(longs_on(0, {0}), floats_on(0, {1}), ReduceOp::SUM); },
               ErrorKind::InvalidArgument);
  CHECK(contains(m, "different dtypes"));
  Tensor big = floats_on(0, {1, 2, 3, 4});
  m = error_of([&] { pg.reduce_scatter(big.flat_slice(1, {3}), big.flat_slice(0, {3}), ReduceOp::SUM); },
               ErrorKind::InvalidArgument);
  CHECK(contains(m, "overlaps the input"));
  m = error_of([&] { pg.reduce_scatter(out, std::vector<Tensor>{in, in}, ReduceOp::SUM); },
               ErrorKind::InvalidArgument);
  CHECK(contains(m, "reduceScatter: got 2 input tensors for a world of 1"));
  m = error_of([&] { pg.reduce_scatter(out, std::vector<Tensor>{floats_on(0, {1})}, ReduceOp::SUM); },
               ErrorKind::InvalidArgument);
  CHECK(contains(m, "reduceScatter: input 0 is float32[1]"));
  CHECK(!pg.aborted());

  pg.reduce(t, 0, ReduceOp::MIN)->wait();
  check_values<float>("1-rank reduce after argument errors", floats_of(t), {1, 2, 3});
}

// ---- two ranks (threads, one GPU each) ------------------------------------------------------

/** Runs body(rank, group) on two threads, one rank each on cuda:0 and cuda:1, with one fresh communicator. */
void on_two_ranks(std::chrono::milliseconds timeout, const std::function<void(int, ProcessGroupNccl&)>& body) {
  const nccl::UniqueId id = ProcessGroupNccl::create_unique_id();
  std::vector<std::thread> threads;
  for (int rank = 0; rank < 2; rank++) {
    threads.emplace_back([&, rank] {
      try {
        cuda::DeviceGuard guard(rank);
        ProcessGroupNccl pg(id, rank, 2, rank, options_with_timeout(timeout));
        body(rank, pg);
      } catch (const std::exception& e) {
        std::fprintf(stderr, "rank %d: unexpected error: %s\n", rank, e.what());
        CHECK(!"unexpected error on a rank");
      }
    });
  }
  for (auto& t : threads) t.join();
}

void test_two_ranks() {
  on_two_ranks(std::chrono::seconds(60), [](int rank, ProcessGroupNccl& pg) {
    const float r = static_cast<float>(rank);
    // reduce: only the root changes.
    Tensor t = floats_on(rank, {r + 1, 10 * (r + 1)});
    pg.reduce(t, 1, ReduceOp::SUM)->wait();
    check_values<float>("reduce SUM to 1", floats_of(t), rank == 1 ? std::vector<float>{3, 30} : std::vector<float>{1, 10});
    Tensor a = floats_on(rank, {r + 1, 10 * (r + 1)});
    pg.reduce(a, 0, ReduceOp::AVG)->wait();
    check_values<float>("reduce AVG to 0", floats_of(a), rank == 0 ? std::vector<float>{1.5f, 15} : std::vector<float>{2, 20});
    Tensor m = longs_on(rank, {rank == 0 ? 5 : -5, rank == 0 ? -7 : 7});
    pg.reduce(m, 0, ReduceOp::MAX)->wait();
    check_values<int64_t>("reduce MAX int64 to 0", longs_of(m),
                          rank == 0 ? std::vector<int64_t>{5, 7} : std::vector<int64_t>{-5, 7});

    // reduceScatter: rank r's input is [4r, 4r+1, 4r+2, 4r+3]; the sum is [4, 6, 8, 10].
    Tensor in = floats_on(rank, {4 * r, 4 * r + 1, 4 * r + 2, 4 * r + 3});
    Tensor out = floats_on(rank, {-1, -1});
    pg.reduce_scatter(out, in, ReduceOp::SUM)->wait();
    check_values<float>("reduceScatter SUM", floats_of(out), rank == 0 ? std::vector<float>{4, 6} : std::vector<float>{8, 10});
    Tensor own_block = in.flat_slice(2 * rank, {2});  // NCCL's in-place form
    pg.reduce_scatter(own_block, in, ReduceOp::SUM)->wait();
    check_values<float>("reduceScatter in place", floats_of(own_block),
                        rank == 0 ? std::vector<float>{4, 6} : std::vector<float>{8, 10});
    // List form, int64 MIN: rank r's inputs are {[r, -r], [10 + r, 10 - r]}.
    Tensor l_out = longs_on(rank, {0, 0});
    std::vector<Tensor> l_in{longs_on(rank, {rank, -rank}), longs_on(rank, {10 + rank, 10 - rank})};
    pg.reduce_scatter(l_out, l_in, ReduceOp::MIN)->wait();
    check_values<int64_t>("reduceScatter list MIN", longs_of(l_out),
                          rank == 0 ? std::vector<int64_t>{0, -1} : std::vector<int64_t>{10, 9});
    // An output that is one of the inputs: the flat temporary makes that safe.
    std::vector<Tensor> f_in{floats_on(rank, {1 + r, 2}), floats_on(rank, {3, 4 * (r + 1)})};
    pg.reduce_scatter(f_in[rank], f_in, ReduceOp::SUM)->wait();
    check_values<float>("reduceScatter list, output aliases an input", floats_of(f_in[rank]),
                        rank == 0 ? std::vector<float>{3, 4} : std::vector<float>{6, 12});

    // send/recv: 0 -> 1 twice (arrive in order; tags are ignored), then 1 -> 0.
    if (rank == 0) {
      auto w1 = pg.send(floats_on(0, {1, 2, 3}), 1, 7);
      auto w2 = pg.send(floats_on(0, {4, 5, 6}), 1, 0);
      w1->wait();
      w2->wait();
      Tensor back = floats_on(0, {0, 0});
      pg.recv(back, 1, 0)->wait();
      check_values<float>("recv from 1", floats_of(back), {-1, -2});
    } else {
      Tensor first = floats_on(1, {0, 0, 0});
      Tensor second = floats_on(1, {0, 0, 0});
      pg.recv(first, 0, 7)->wait();
      pg.recv(second, 0, 0)->wait();
      check_values<float>("first recv from 0", floats_of(first), {1, 2, 3});
      check_values<float>("second recv from 0", floats_of(second), {4, 5, 6});
      pg.send(floats_on(1, {-1, -2}), 0, 0)->wait();
    }
    // A collective after the point-to-point ops still lines up.
    Tensor after = floats_on(rank, {r});
    pg.reduce(after, 0, ReduceOp::SUM)->wait();
    if (rank == 0) check_values<float>("reduce after send/recv", floats_of(after), {1});
    CHECK(!pg.aborted());
  });
}

void test_recv_without_send_times_out() {
  on_two_ranks(std::chrono::seconds(3), [](int rank, ProcessGroupNccl& pg) {
    // One exchange first: NCCL connects a pair of ranks at their first send/recv, which needs
    // both; once connected, a recv is queued at once and waits on the GPU for the missing send.
    Tensor t = floats_on(rank, {0, 0, 0, 0});
    if (rank == 0) {
      pg.send(t, 1, 0)->wait();
      return;  // sends nothing more; its destructor finalizes (bounded) or aborts
    }
    pg.recv(t, 0, 0)->wait();
    // Timeout when the watchdog fails the work first; Distributed (quoting the same reason) when
    // the waiter sees the aborted kernel end first. Both are fine; a hang or success is not.
    std::string m;
    try {
      pg.recv(t, 0, 0)->wait();
      CHECK(!"the recv without a send completed");
    } catch (const Error& e) {
      CHECK(e.kind() == ErrorKind::Timeout || e.kind() == ErrorKind::Distributed);
      m = e.what();
    }
    std::fprintf(stderr, "recv without send: %s\n", m.c_str());
    CHECK(contains(m, "NCCL recv from rank 0 of 4 float32 elements (16 bytes)"));
    CHECK(contains(m, "timed out after 3 s"));
    CHECK(contains(m, "For send/recv: the peer must post the matching recv/send"));
    CHECK(pg.aborted());
  });
}

}  // namespace

int main() {
  int devices = 0;
  try {
    devices = cuda::device_count();
    if (devices == 0) throw Error(ErrorKind::IllegalState, "no CUDA device");
  } catch (const Error& e) {
    std::printf("SKIPPED: %s\n", e.what());
    return 77;
  }
  try {
    const nccl::Api& api = nccl::api();
    std::printf("%d CUDA device(s), NCCL %s\n", devices, api.version_string().c_str());
  } catch (const Error& e) {
    std::printf("SKIPPED: %s\n", e.what());
    return 77;
  }
  try {
    test_one_rank();
    if (devices >= 2) {
      test_two_ranks();
      test_recv_without_send_times_out();
    } else {
      std::printf("one GPU: the two-rank part needs two (NCCL runs one rank per device)\n");
    }
  } catch (const Error& e) {
    std::printf("FAIL unexpected error: %s\n", e.what());
    return 1;
  }
  std::printf("%s\n", test_failures() == 0 ? "NCCL reduce, reduceScatter and send/recv agree" : "FAILURES (see above)");
  return test_failures();
}

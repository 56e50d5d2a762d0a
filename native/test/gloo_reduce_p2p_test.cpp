// reduce, reduce_scatter, send and recv of ProcessGroupGloo, ranks as threads of one process:
// values against the arithmetic done by hand, on every data path (shared memory, the small
// all-reduce, Gloo's ring), and the errors of ranks that disagree. Returns non-zero on failure.
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <thread>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "gloo_test_ranks.h"
#include "test_util.h"

using namespace ddp4j;
using ddp4j::test::filled;
using ddp4j::test::run_ranks;

namespace {

/** Element i of rank r's input: distinct per rank and element, exact in float32. */
float value(int rank, int64_t i) { return static_cast<float>((rank + 1) * 1000 + i % 997); }

Tensor input_of(int rank, int64_t n) {
  Tensor t = Tensor::empty({n}, DType::Float32);
  for (int64_t i = 0; i < n; i++) t.data<float>()[i] = value(rank, i);
  return t;
}

/** Sum over ranks of value(r, i). */
float sum_of(int world, int64_t i) {
  float s = 0;
  for (int r = 0; r < world; r++) s += value(r, i);
  return s;
}

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

GlooOptions options(bool shm, std::chrono::milliseconds timeout = std::chrono::seconds(20)) {
  GlooOptions o;
  o.timeout = timeout;
  o.shm = shm;
  return o;
}

/** reduce and reduce_scatter at 3 ranks: a small size (shm or small all-reduce) and a ring-sized one. */
void test_reduce_and_reduce_scatter(bool shm) {
  const int world = 3;
  run_ranks(world, options(shm), [&](int rank, ProcessGroup& pg) {
    // 28 B, 400 KB and 1.2 MB: under and over the small all-reduce; the last ends inside a shared-memory piece
    for (int64_t n : {int64_t{7}, int64_t{100000}, int64_t{300001}}) {
      Tensor t = input_of(rank, n);
      pg.reduce(t, 1, ReduceOp::SUM)->wait();
      for (int64_t i : {int64_t{0}, n / 2, n - 1}) {
        CHECK_NEAR(t.data<float>()[i], rank == 1 ? sum_of(world, i) : value(rank, i), 0.0);  // others unchanged
      }
      Tensor mx = input_of(rank, n);
      pg.reduce(mx, 0, ReduceOp::MAX)->wait();
      if (rank == 0) CHECK_NEAR(mx.data<float>()[n - 1], value(world - 1, n - 1), 0.0);
      Tensor avg_in = input_of(rank, n);
      pg.reduce(avg_in, 2, ReduceOp::AVG)->wait();
      CHECK_NEAR(avg_in.data<float>()[n - 1], rank == 2 ? sum_of(world, n - 1) / world : value(rank, n - 1), 1e-3);

      // reduce_scatter_tensor: output block = rank's slice of the sum.
      const int64_t block = n;
      Tensor in = input_of(rank, block * world);
      Tensor out = Tensor::empty({block}, DType::Float32);
      pg.reduce_scatter(out, in, ReduceOp::SUM)->wait();
      int64_t wrong = 0;
      for (int64_t i = 0; i < block; i++) wrong += out.data<float>()[i] != sum_of(world, rank * block + i);
      CHECK(wrong == 0);
      CHECK_NEAR(in.data<float>()[0], value(rank, 0), 0.0);  // the input is left as it was

      // The list form, with AVG.
      std::vector<Tensor> inputs;
      for (int r = 0; r < world; r++) inputs.push_back(filled(block, static_cast<float>((rank + 1) * (r + 1))));
      Tensor avg = Tensor::empty({block}, DType::Float32);
      pg.reduce_scatter(avg, inputs, ReduceOp::AVG)->wait();
      // mean over ranks q of (q + 1)(rank + 1) = 2 (rank + 1) for 3 ranks
      CHECK_NEAR(avg.data<float>()[block - 1], 2.0 * (rank + 1), 1e-5);
    }
  });
}

/** A ring of sends and recvs, crossing isends, tags matched independently of order, empty tensors. */
void test_send_recv(bool shm) {
  const int world = 3;
  run_ranks(world, options(shm), [&](int rank, ProcessGroup& pg) {
    const int next = (rank + 1) % world;
    const int prev = (rank + world - 1) % world;
    for (int64_t n : {int64_t{5}, int64_t{300000}}) {
      // Every rank sends first, then receives: the sends must not wait for the recvs.
      Tensor out = input_of(rank, n);
      Tensor in = Tensor::zeros({n}, DType::Float32);
      auto s = pg.send(out, next, 0);
      auto r = pg.recv(in, prev, 0);
      r->wait();
      s->wait();
      CHECK_NEAR(in.data<float>()[n - 1], value(prev, n - 1), 0.0);
    }
    // Two tags, received in the other order than sent; two sends with one tag arrive in order.
    if (rank == 0) {
      auto a = pg.send(filled(3, 1.0f), 1, 7);
      auto b = pg.send(filled(3, 2.0f), 1, 9);
      auto c = pg.send(filled(3, 3.0f), 1, 9);
      a->wait();
      b->wait();
      c->wait();
    } else if (rank == 1) {
      Tensor nine1 = Tensor::empty({3}, DType::Float32);
      Tensor nine2 = Tensor::empty({3}, DType::Float32);
      Tensor seven = Tensor::empty({3}, DType::Float32);
      pg.recv(nine1, 0, 9)->wait();
      pg.recv(nine2, 0, 9)->wait();
      pg.recv(seven, 0, 7)->wait();
      CHECK_NEAR(nine1.data<float>()[0], 2.0, 0.0);
      CHECK_NEAR(nine2.data<float>()[0], 3.0, 0.0);
      CHECK_NEAR(seven.data<float>()[2], 1.0, 0.0);
    }
    // An empty tensor still pairs the calls.
    if (rank == 2) pg.send(Tensor::empty({0}, DType::Float32), 0, 0)->wait();
    if (rank == 0) pg.recv(Tensor::empty({0}, DType::Float32), 2, 0)->wait();
    // Transfers do not disturb the group's collectives.
    Tensor t = filled(4, 1.0f);
    pg.allreduce(t, ReduceOp::SUM)->wait();
    CHECK_NEAR(t.data<float>()[3], 3.0, 0.0);
  });
}

/** A send and a recv that disagree fail on both ranks, naming both calls, at once; the group goes on. */
void test_send_recv_mismatch() {
  run_ranks(2, options(false, std::chrono::seconds(10)), [&](int rank, ProcessGroup& pg) {
    const auto t0 = std::chrono::steady_clock::now();
    std::string message;
    if (rank == 0) {
      message = error_of([&] { pg.send(filled(10, 1.0f), 1, 3)->wait(); });
      CHECK(message.rfind("send #1 to rank 1 with tag 3 of 10 float32 elements on rank 0: rank 1's matching call is"
                          " recv #1 from rank 0 with tag 3 of 12 float32 elements.",
                          0) == 0);
    } else {
      Tensor t = filled(12, 5.0f);
      message = error_of([&] { pg.recv(t, 0, 3)->wait(); });
      CHECK(message.rfind("recv #1 from rank 0 with tag 3 of 12 float32 elements on rank 1: rank 0's matching call is"
                          " send #1 to rank 1 with tag 3 of 10 float32 elements.",
                          0) == 0);
      CHECK_NEAR(t.data<float>()[11], 5.0, 0.0);  // nothing arrived
    }
    if (message.empty() || rank == 0) std::printf("send/recv mismatch, rank %d: %s\n", rank, message.c_str());
    CHECK(std::chrono::steady_clock::now() - t0 < std::chrono::seconds(5));
    // Nothing moved, so the group and the next transfer of the stream are fine.
    Tensor u = filled(2, static_cast<float>(rank));
    if (rank == 0) pg.send(u, 1, 3)->wait();
    if (rank == 1) {
      pg.recv(u, 0, 3)->wait();
      CHECK_NEAR(u.data<float>()[0], 0.0, 0.0);
    }
    Tensor s = filled(3, 1.0f);
    pg.allreduce(s, ReduceOp::SUM)->wait();
    CHECK_NEAR(s.data<float>()[0], 2.0, 0.0);
  });
}

/** A recv whose sender never comes times out, naming the peer and what it should have called. */
void test_recv_times_out() {
  run_ranks(2, options(false, std::chrono::milliseconds(1500)), [&](int rank, ProcessGroup& pg) {
    if (rank == 1) {
      std::string message = error_of([&] { pg.recv(filled(4, 0.0f), 0, 0)->wait(); });
      std::printf("recv without a send: %s\n", message.c_str());
      CHECK(message.find("recv #1 from rank 0 with tag 0 of 4 float32 elements timed out after") == 0);
      CHECK(message.find("rank 0 did not call the matching send (to rank 1 with tag 0)") != std::string::npos);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(2500));  // rank 0 stays until rank 1 gave up
  });
}

/** Ranks that disagree on reduce's root or kind fail naming both calls, on both data paths. */
void test_reduce_mismatch(bool shm) {
  run_ranks(2, options(shm, std::chrono::seconds(10)), [&](int rank, ProcessGroup& pg) {
    Tensor t = filled(6, 1.0f);
    std::string message = error_of([&] { pg.reduce(t, rank, ReduceOp::SUM)->wait(); });  // each says "me"
    // Shared memory names the peer's pid as well: "rank 1 (pid 42) called ...".
    const std::string mine = "reduce(SUM) to rank " + std::to_string(rank) + " of 6 float32 elements (#1) on rank " +
                             std::to_string(rank) + ": a peer called a different collective: rank " +
                             std::to_string(1 - rank);
    const std::string theirs = " called reduce(SUM) to rank " + std::to_string(1 - rank) + " of 6 float32 elements (#1).";
    if (message.rfind(mine, 0) != 0 || message.find(theirs) == std::string::npos) {
      std::fprintf(stderr, "rank %d (shm %d): got: %s\n", rank, shm, message.c_str());
    }
    CHECK(message.rfind(mine, 0) == 0);
    CHECK(message.find(theirs) != std::string::npos);
    if (shm) return;  // on shared memory a disagreement breaks the group, by design
    Tensor in = filled(4, 1.0f);
    Tensor out = filled(2, 0.0f);
    message = error_of([&] {
      if (rank == 0) pg.reduce_scatter(out, in, ReduceOp::SUM)->wait();
      if (rank == 1) pg.allreduce(in, ReduceOp::SUM)->wait();
    });
    CHECK(message.find(rank == 0 ? "reduceScatter(SUM) of 4 float32 elements (#2) on rank 0"
                                 : "allReduce(SUM) of 4 float32 elements (#2) on rank 1") == 0);
    CHECK(message.find(rank == 0 ? "rank 1 called allReduce(SUM)" : "rank 0 called reduceScatter(SUM)") !=
          std::string::npos);
  });
}

/**
 * A rank that closes its group with a recv pending: that recv fails at once saying so, and the
 * peer's pending recv fails promptly naming the rank that left, not at the timeout.
 */
void test_close_with_transfers_pending() {
  gloo::rendezvous::HashStore store;
  std::shared_ptr<Work> pending[2];
  std::string messages[2];
  std::vector<std::thread> threads;
  std::mutex m;
  std::condition_variable cv;
  int posted = 0;
  for (int r = 0; r < 2; r++) {
    threads.emplace_back([&, r] {
      try {
        auto group = std::make_unique<ProcessGroupGloo>(store, r, 2, options(false, std::chrono::seconds(30)));
        pending[r] = group->recv(filled(3, 0.0f), 1 - r, 0);  // nobody sends
        {
          std::unique_lock<std::mutex> lock(m);
          posted++;
          cv.notify_all();
          cv.wait(lock, [&] { return posted == 2; });
        }
        const auto t0 = std::chrono::steady_clock::now();
        if (r == 1) group.reset();  // leaves with its recv pending
        messages[r] = error_of([&] { pending[r]->wait(); });
        CHECK(std::chrono::steady_clock::now() - t0 < std::chrono::seconds(10));
      } catch (const std::exception& e) {
        std::fprintf(stderr, "rank %d: unexpected exception: %s\n", r, e.what());
        ++ddp4j::test::failure_count();
      }
    });
  }
  for (auto& t : threads) t.join();
  std::printf("closed with a recv pending: rank 1: %s\nrank 0: %s\n", messages[1].c_str(), messages[0].c_str());
  CHECK(messages[1] == "recv #1 from rank 0 with tag 0 of 3 float32 elements did not finish: rank 1 closed its process group first");
  CHECK(messages[0].find("recv #1 from rank 1 with tag 0 of 3 float32 elements failed on rank 0") == 0);
}

void test_bad_arguments() {
  run_ranks(2, options(false, std::chrono::seconds(10)), [&](int rank, ProcessGroup& pg) {
    Tensor t = filled(4, 1.0f);
    CHECK(error_of([&] { pg.reduce(t, 2, ReduceOp::SUM); }) ==
          "reduce: destination rank 2 is not in [0, 2) (ranks of this group, which has 2 ranks)");
    CHECK(error_of([&] { pg.send(t, rank, 0); }).find("send: destination rank " + std::to_string(rank) +
                                                       " is this rank itself") == 0);
    CHECK(error_of([&] { pg.recv(t, -1, 0); }).find("recv: source rank -1 is not in [0, 2)") == 0);
    CHECK(error_of([&] { pg.send(t, 1 - rank, -1); }).find("send: tag -1 is not in [0, 65536)") == 0);
    Tensor out = filled(3, 0.0f);
    CHECK(error_of([&] { pg.reduce_scatter(out, t, ReduceOp::SUM); }) ==
          "reduceScatter: input " + t.describe() + " must have 2 x 3 = 6 elements (world size x output)");
    CHECK(error_of([&] { pg.reduce_scatter(out, std::vector<Tensor>{t}, ReduceOp::SUM); }) ==
          "reduceScatter: got 1 input tensors for a world of 2; pass one per rank");
    Tensor ints = Tensor::zeros({4}, DType::Int64);
    CHECK(error_of([&] { pg.reduce(ints, 0, ReduceOp::AVG); }).find("reduce: ReduceOp.AVG needs a floating tensor") ==
          0);
    pg.barrier()->wait();
  });
}

}  // namespace

int main() {
  for (bool shm : {true, false}) {
    test_reduce_and_reduce_scatter(shm);
    test_send_recv(shm);
    test_reduce_mismatch(shm);
  }
  test_send_recv_mismatch();
  test_recv_times_out();
  test_close_with_transfers_pending();
  test_bad_arguments();
  if (test_failures() == 0) std::printf("gloo_reduce_p2p_test: ok\n");
  return test_failures();
}

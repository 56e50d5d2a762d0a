// SyncBatchNorm's CPU passes: rows of two "ranks" (unequal batches, one empty) combined give the
// statistics of the whole batch, with a mean of 10000 over a spread of 0.01 (where E[x²] - E[x]²
// in float32 would be all rounding); counts above 2^24 survive the row's two-float encoding; the
// group's count must exceed 1, and the failure names every rank's count and updates nothing.
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "ddp4j/errors.h"
#include "ddp4j/ops.h"
#include "tensor_util.h"
#include "test_util.h"

using namespace ddp4j;
using ddp4j::test::make;

namespace {

/** The ranks' rows one after the other, as the all-gather leaves them. */
Tensor gathered(const std::vector<Tensor>& rows) {
  Tensor out = Tensor::empty({static_cast<int64_t>(rows.size()), rows[0].numel()}, DType::Float32);
  for (size_t r = 0; r < rows.size(); ++r) {
    std::memcpy(out.data<float>() + r * rows[0].numel(), rows[r].data<float>(), rows[r].nbytes());
  }
  return out;
}
}  // namespace

int main() {
  // Channel 0: 10000 + 0.01 * k over k = 0..5 (rank 0 holds k = 0, 1; rank 1 holds 2..5); channel 1: 1..6.
  std::vector<float> v0, v1;
  for (int k = 0; k < 6; ++k) {
    v0.push_back(10000.0f + 0.01f * static_cast<float>(k));
    v1.push_back(static_cast<float>(k + 1));
  }
  Tensor a = make({2, 2}, {v0[0], v1[0], v0[1], v1[1]});
  Tensor b = make({4, 2}, {v0[2], v1[2], v0[3], v1[3], v0[4], v1[4], v0[5], v1[5]});
  Tensor empty = Tensor::empty({0, 2}, DType::Float32);
  Tensor rm = make({2}, {0, 0}), rv = make({2}, {1, 1});
  int64_t count = 0;
  auto s = ops::sync_batch_norm_gather_stats(
      gathered({ops::sync_batch_norm_stats(a), ops::sync_batch_norm_stats(empty), ops::sync_batch_norm_stats(b)}), 2,
      rm, rv, 0.1, 1e-5, &count);
  CHECK(count == 6);
  // The exact statistics of the float32 values (double arithmetic over the same inputs).
  for (int c = 0; c < 2; ++c) {
    const std::vector<float>& v = c == 0 ? v0 : v1;
    double mean = 0, m2 = 0;
    for (float x : v) mean += x;
    mean /= 6;
    for (float x : v) m2 += (x - mean) * (x - mean);
    CHECK_NEAR(s[0].data<float>()[c] + static_cast<double>(s[2].data<float>()[c]), mean, 1e-9 * std::fabs(mean));
    CHECK_NEAR(s[1].data<float>()[c], 1 / std::sqrt(m2 / 6 + 1e-5), 1e-5 / std::sqrt(m2 / 6 + 1e-5));
    CHECK_NEAR(rv.data<float>()[c], 0.9 + 0.1 * m2 / 5, 1e-6 * (0.9 + 0.1 * m2 / 5));
    CHECK_NEAR(rm.data<float>()[c], 0.1 * mean, 1e-6 * std::fabs(mean));
  }
  // y of rank 1's last value of channel 0: (x - mean) * invstd, near 1.46 (not rounding noise).
  Tensor ones = make({2}, {1, 1}), zeros = make({2}, {0, 0});
  Tensor y = ops::sync_batch_norm_elemt(b, s[0], s[2], s[1], ones, zeros);
  {
    double mean = 0, m2 = 0;
    for (float x : v0) mean += x;
    mean /= 6;
    for (float x : v0) m2 += (x - mean) * (x - mean);
    CHECK_NEAR(y.data<float>()[6], (v0[5] - mean) / std::sqrt(m2 / 6 + 1e-5), 1e-4);
  }

  // A row claiming 2^24 + 5 values: the count's two halves decode exactly.
  Tensor big = make({8}, {1.0f, 5.0f, 2.0f, 3.0f, 0.0f, 0.0f, 1.0f, 1.0f});
  Tensor none_mean, none_var;
  ops::sync_batch_norm_gather_stats(big, 2, none_mean, none_var, 0.1, 1e-5, &count);
  CHECK(count == (int64_t{1} << 24) + 5);

  // One value in the whole group: every rank fails, naming the counts; nothing is updated.
  Tensor one = make({1, 2}, {3, 4});
  const float before = rv.data<float>()[0];
  bool threw = false;
  try {
    ops::sync_batch_norm_gather_stats(gathered({ops::sync_batch_norm_stats(one), ops::sync_batch_norm_stats(empty)}),
                                      2, rm, rv, 0.1, 1e-5, &count);
  } catch (const Error& e) {
    threw = std::string(e.what()).find("expected more than 1 value per channel when training") != std::string::npos &&
            std::string(e.what()).find("[1, 0]") != std::string::npos;
  }
  CHECK(threw);
  CHECK(rv.data<float>()[0] == before);
  return test_failures();
}

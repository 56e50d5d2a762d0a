// nccl_backoff.h: the polling back-off of the NCCL backend's waits (end events, NCCL's
// non-blocking calls).
#pragma once
#include <chrono>
#include <thread>

namespace ddp4j {
namespace nccl_detail {

/** Sleeps a little longer each time, from a yield up to 1 ms: short collectives are seen at once, long ones cost no CPU. */
class Backoff {
 public:
  void pause() {
    if (round_ < 64) {
      std::this_thread::yield();
    } else {
      std::this_thread::sleep_for(std::chrono::microseconds(round_ < 256 ? 20 : 1000));
    }
    round_++;
  }

 private:
  int round_ = 0;
};

}  // namespace nccl_detail
}  // namespace ddp4j

#pragma once
// Internal: how long the daemon waits before trying again after a database failure (a lost connection, a
// server that is not up yet, a failover under way). Bounded by design (docs/operations.md, "High
// availability"): the first try again comes at once, since the likeliest cause of a single failure is a
// session that died with its server while a new one would work (a failover leaves every pooled session
// stale); then 250 ms, doubling to a cap of 1 s, so the daemon's first try after a new leader is elected
// comes within 1 s of it, whatever the election took, and the slot's 2 s margin is left for that try's own
// work (a cap of 2 s left too little on a loaded machine: a daemon settled 3.4 s after the first commit). A success starts the series again.
#include <algorithm>
#include <chrono>

#include "prescient/time.hpp"

namespace prescient::runner {

class ReconnectBackoff {
 public:
  static constexpr Micros kSecondWait{std::chrono::milliseconds{250}};
  static constexpr Micros kCap{std::chrono::seconds{1}};

  // The wait before the next try, this failure counted.
  Micros after_failure() {
    const Micros wait =
        failures_ == 0 ? Micros{0} : std::min<Micros>(kSecondWait * (1 << std::min(failures_ - 1, 8)), kCap);
    ++failures_;
    return wait;
  }
  void succeeded() { failures_ = 0; }

 private:
  int failures_ = 0;  // since the last success
};

}  // namespace prescient::runner

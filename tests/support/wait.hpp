#pragma once
// Waiting for a condition instead of sleeping for a time that stands for it: the wait ends as soon as
// the condition holds (a fast machine does not pay a slow one's margin) and fails the test, naming what
// it waited for, when the deadline passes first (a slow machine fails loudly instead of racing on).
#include <catch2/catch.hpp>

#include <chrono>
#include <string>
#include <thread>

namespace prescient::testing {

// Polls `holds` until it answers true; fails the test after `limit`.
template <class Condition>
void wait_until(const std::string& what, std::chrono::milliseconds limit, Condition holds,
                std::chrono::milliseconds every = std::chrono::milliseconds(20)) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  while (!holds()) {
    if (std::chrono::steady_clock::now() >= deadline) FAIL("waited " << limit.count() << " ms for " << what);
    std::this_thread::sleep_for(every);
  }
}

}  // namespace prescient::testing

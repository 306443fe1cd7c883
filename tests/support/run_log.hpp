#pragma once
// How many times each check ran, recorded by test job classes (from several threads).
#include <cstdint>
#include <map>
#include <mutex>

namespace prescient::testing {

struct RunLog {
  std::mutex mutex;
  std::map<std::int64_t, int> runs;
  void record(std::int64_t id) {
    const std::lock_guard lock(mutex);
    ++runs[id];
  }
  int of(std::int64_t id) {
    const std::lock_guard lock(mutex);
    const auto it = runs.find(id);
    return it == runs.end() ? 0 : it->second;
  }
};

}  // namespace prescient::testing

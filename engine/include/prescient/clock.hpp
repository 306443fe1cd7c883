#pragma once
// The one source of "now". Runners and enqueuers take a Clock so tests can pin time
// and walk hours of schedule in milliseconds.
#include <atomic>

#include "prescient/time.hpp"

namespace prescient {

class Clock {
 public:
  virtual ~Clock() = default;
  virtual TimePoint now() const = 0;
};

class SystemClock final : public Clock {
 public:
  TimePoint now() const override;
};

// A clock that moves only when told to. Safe to read and move from several threads.
class ManualClock final : public Clock {
 public:
  explicit ManualClock(TimePoint start) : micros_(to_unix_micros(start)) {}
  TimePoint now() const override { return from_unix_micros(micros_.load()); }
  void set(TimePoint t) { micros_.store(to_unix_micros(t)); }
  void advance(Micros by) { micros_.fetch_add(by.count()); }

 private:
  std::atomic<std::int64_t> micros_;
};

}  // namespace prescient

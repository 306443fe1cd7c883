#pragma once
// "Never before its slot" on the database server's clock, whatever the runner host's clock says
// (docs/guarantees.md, "Clocks"): a runner measures how far its clock is from the server's and fires on
// the server's.
#include <atomic>
#include <chrono>
#include <cstdint>
#include <optional>

#include "prescient/clock.hpp"

namespace soci {
class session;
}

namespace prescient {

// What a runner does about its clock's distance from the server's.
struct ClockCheck {
  // Measure and correct. The CLI's runners do; a test that drives a ManualClock through hours of
  // schedule in milliseconds does not (the server's clock would undo it).
  bool enabled = false;
  std::chrono::milliseconds warn_over{1000};  // beyond this: a warning (and the metric shows it)
  std::chrono::seconds refuse_over{300};      // beyond this at start: the runner refuses to start
};

// The local clock put on the server's: the local time plus the offset last measured. Safe to read from
// several threads while the offset is measured again.
class ServerClock final : public Clock {
 public:
  explicit ServerClock(const Clock& local) : local_(local) {}
  TimePoint now() const override { return local_.now() + offset(); }
  Micros offset() const { return Micros{offset_us_.load()}; }
  const Clock& local() const { return local_; }
  // The local clock's reading when this clock reads t.
  TimePoint local_time_of(TimePoint t) const { return t - offset(); }

  // Takes a new measurement (server_clock_offset). Beyond check.warn_over it warns, at the first
  // measurement past the bound and then at most every 10 minutes while it stays past; when `starting`
  // and beyond check.refuse_over it throws InvalidInput naming the offset.
  void adopt(Micros measured, const ClockCheck& check, bool starting);

 private:
  const Clock& local_;
  std::atomic<std::int64_t> offset_us_{0};
  std::optional<TimePoint> warned_at_;  // on the local clock; touched by the measuring thread only
};

// How far the server's clock is ahead of `local` (negative: behind), in one round trip. The server's
// reading is taken somewhere within the round trip, so it is set against the local time at its end:
// the result errs low by at most the round trip, and local + result never runs ahead of the server's
// clock. So a slot fired at local + result is never early on the server's clock, and late by at most
// the round trip.
Micros server_clock_offset(soci::session& db, const Clock& local);

}  // namespace prescient

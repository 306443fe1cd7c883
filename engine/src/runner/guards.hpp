#pragma once
// Guards: what becomes of a check after a run at slot S, judged from what the job answered.
// Pure: no clock, no database; the runner passes everything in.
#include <chrono>
#include <optional>
#include <string>

#include "prescient/outcome.hpp"
#include "prescient/slot_grid.hpp"
#include "prescient/time.hpp"

namespace prescient {

// The limits in force for one check: its class's policy over the database's settings.
struct GuardLimits {
  int max_checks = 5;
  int max_attempts = 5;
  std::chrono::seconds max_horizon{365 * 86400};
};

// What a run produced: a next time (or nothing = done), or a failure with its reason.
struct RunOutcome {
  bool failed = false;
  std::optional<TimePoint> next;  // when !failed
  std::string error;              // when failed
};

struct Settlement {
  enum class Kind { reschedule, retry, finish };
  Kind kind = Kind::finish;
  Outcome outcome = Outcome::done;  // finish: done, failed, guard_max_checks, guard_past, guard_horizon
  TimePoint next_check_at;  // reschedule and retry: on the grid, after S
  int check_count = 0;      // after this run
  int attempts = 0;         // after this run
  std::optional<std::string> last_error;
};

// The longest wait between two attempts of a failing check (before rounding up to the grid).
inline constexpr std::chrono::seconds kMaxRetryBackoff{86400};

// check_count and attempts are the check's values before this run.
//  - nothing -> finish `done`;
//  - a next time when the check has now run max_checks times -> finish `guard_max_checks`;
//  - a next time <= S -> finish `guard_past`; beyond S + max_horizon -> finish `guard_horizon`;
//  - otherwise reschedule at round_up(next), check_count + 1, attempts reset;
//  - a failure -> attempts + 1 and last_error kept (made storable: valid UTF-8, at most kMaxErrorBytes);
//    at max_attempts finish `failed`, else retry at
//    S + R * 2^attempts (at most kMaxRetryBackoff), rounded up to the grid.
Settlement judge(const RunOutcome& run, TimePoint slot, int check_count, int attempts, const GuardLimits& limits,
                 const SlotGrid& grid);

}  // namespace prescient

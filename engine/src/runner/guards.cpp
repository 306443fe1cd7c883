#include "runner/guards.hpp"

#include <algorithm>

#include "core/text_rules.hpp"

namespace prescient {

Settlement judge(const RunOutcome& run, TimePoint slot, int check_count, int attempts, const GuardLimits& limits,
                 const SlotGrid& grid) {
  Settlement s;
  if (run.failed) {
    s.check_count = check_count;
    s.attempts = attempts + 1;
    s.last_error = storable_text(run.error, kMaxErrorBytes);  // whatever the job said, it can be stored
    if (s.attempts >= limits.max_attempts) {
      s.kind = Settlement::Kind::finish;
      s.outcome = Outcome::failed;
      return s;
    }
    // R * 2^attempts without overflow: the shift is bounded well before the cap is passed.
    std::chrono::seconds backoff = grid.resolution();
    for (int i = 0; i < attempts && backoff < kMaxRetryBackoff; ++i) backoff *= 2;
    s.kind = Settlement::Kind::retry;
    s.next_check_at = grid.round_up(slot + std::min(backoff, kMaxRetryBackoff));
    return s;
  }
  s.check_count = check_count + 1;
  s.attempts = 0;
  s.kind = Settlement::Kind::finish;
  if (!run.next) {
    s.outcome = Outcome::done;
  } else if (s.check_count >= limits.max_checks) {
    s.outcome = Outcome::guard_max_checks;
  } else if (*run.next <= slot) {
    s.outcome = Outcome::guard_past;
  } else if (*run.next > slot + limits.max_horizon) {
    s.outcome = Outcome::guard_horizon;
  } else {
    s.kind = Settlement::Kind::reschedule;
    s.next_check_at = grid.round_up(*run.next);
  }
  return s;
}

}  // namespace prescient

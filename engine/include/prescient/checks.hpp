#pragma once
// Reading checks back, pending and finished, and putting a failed one back: what `prescient list`,
// `history`, `show` and `retry` use, and applications that look at their checks.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "prescient/check_records.hpp"
#include "prescient/time.hpp"

namespace soci {
class session;
}

namespace prescient {

class Checks {
 public:
  // REQUIRES: db stays open for the object's lifetime.
  explicit Checks(soci::session& db) : db_(db) {}

  // Pending checks matching the filter, soonest first. Throws InvalidInput for a limit below 1.
  std::vector<PendingCheck> pending(const PendingFilter& filter);
  // History rows matching the filter: newest first, or oldest first for a trace.
  std::vector<HistoryEntry> history(const HistoryFilter& filter, bool oldest_first = false);
  // The check with this id, or every check this job key named over time (one of the two is given). Throws
  // NotFound when there is none.
  CheckTrace trace(std::optional<std::int64_t> id, std::optional<std::string> job_key);

  // Puts the check `id`, finished as `failed`, back as pending at `at` with its attempts reset, and marks its
  // last failure as retried (no longer a dead letter). Throws
  // NotFound when it is not a failed check, InvalidInput when it is pending again already (a concurrent
  // retry included) or its job key is taken by another pending check.
  PendingCheck revive_failed(std::int64_t id, TimePoint at);

  // Dead letters: failures settled at or after `since` and not put back since (by revive_failed or
  // revive_dead_letters); of one class when `job` is given. Counts at most `at_most` (>= 1) of them (the work of
  // a count is bounded; a result equal to it means "at least"); InvalidInput for a bound below 1.
  std::int64_t count_dead_letters(const std::optional<std::string>& job, TimePoint since, int at_most);
  // Puts back, as revive_failed does, the matching dead letters with ids after `after_id`, up to `limit`
  // of them in id order, in one statement. One whose job key another pending check holds is skipped and
  // stays a dead letter. `last_id`: the last id looked at, to pass as the next call's after_id; none
  // when there were no more.
  struct RevivedDeadLetters {
    std::int64_t revived = 0, skipped = 0;
    std::optional<std::int64_t> last_id;
  };
  RevivedDeadLetters revive_dead_letters(const std::optional<std::string>& job, TimePoint since,
                                         std::int64_t after_id, int limit, TimePoint at);

  // Runners claim no check of a paused class: its checks stay pending, and are due again (at their slots,
  // or at once when overdue) once it is resumed. Takes effect at the runners' next claim. False when it
  // was paused (resumed) already. The schema owner's action: the roles may not.
  bool pause_job(const std::string& job, const std::string& by, TimePoint now);
  bool resume_job(const std::string& job);

 private:
  soci::session& db_;
};

}  // namespace prescient

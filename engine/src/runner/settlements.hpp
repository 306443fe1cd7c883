#pragma once
// Internal, pure: judging and settling. From what a batch's jobs answered to what the settlement
// writes: the guards (judge), the job boundary (everything a job hands back, its next time, its error
// text, its events, its buffered writes, is judged, made storable or refused here, so what reaches SQL
// is storable and a bad answer fails its own check, never the batch) and the tally of outcomes. No
// clock, no database: the runner passes everything in.
#include <chrono>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "prescient/job.hpp"
#include "prescient/outcome.hpp"
#include "prescient/slot_grid.hpp"
#include "prescient/slot_runner.hpp"
#include "prescient/time.hpp"
#include "runner/work_unit.hpp"

namespace prescient::runner {


// The longest wait between two attempts of a failing check (before rounding up to the grid), unless a
// policy sets another.
inline constexpr std::chrono::seconds kMaxRetryBackoff{86400};

// The limits in force for one check: its class's policy over the database's settings (runner/class_limits.hpp).
struct GuardLimits {
  int max_checks = 5;  // 0: no limit (the horizon guards)
  int max_attempts = 5;
  std::chrono::seconds max_horizon{365 * 86400};
  std::optional<std::chrono::seconds> backoff;  // the first retry's wait; none: one slot of the grid
  std::chrono::seconds backoff_max = kMaxRetryBackoff;
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
  std::optional<TimePoint> asked_for;  // reschedule: the answer as given, the check's new asked-for time
  int check_count = 0;      // after this run
  int attempts = 0;         // after this run
  std::optional<std::string> last_error;  // a failure's, or why a guard ended the check
};

// The limits for one check: its class's, with what the check's own policy (set at enqueue) overrides.
GuardLimits own_limits(GuardLimits class_limits, const Check& check);

// Judges a run of `check` (at its slot S, asked for at A, with the counts before this run) by its own limits
// over its class's (own_limits):
//  - nothing -> finish `done`;
//  - a next time when the check has now run max_checks times (0: never) -> finish `guard_max_checks`;
//  - a next time <= A (a loop that does not advance) -> finish `guard_past`; beyond S + max_horizon ->
//    finish `guard_horizon`; each guard says why in last_error (the answer, the bound, the rule);
//  - otherwise reschedule at round_up(next), asked for at next, check_count + 1, attempts reset: a next
//    time after A but already past is late, not dead (the caller clamps it to the next boundary);
//  - a failure -> attempts + 1 and last_error kept (made storable: valid UTF-8, at most kMaxErrorBytes);
//    at max_attempts finish `failed`, else retry at S + B * 2^attempts (B: the policy's backoff, else one
//    slot; at most its backoff_max), rounded up to the grid.
Settlement judge(const RunOutcome& run, const Check& check, const GuardLimits& limits, const SlotGrid& grid);


// An event to write into the outbox with a check's settlement.
struct EventRecord {
  std::string id;  // deterministic: a re-run of the same check run yields the same id
  std::string type;
  std::string source;
  TimePoint occurred_at;
  std::string payload;  // JSON text
};

// What to write for one check at the end of a run.
struct SettleItem {
  std::int64_t id = 0;
  TimePoint due;  // the time it ran for (its slot, or a time within it that flow control gave)
  Settlement settlement;
  std::optional<std::int64_t> run_micros;
  std::vector<EventRecord> events;
  std::vector<BufferedWrite> writes;  // run before the settlement, in its transaction
  std::optional<std::string> payload_update;  // keys to set in the check's payload (JSON object text)
};

// Counts settled items into the report by what became of them (done, rescheduled, retried, failed,
// guarded), and the events the outbox took.
void tally(std::span<const SettleItem> settled, std::int64_t events, SlotReport& report);

}  // namespace prescient::runner

namespace prescient::runner {

// What one job run may hand back: more events than this, or an event payload bigger than this, fails
// its check. (cron's catch-up `all` emits at most 10 000 occurrences in one run.)
inline constexpr std::size_t kMaxEventsPerRun = 10000;
inline constexpr std::size_t kMaxEventPayloadBytes = 16 * 1024 * 1024;  // and a payload update

// How a batch's checks are judged: their class's limits, the grid, and the earliest time a check may be
// put back to (the next boundary from now: a late run never reschedules into the past).
struct Judging {
  const SlotGrid& grid;
  TimePoint earliest;
};

// The settlement of each check the units reached, in check order: judged by its class's limits
// (`limits[u]` for unit u), events given their deterministic ids and made storable, or the check failed
// with the reason when its answer cannot be stored.
std::vector<SettleItem> settlements_of(std::span<const Check> checks, std::span<const WorkUnit> units,
                                       std::span<const UnitResult> results, std::span<const GuardLimits> limits,
                                       const Judging& judging);

// A check that failed without its job's answer being used (its writes failed, the database refused its
// settlement, its row could not be read): a failed attempt with `reason`, no events, no writes.
SettleItem failed_attempt(const Check& check, const GuardLimits& limits, const Judging& judging, std::string reason,
                          std::optional<std::int64_t> run_micros = std::nullopt);

// The event as the outbox stores it, or why it cannot be stored: the id (given, or "<check id>-<check
// count>[-n]" for the n-th event of the run) must be a valid name; type and source are made storable
// (an empty type is refused); occurred_at must lie within years 1 to 9999; the payload must hold valid
// UTF-8 without NUL and serialize to at most kMaxEventPayloadBytes (stored_payload).
// A payload a job hands back to be stored (an event's, an update of its check's) as text, or why it cannot be
// ("<owner>: ..."): it must hold valid UTF-8 without NUL and serialize to at most max_bytes.
struct StoredJson {
  std::optional<std::string> text;
  std::string problem;  // when !text
};
StoredJson stored_payload(const nlohmann::json& payload, const std::string& owner, std::size_t max_bytes);

struct OutboxEvent {
  std::optional<EventRecord> record;
  std::string problem;  // when !record
};
OutboxEvent outbox_event(const Event& event, std::size_t index, const Check& check, int check_count_after);

// Why a buffered write cannot be sent (libpq cuts text at a NUL; the server refuses invalid UTF-8), or
// nothing.
std::optional<std::string> write_problem(const BufferedWrite& write, std::size_t index);

}  // namespace prescient::runner

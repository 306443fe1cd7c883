#pragma once
// Internal, pure: from what a batch's jobs answered to what the settle statement is given. This is the job
// boundary: everything a job hands back (its error text, its events, its buffered writes) is made storable
// or refused here, so what reaches SQL is storable and a bad answer fails its own check, never the batch.
// What becomes of a check (the guards, backoff, dead letters) is not decided here but by prescient.judge
// (sql/functions/069_judge.sql), which the settle statement calls, as the worker protocol does. Also the
// tally of outcomes. No clock, no database: the runner passes everything in.
#include <chrono>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "prescient/job.hpp"
#include "prescient/slot_runner.hpp"
#include "prescient/time.hpp"
#include "runner/work_unit.hpp"

namespace prescient::runner {


// The limits of a check's class in force (docs/guarantees.md, "Policies"), as prescient.class_limits resolves
// them (sql/functions/071_class_limits.sql): the class's row in the registry over its coded policy and the
// config file's defaults, over the database's settings.
// The check's own policy overrides them field by field; that and everything else a settlement decides is
// prescient.judge's (sql/functions/069_judge.sql), which the settle statement calls.
struct GuardLimits {
  int max_checks = 5;  // 0: no limit (the horizon guards)
  int max_attempts = 5;
  std::optional<std::chrono::seconds> backoff;      // the first retry's wait; none: one slot of the grid
  std::optional<std::chrono::seconds> backoff_max;  // none: a day
  bool operator==(const GuardLimits&) const = default;
};

// What a run produced: a next time (or nothing = done), or a failure with its reason.
struct RunOutcome {
  bool failed = false;
  std::optional<TimePoint> next;  // when !failed
  std::string error;              // when failed
  // An answer in business time, which resolve_business_answers (runner/business_answers.hpp) turns into `next`
  // before the settlement: the settle statement never looks a calendar up.
  std::optional<BusinessDelay> in_business_time;
};

// The check as it ran, as the settlement's judge needs it.
struct RanCheck {
  std::string job;
  TimePoint slot;       // the slot it ran in
  TimePoint asked_for;  // the time it was asked for
  int check_count = 0;  // before this run
  int attempts = 0;     // before this run
  JobPolicy own;        // its own policy (set at enqueue)
  GuardLimits limits;   // its class's
};

// An event to write into the outbox with a check's settlement.
struct EventRecord {
  std::string id;  // deterministic: a re-run of the same check run yields the same id
  std::string type;
  std::string source;
  TimePoint occurred_at;
  std::string payload;  // JSON text
  std::optional<std::string> traceparent;  // the run's (Check::traceparent): a consumer continues its trace
};

// What to write for one check at the end of a run: what it answered, judged by the settle statement.
struct SettleItem {
  std::int64_t id = 0;
  TimePoint due;  // the time it ran for (its slot, or a time within it that flow control gave)
  RanCheck check;
  RunOutcome answer;  // a failure's error is storable text (valid UTF-8, no NUL); the judge cuts it
  std::optional<std::int64_t> run_micros;
  std::vector<EventRecord> events;
  std::vector<BufferedWrite> writes;  // run before the settlement, in its transaction
  std::optional<std::string> payload_update;  // keys to set in the check's payload (JSON object text)
  std::optional<std::string> result;          // what the run returned (JSON text), kept with it
  // An answer in business time, once resolved to `answer.next`: what its timeline row names after the
  // settlement (RunnerStore::name_business_runs).
  struct BusinessTimed {
    std::string calendar, delay;
    int version = 0;
  };
  std::optional<BusinessTimed> timed_by;
};

// What a settlement made of its checks, as the settle statement counts them.
struct SettledCounts {
  std::int64_t checks = 0;
  std::int64_t events = 0;  // new ones
  std::int64_t done = 0, rescheduled = 0, retried = 0, failed = 0, guarded = 0;
  SettledCounts& operator+=(const SettledCounts& other);
};

// Counts settled checks into the report by what became of them, and the events the outbox took.
void tally(const SettledCounts& settled, SlotReport& report);

}  // namespace prescient::runner

namespace prescient::runner {

// What one job run may hand back: more events than this, or an event payload bigger than this, fails
// its check. (cron's catch-up `all` emits at most 10 000 occurrences in one run.)
inline constexpr std::size_t kMaxEventsPerRun = 10000;
inline constexpr std::size_t kMaxEventPayloadBytes = 16 * 1024 * 1024;  // and a payload update
// A run's result, as PostgreSQL prints it (jsonb as text): the bound workers are held to too
// (prescient.worker_settle_together, sql/functions/072_worker_protocol.sql).
inline constexpr std::size_t kMaxResultBytes = 64 * 1024;

// What the settle statement needs besides the items to judge them: the grid's slot and the horizon.
struct Judging {
  std::chrono::seconds slot;
  std::chrono::seconds max_horizon;
};

// The settlement of each check the units reached, in check order: its answer with its class's limits
// (`limits[u]` for unit u), events given their deterministic ids and made storable, or the check failed
// with the reason when its answer cannot be stored.
std::vector<SettleItem> settlements_of(std::span<const Check> checks, std::span<const WorkUnit> units,
                                       std::span<const UnitResult> results, std::span<const GuardLimits> limits);

// A check that failed without its job's answer being used (its writes failed, the database refused its
// settlement, its row could not be read): a failed attempt with `reason`, no events, no writes.
SettleItem failed_attempt(const Check& check, const GuardLimits& limits, std::string reason,
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

// The bytes of a JSON value as PostgreSQL prints it as jsonb (`value::jsonb::text`, which SQL's bound on a
// worker's result measures): the compact text with a space after each ':' and ','. Numbers count as
// written here (jsonb prints one in exponent form in full).
std::size_t jsonb_text_bytes(const nlohmann::json& value);
// A run's result as text, or why it cannot be stored: valid UTF-8 without NUL, at most kMaxResultBytes by
// jsonb_text_bytes ("its result is N bytes of JSON (at most 65536)", a worker's words).
StoredJson stored_result(const nlohmann::json& result);

struct OutboxEvent {
  std::optional<EventRecord> record;
  std::string problem;  // when !record
};
OutboxEvent outbox_event(const Event& event, std::size_t index, const Check& check, int check_count_after);

// Why a buffered write cannot be sent (libpq cuts text at a NUL; the server refuses invalid UTF-8), or
// nothing.
std::optional<std::string> write_problem(const BufferedWrite& write, std::size_t index);

}  // namespace prescient::runner

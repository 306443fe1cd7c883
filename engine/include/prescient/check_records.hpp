#pragma once
// Checks as they are read back: a pending row of future_job, or a row of job_history.
#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "prescient/outcome.hpp"
#include "prescient/time.hpp"

namespace prescient {

// What a check carries from enqueue to history. Fields are named as the columns are, everywhere: in
// SQL, in JSON and in CLI flags (entity_name is --entity-name, job_key is --job-key).
struct CheckFields {
  std::int64_t id = 0;
  std::string job;
  std::string entity_name;
  std::string entity_key;
  std::optional<std::string> job_key;
  std::optional<std::string> group_key;
  nlohmann::json payload;
  TimePoint first_check_at;
  int check_count = 0;
  int attempts = 0;
  std::optional<std::string> last_error;
  TimePoint enqueued_on;
  std::string enqueued_by;
  int priority = 5;  // 0 (first) to 9 (last): docs/design.md, "Priorities"
  // The W3C trace context it was created in (docs/design.md, "Trace context"); none: not traced.
  std::optional<std::string> traceparent;
  std::optional<std::string> tracestate;
  // The calendar whose open time computed its time, that calendar's version then, and the business delay asked
  // for (docs/business-time.md); none: timed in elapsed time.
  std::optional<std::string> calendar;
  std::optional<int> calendar_version;
  std::optional<std::string> business_delay;
};

struct PendingCheck : CheckFields {
  TimePoint next_check_at;
};

struct HistoryEntry : CheckFields {
  TimePoint last_check_at;  // the slot it last ran at (or was due at, when cancelled)
  std::int64_t history_id = 0;
  TimePoint finished_at;
  std::string finished_by;
  Outcome outcome = Outcome::done;
  std::optional<std::int64_t> run_micros;
  std::optional<nlohmann::json> result;  // what its last run returned (docs/design.md, "Results")
};

// Where a page of a listing ends: the next page starts after (or, newest first, before) this row.
struct PageCursor {
  TimePoint at;        // next_check_at of a pending check, finished_at of a history row
  std::int64_t id = 0;  // the check's id; a history row's history_id
};

// Filters; an empty field does not filter.
struct PendingFilter {
  std::optional<std::string> job, entity_name, entity_key, group_key, job_key;
  std::optional<std::int64_t> id;
  std::optional<TimePoint> due_before;
  std::optional<PageCursor> after;  // soonest first: the checks after this one
  int limit = 100;
};

struct HistoryFilter {
  std::optional<std::string> job_key, entity_name, entity_key, job;
  std::optional<Outcome> outcome;
  std::optional<std::int64_t> id;
  std::optional<TimePoint> since;
  // Only dead letters: failed rows not put back since (a retry marks the failure it puts back).
  bool dead_letters_only = false;
  std::optional<PageCursor> before;  // newest first: the rows before this one
  int limit = 100;
};

// One run of a check that left it pending (a row of prescient.check_run): the timeline between its enqueue
// and its history row.
struct CheckRun {
  std::int64_t id = 0;
  TimePoint due_at;       // the time it ran for
  TimePoint finished_at;  // when its settlement was written
  std::optional<std::int64_t> run_micros;
  std::string runner;
  std::string result;  // rescheduled | retried
  TimePoint next_check_at;
  std::optional<TimePoint> answered_at;  // rescheduled: the next time as the job answered it
  int check_count = 0;                   // after the run
  int attempts = 0;                      // after the run
  std::optional<std::string> error;      // retried: why the run failed
  std::optional<nlohmann::json> run_result;  // rescheduled: what the run returned besides its answer
  // rescheduled by an answer in business time: the calendar, the version that computed its next time, the delay
  std::optional<std::string> calendar;
  std::optional<int> calendar_version;
  std::optional<std::string> business_delay;
};

// One check's whole trace: its pending row, if any, its runs and its history rows, oldest first.
struct CheckTrace {
  std::optional<PendingCheck> pending;
  std::vector<CheckRun> runs;
  std::vector<HistoryEntry> history;
};

nlohmann::json to_json(const PendingCheck& check);
nlohmann::json to_json(const HistoryEntry& entry);
nlohmann::json to_json(const CheckRun& run);
// {"pending": ... or null, "runs": [...], "history": [...]}, as `prescient show --json` prints it.
nlohmann::json to_json(const CheckTrace& trace);

}  // namespace prescient

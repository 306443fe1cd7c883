#pragma once
// The enqueue API for applications in C++. A Client works on a soci::session the application owns,
// so a check joins the application's open transaction: it exists if and only if the business change
// committed. Every call is one round trip to the SQL functions of sql/ (schedule, schedule_arrays,
// cancel, reschedule), which hold the rules (slot rounding, horizon, windows, debounce and dedupe, key
// conflicts) for every language alike: a refusal is SQL's message, the same one psql or the CLI gets.
// The Client judges only what SQL cannot: at or in, and text that cannot travel (NUL, invalid UTF-8). A job
// class is judged by SQL too, against the database's registry (prescient.job_class, docs/design.md "The class
// registry"), not by a C++ Registry: the same words from every door.
#include <nlohmann/json.hpp>

#include <chrono>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "prescient/job.hpp"
#include "prescient/clock.hpp"
#include "prescient/outcome.hpp"
#include "prescient/settings.hpp"

namespace soci {
class session;
}

namespace prescient {

// On a pending check with the same job key: fail, replace it, keep it, debounce (replace it, but never
// to a time later than its first enqueue plus max_wait), or collect (a digest: add the payload to the check's
// list, {"collected": [...]}, and move it as debounce does; docs/concepts.md, "Digests").
enum class OnConflict { error, replace, keep, debounce, collect };
OnConflict parse_on_conflict(std::string_view text);  // throws InvalidInput
std::string_view to_string(OnConflict policy);

// Exactly one of `at` and `in` (relative to the client's clock).
struct ScheduleRequest {
  std::string job;
  std::string entity_name;  // what the check is about, e.g. "orders"
  std::string entity_key;   // which one, e.g. "42"
  std::optional<std::string> job_key;    // natural key, unique among pending checks
  std::optional<std::string> group_key;  // checks of one group run together, in order
  std::optional<TimePoint> at;
  std::optional<std::chrono::seconds> in;
  nlohmann::json payload = nlohmann::json::object();
  std::optional<std::string> by;  // default: the client's enqueued_by
  OnConflict on_conflict = OnConflict::error;
  // The check may fire any time in this window after its time: it is stored at one of the window's slots,
  // chosen by its id, so that a herd given one time spreads evenly (docs/flow-control.md).
  std::optional<std::chrono::seconds> window;
  // With OnConflict::debounce or collect (and only then): the ceiling, at least one slot.
  std::optional<std::chrono::seconds> max_wait;
  // Not scheduled again when a check of the same job key settled with one of dedupe_outcomes (none given:
  // done) within this long before now: the answer is Status::deduplicated with that check's id.
  std::optional<std::chrono::seconds> dedupe_for;
  std::vector<Outcome> dedupe_outcomes;
  // From 0 (first) to 9 (last); none: 5. Among the checks due at the same time, claims take the lower number
  // first (docs/design.md, "Priorities"); SQL judges the range.
  std::optional<int> priority;
  // The W3C trace context the check is created in (docs/design.md, "Trace context"): a traceparent
  // (00-<trace id>-<parent id>-<flags>) and, with it only, a tracestate. Each run continues the trace with a
  // span of its own. SQL judges both.
  std::optional<std::string> traceparent;
  std::optional<std::string> tracestate;
  // Business time (docs/business-time.md): the check is due in this calendar's open time, business_delay of
  // open time after its time ("4h", "90m", "3bd"), or with no delay at its time or the calendar's next opening.
  // Its time is `at`, else now plus `in` (no `in` beside a business delay), else now. SQL judges both.
  std::optional<std::string> calendar;
  std::optional<std::string> business_delay;
  // The check's own policy, over its class's for it alone: max_checks (0: no limit), max_attempts and the
  // backoff (not the timeout, which is the class's). Set by prescient.set_check_policy in the enqueue's
  // transaction, on a check written (created, replaced, debounced); its rules are SQL's.
  JobPolicy policy;
};

struct Scheduled {
  // collected: the payload joined a pending digest (next_check_at: when it will be looked at).
  enum class Status { created, replaced, kept, conflict, debounced, collected, deduplicated };
  // For `conflict`: the id of the pending check holding the key; for `deduplicated`: of the settled one.
  std::int64_t id = 0;
  std::optional<std::string> job_key;
  std::optional<TimePoint> next_check_at;  // empty for `conflict` and `deduplicated` (nothing written)
  std::optional<TimePoint> first_check_at;
  Status status = Status::created;
};
std::string_view to_string(Scheduled::Status status);

struct Rescheduled {
  std::int64_t id = 0;
  std::optional<std::string> job_key;
  TimePoint next_check_at;
};

struct ClientOptions {
  const Clock* clock = nullptr;  // default: the system clock
  std::string enqueued_by;       // default: the OS user
  // A class that is not a row of prescient.job_class is refused (InvalidInput, listing the known ones) unless
  // this is set: the caller knows better, e.g. for a class deployed after its checks are written.
  bool allow_unknown_class = false;
};

class Client {
 public:
  // REQUIRES: db (and options.clock if set) outlive the Client.
  explicit Client(soci::session& db, ClientOptions options = {});

  // Throws InvalidInput (nothing written) for a bad request, a time beyond the horizon, or a key
  // conflict under OnConflict::error (naming the key and the existing id), in prescient.schedule's words.
  Scheduled schedule(const ScheduleRequest& request);

  // All in one statement. All or nothing: the first bad request throws InvalidInput naming its
  // position ("item 3: ...", from 1, as prescient.schedule_arrays names it) and nothing is written. With report_conflicts, a key conflict under
  // OnConflict::error comes back as Status::conflict instead of failing the batch.
  // Results are in request order.
  std::vector<Scheduled> schedule_many(std::span<const ScheduleRequest> requests, bool report_conflicts = false);

  // What is wrong with a request (as schedule would refuse it), or nothing. Writes nothing; asks the
  // database (prescient.schedule_problems), which holds the rules.
  std::optional<std::string> problem_with(const ScheduleRequest& request) { return problem_with(request, now()); }
  // The same for many requests in one round trip: an entry per request, empty when it is good.
  std::vector<std::optional<std::string>> problems_with(std::span<const ScheduleRequest> requests) {
    return problems_with(requests, now());
  }

  // Moves the pending check to job_history as `cancelled`. Returns its id, or nothing when no
  // pending check matched.
  std::optional<std::int64_t> cancel_id(std::int64_t id, std::optional<std::string> by = std::nullopt);
  std::optional<std::int64_t> cancel_job_key(const std::string& job_key, std::optional<std::string> by = std::nullopt);

  // Moves a pending check to a new time (rounded up like schedule). Nothing when none matched.
  std::optional<Rescheduled> reschedule_id(std::int64_t id, TimePoint at);
  std::optional<Rescheduled> reschedule_job_key(const std::string& job_key, TimePoint at);

  const Settings& settings();
  TimePoint now() const { return clock_->now(); }

 private:
  std::optional<std::int64_t> cancel(std::optional<std::int64_t> id, std::optional<std::string> job_key,
                                     std::optional<std::string> by);
  std::optional<Rescheduled> reschedule(std::optional<std::int64_t> id, std::optional<std::string> job_key,
                                        TimePoint at);
  // Validation and insert of one call use one instant, `now`.
  std::optional<std::string> problem_with(const ScheduleRequest& request, TimePoint now);
  std::vector<std::optional<std::string>> problems_with(std::span<const ScheduleRequest> requests, TimePoint now);
  // What only C++ judges: at or in, and text that cannot reach SQL intact.
  std::optional<std::string> local_problem(const ScheduleRequest& request, TimePoint now) const;
  // The absolute time of a request; throws InvalidInput unless exactly one of at/in is set.
  TimePoint time_of(const ScheduleRequest& request, TimePoint now) const;

  soci::session& db_;
  const Clock* clock_;
  std::string enqueued_by_;
  bool allow_unknown_class_;
  std::optional<Settings> settings_;
};

// The OS user running this process, for enqueued_by and cancelled_by.
std::string current_os_user();

}  // namespace prescient

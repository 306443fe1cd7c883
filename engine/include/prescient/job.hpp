#pragma once
// The job-class interface: given a due check, answer with the next time to look again, or nothing.
#include <nlohmann/json.hpp>

#include <chrono>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "prescient/time.hpp"

namespace soci {
class session;
}

namespace prescient {

// The database's row for the class (prescient jobs set) overrides these; the config file's defaults and the
// database's settings fill what neither sets (docs/guarantees.md, "Policies").
struct JobPolicy {
  std::optional<int> max_checks;
  std::optional<int> max_attempts;
  std::optional<std::chrono::seconds> timeout;
  // A failed attempt is retried `backoff` later, doubling each attempt, at most `backoff_max` apart (each
  // rounded up to the grid). Unset: one slot, doubling, at most a day.
  std::optional<std::chrono::seconds> backoff;
  std::optional<std::chrono::seconds> backoff_max;
  bool long_running = false;  // claimed with a written lease and run outside a transaction
  // With long_running: the class's checks of a batch come to run_batch in one call (they may run at once).
  bool batch = false;

  bool operator==(const JobPolicy&) const = default;
};

// A pending check as a job class sees it when it is due.
struct Check {
  std::int64_t id = 0;
  std::string job;
  std::string entity_name;
  std::string entity_key;
  std::optional<std::string> job_key;
  std::optional<std::string> group_key;
  nlohmann::json payload = nlohmann::json::object();
  TimePoint first_check_at;
  TimePoint slot;       // the slot being fired (the check's next_check_at)
  // The time it was last asked for, before rounding to the grid: by its enqueue (or reschedule), or by its
  // last answer. Backoff, retries, windows and deferrals never move it. An answer after it is honoured even
  // when already past (the run was late: due at the next boundary); one at or before it ends the check
  // guard_past.
  TimePoint asked_for;
  // What it overrides of its class's policy for itself alone (prescient.set_check_policy at enqueue):
  // max_checks, max_attempts and the backoff; empty where it sets nothing.
  JobPolicy policy;
  int check_count = 0;  // how many times it has run before this run
  int attempts = 0;     // failed attempts since its last successful run
  // The W3C trace context this run continues (docs/design.md, "Trace context"): the trace the check was
  // created in, with this run's own span id as the parent id, and the tracestate that goes with it. What
  // a job sends on to others (the http class's header, the command class's TRACEPARENT). None: the check
  // carries no trace.
  std::optional<std::string> traceparent;
  std::optional<std::string> tracestate;
};

// A statement a job asks to run with its check's settlement (see JobContext::write).
struct BufferedWrite {
  std::string sql;
  std::vector<std::optional<std::string>> params;  // $1, $2, ... as text; nullopt is NULL
};

// Published into prescient.event in the same transaction as the check's settlement.
struct Event {
  std::string type;
  nlohmann::json payload = nlohmann::json::object();
  // Deterministic id; empty: the runner's "<check id>-<check count>[-n]". A duplicate id is ignored.
  std::string id;
  std::optional<TimePoint> occurred_at;  // empty: the slot
  std::string source;                    // empty: the check's id
};

// "Look again in 4 working hours": a length of a calendar's open time ("4h", "90m") or business days ("3bd")
// after the runner's now, as an enqueue's business delay reads it (docs/business-time.md). The runner resolves
// it to a time before it settles the check; an unknown calendar or a delay that is not one fails the check's
// run with the reason.
struct BusinessDelay {
  std::string calendar;
  std::string delay;
};

struct JobResult {
  std::optional<TimePoint> next;  // nothing (and no next_in_business_time): the check is done
  std::optional<BusinessDelay> next_in_business_time;  // instead of `next`, never with it
  std::vector<Event> events;
  // Keys to set in the check's payload from this run on (what its next run sees, or what its history row
  // keeps), merged at the top level by the settlement: state a job carries from one run to the next.
  // Nothing: unchanged. A JSON object.
  std::optional<nlohmann::json> payload_update;
  // What the run returns besides its answer, kept with it (docs/design.md, "Results"): any JSON of at most
  // 64 KiB as PostgreSQL prints it, in the history's row when the check ends, in its timeline's row when it
  // goes on. Over the bound, the check's run fails with the reason. Nothing: no result.
  std::optional<nlohmann::json> result;
};

// What a class may override; unset fields take the database's settings.

// One check's answer within run_batch: its result, or why its run failed (a failed attempt, as if run()
// had thrown with that message).
struct BatchAnswer {
  JobResult result;
  std::optional<std::string> failure;
};

// What a running job may ask of the runner.
class JobContext {
 public:
  virtual ~JobContext() = default;
  virtual TimePoint slot() const = 0;  // the slot being fired
  virtual TimePoint now() const = 0;   // the runner's clock
  virtual std::chrono::seconds slot_resolution() const = 0;
  // How far after the slot a next time may lie (the settings' max_horizon): a job that wants to look
  // again later than that answers a time within it, and looks again then.
  virtual std::chrono::seconds max_horizon() const = 0;
  // How long this run may take (the class policy's timeout, else the settings' job_timeout); the runner
  // gives up on the job after it. Jobs that wait on something else (SQL, a child process) bound it too.
  virtual std::chrono::milliseconds timeout() const = 0;
  // A session of its own on the runner's database, opened on first use, for reading application data
  // ("is order 42 shipped?"). Not the runner's transaction: what a job writes here commits on its own.
  virtual soci::session& db() = 0;
  // Buffers a statement to run in the transaction that settles this check: it commits exactly when the
  // settlement does, and is dropped when the run fails (or its lease expired). Values go as parameters.
  virtual void write(std::string sql, std::vector<std::optional<std::string>> params = {}) = 0;
};

class JobExec {
 public:
  virtual ~JobExec() = default;
  virtual JobPolicy policy() const { return {}; }
  virtual JobResult run(const Check& check, JobContext& ctx) = 0;
  // All due checks of one group in one call, in order; the default runs them one by one.
  virtual std::vector<JobResult> run_group(std::span<const Check> checks, JobContext& ctx);
  // With policy().batch: independent checks answered together (e.g. requests sent at once), one answer
  // per check in order, within ctx.timeout() for all of them; what it writes (ctx.write) settles with the
  // first check. A check's failure fails it alone; an exception fails them all. The default runs them one
  // by one.
  virtual std::vector<BatchAnswer> run_batch(std::span<const Check> checks, JobContext& ctx);
};

}  // namespace prescient

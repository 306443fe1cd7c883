#pragma once
// Recurring schedules: a row of prescient.cron_schedule, and one pending check of class `cron` per active
// schedule (job key "cron:<id>") carrying the definition, so everything the runner guarantees holds for
// schedules too. Every change goes through the SQL API any language uses (docs/sql-api.md); this class
// adds what C++ can judge before that: the spec and zone by the runner's own parser and tzdata, and the first
// occurrence. The job class is SQL's to judge, against the database's registry (prescient.job_class).
#include <nlohmann/json.hpp>

#include <chrono>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "prescient/clock.hpp"
#include "prescient/cron_spec.hpp"
#include "prescient/time.hpp"

namespace soci {
class session;
}

namespace prescient {

class Registry;

struct ScheduleDefinition {
  std::string id;
  std::string spec;
  std::string time_zone = "UTC";
  std::string job = "emit";  // emit: publish the payload at each occurrence; another class: a check of it
  nlohmann::json payload = nlohmann::json::object();
  std::optional<std::chrono::seconds> deadline;  // an occurrence fired later than this is skipped
  std::string catch_up = "one";                  // after downtime: one, all or none of the missed occurrences
  // Each occurrence fires at the schedule's place in this window after it (chosen by its check's id, so
  // that schedules added together spread over the window's slots; docs/flow-control.md). The deadline
  // counts from that place. From 1s to the horizon.
  std::optional<std::chrono::seconds> window;
  // Each occurrence fires at an offset of its own within this long after it (whole slots, from a hash of
  // the id and the occurrence: stable, never early). The deadline counts from there. Not with a window.
  std::optional<std::chrono::seconds> jitter;
  // For a job class other than emit: what an occurrence does while the check of an earlier one is still
  // pending or running (docs/schedules.md, "Overlap"): allow, skip, buffer_one or cancel_previous.
  std::string overlap = "allow";
  // Bounds: only occurrences from start_at to end_at (both included) fire, and at most max_runs of them;
  // then the schedule ends by itself (state "ended", kept with the reason).
  std::optional<TimePoint> start_at, end_at;
  std::optional<int> max_runs;
  // From 0 (first) to 9 (last): the priority of the schedule's check and of each check its occurrences make
  // (docs/design.md, "Priorities").
  int priority = 5;
  // Pauses itself when this many of the checks its occurrences make end `failed` in a row (a `done` sets the
  // count back to 0; a resume starts it again): docs/schedules.md, "Pause after failures". 1 to 1000.
  std::optional<int> pause_after_failures;
  // Where the clocks change (docs/schedules.md, "Daylight saving time"): a local time that occurs twice
  // fires at its first instant, its last, both or none; one that does not occur is shifted (read at the
  // offset before the change) or skipped. "auto": cron's rule for the spec's kind (CronSpec::next).
  std::string dst_repeated = "auto";  // auto, first, last, both or none
  std::string dst_missing = "auto";   // auto, shift or skip
  // Bound to a calendar (docs/schedules.md, "Bound to a calendar"): occurrences fire only in its open time;
  // one in closed time is skipped, or moved to the calendar's next opening ("move"; those moved to the same
  // opening fire there once). A window or jitter counts the calendar's open time.
  std::optional<std::string> calendar;
  std::string when_closed = "skip";  // skip or move
  // Read back only:
  int version = 1;
  TimePoint anchor_at, created_at, updated_at;
  std::optional<TimePoint> last_occurrence_at;  // the last occurrence fired (while paused: handled)
  std::optional<TimePoint> next_check_at;       // of its pending cron check (none while paused or invalid)
  std::optional<TimePoint> paused_at;
  std::optional<std::string> pause_note;      // why it was paused, as the pause said
  std::optional<std::string> invalid_reason;  // the runner could not use this version of it, and why
  int run_count = 0;                          // occurrences fired, counted while it has a max_runs
  std::optional<TimePoint> ended_at;
  std::optional<std::string> ended_reason;  // which bound ended it
  int failed_in_a_row = 0;                  // the count pause_after_failures looks at
  std::optional<std::string> last_failure;  // the error of the last occurrence's check that failed
};

// A page of schedules, in id order: those after `after`, at most `limit` (1 to 10 000).
struct ScheduleFilter {
  int limit = 100;
  std::optional<std::string> after;
  bool paused = false;   // only paused ones
  bool invalid = false;  // only invalid ones
  std::optional<std::string> job;
};

// Changes for update; unset fields stay.
struct ScheduleChanges {
  std::optional<std::string> spec, time_zone, job, catch_up;
  std::optional<nlohmann::json> payload;
  std::optional<std::chrono::seconds> deadline;
  std::optional<std::chrono::seconds> window;
  std::optional<std::chrono::seconds> jitter;
  std::optional<std::string> overlap;
  std::optional<TimePoint> start_at, end_at;
  std::optional<int> max_runs;
  std::optional<int> priority;
  std::optional<int> pause_after_failures;
  std::optional<std::string> dst_repeated, dst_missing;
  std::optional<std::optional<std::string>> calendar;  // set: bound to this calendar, or (empty) to none
  std::optional<std::string> when_closed;
};

// One change of update_many.
struct ScheduleUpdate {
  std::string id;
  ScheduleChanges changes;
  std::optional<int> expected_version;
};

// Each change (add, update, remove) is atomic, and joins the application's transaction when one is open on
// `db`: it then commits or rolls back with it, and a refused change (an exception) undoes only itself,
// through a savepoint, leaving the application's transaction usable. With none open it commits at once.
class Schedules {
 public:
  // REQUIRES: db outlives this.
  Schedules(soci::session& db, const Clock& clock);

  // Throws InvalidInput for a bad spec, zone, field, window, jitter, overlap policy or bounds, an unknown
  // job class (one that is not a row of prescient.job_class), an id in use, or a spec that never fires after now: SQL's words for what SQL judges
  // (prescient.cron_add's, docs/design.md "Every rule has one home"). Creates the row and its pending
  // check, atomically.
  ScheduleDefinition add(const ScheduleDefinition& definition);
  // What add would refuse in this definition, writing nothing (its spec and zone here, the rest asked of
  // prescient.cron_problems), or nothing.
  std::optional<std::string> problem_with(const ScheduleDefinition& definition) const;
  // The same for many, in one round trip: an element per definition, nullopt for a good one. An id given
  // twice among them is not judged (add_many refuses it).
  std::vector<std::optional<std::string>> problems_with(std::span<const ScheduleDefinition> definitions) const;
  // Many at once, all or nothing, in one statement. A bad item throws InvalidInput "item N: field: why"
  // (N from 1) and nothing is written. Returns how many were added.
  int add_many(std::span<const ScheduleDefinition> definitions);
  // Bumps the version; a changed spec takes effect from the next occurrence after now (an occurrence due
  // and not yet fired fires under the new version). The pending check is rewritten in place, so no stale
  // firing happens. With expected_version, a schedule at another version throws InvalidInput and nothing
  // changes. Throws NotFound for an unknown id.
  ScheduleDefinition update(const std::string& id, const ScheduleChanges& changes,
                            std::optional<int> expected_version = std::nullopt);
  // Many updates, each as update does them, all or nothing in one transaction. A refused item throws what
  // update would (InvalidInput, NotFound) as "item N: why" (N from 1) and nothing changes. Returns how many.
  int update_many(std::span<const ScheduleUpdate> updates);
  // Deletes the row and cancels its pending check. Throws NotFound for an unknown id.
  void remove(const std::string& id, const std::string& by);
  // Pause keeps the definition and the place reached and cancels the pending check; resume re-arms it, and
  // the runner applies the catch-up policy to what fell due meanwhile. False when already so; NotFound.
  // A note says why (at most 1024 bytes): shown until it resumes, and kept in the cancelled check's history.
  bool pause(const std::string& id, const std::string& by, const std::optional<std::string>& note = std::nullopt);
  bool resume(const std::string& id, const std::string& by);
  // Fires every occurrence from `from` to `to` (both included; a past range of at most 366 days) once, at the
  // next boundary, with the same event ids and check keys as live firings: what ran already is not fired
  // again. Returns the id of the backfill's check. InvalidInput for a bad range; NotFound.
  std::int64_t backfill(const std::string& id, TimePoint from, TimePoint to, const std::string& by);
  // Fires one occurrence now, out of the series, at the next boundary (paused or ended schedules too): an
  // event for emit, a check of its class otherwise, with an id of its own; the next regular occurrence
  // fires on time. Returns the occurrence's id (the event's id, or the check's job key). NotFound.
  std::string trigger(const std::string& id, const std::string& by);
  std::vector<ScheduleDefinition> list(const ScheduleFilter& filter = {});
  ScheduleDefinition show(const std::string& id);

  struct FiredEvent {
    std::string id;
    TimePoint occurred_at, emitted_at;
  };
  // The schedule's most recent events, newest first.
  std::vector<FiredEvent> recent_events(const std::string& id, int limit);

  // What `cron show` and the dashboard show of one schedule: the definition, its next 5 firings (from
  // now, or from its last occurrence when that is later) and its 10 most recent events. NotFound.
  struct Detail {
    ScheduleDefinition definition;
    std::vector<TimePoint> next_firings;
    std::vector<FiredEvent> recent_events;
  };
  Detail detail(const std::string& id);

 private:
  // What C++ judges and SQL cannot (text that cannot reach SQL intact, the spec, the zone): throws
  // InvalidInput naming what is wrong; returns the parsed spec.
  CronSpec validate(const ScheduleDefinition& d) const;
  // The first occurrence after `after`; InvalidInput when there is none.
  TimePoint first_occurrence(const ScheduleDefinition& d, const CronSpec& spec, TimePoint after) const;
  // Validates `d` as added now, anchored at `now`, and returns its first occurrence.
  TimePoint first_of_new(ScheduleDefinition d, TimePoint now) const;
  // update's work inside the caller's transaction.
  void apply(const ScheduleUpdate& update, TimePoint now);

  soci::session& db_;
  const Clock& clock_;
};

// What `pause` or `resume` (action) of a schedule or a job class did, as the CLI and the dashboard's API
// say it: "paused", "paused already", "resumed" or "not paused".
std::string pause_status(const std::string& action, bool changed);

// invalid, paused, ended (by its bounds), active (it has a pending check) or finished (an @at that fired).
std::string state_of(const ScheduleDefinition& d);

// The shapes of `cron list --json` and `cron show --json` (the dashboard's API serves the same). A
// detail's firings are given in UTC (next_firings) and as wall time in the schedule's zone
// (next_firings_local), in the same order.
nlohmann::json to_json(const ScheduleDefinition& d);
nlohmann::json to_json(const Schedules::Detail& detail);

}  // namespace prescient

#pragma once
// The queue at a glance, for `prescient stats`, the metrics and the dashboard: what is pending, due,
// overdue and coming, and how checks finished lately.
//
// The figures of the whole queue are counted in the background (prescient.refresh_queue_figures: one
// session at a time for all runners, at most once a minute; every daemon keeps a FiguresRefresher) and
// read here as a few small rows, so that no reader counts a table of millions per request. They are
// exact counts as of `counted_at`, not planner estimates. What is cheap to read live (the paused
// classes, the oldest overdue check: an index probe) is read live.
#include <chrono>
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "prescient/clock.hpp"
#include "prescient/flow_limits.hpp"
#include "prescient/outcome.hpp"
#include "prescient/time.hpp"

namespace soci {
class session;
}

namespace prescient {

// How old the figures may be before a reader who finds them counts them again itself; a FiguresRefresher
// keeps them younger.
inline constexpr std::chrono::seconds kFiguresMaxAge{60};

struct QueueStats {
  TimePoint now;
  TimePoint counted_at;    // the figures below are as of this time (live ones say so)
  long long count_millis = 0;  // how long counting them took the server
  TimePoint current_slot;  // the slot of counted_at
  long long pending = 0;
  long long due_now = 0;   // at or before the current slot: what a runner would take now
  long long overdue = 0;   // before the current slot: missed slots, left behind or written off the grid
  struct Oldest {
    std::int64_t id = 0;
    std::string job;
    TimePoint next_check_at;
  };
  std::optional<Oldest> oldest_overdue;  // live: before the slot of `now`
  struct SlotCount {
    TimePoint slot;
    long long checks = 0;
  };
  std::vector<SlotCount> next_slots;  // the slots after the current one, empty ones included
  // Settled in the hour before counted_at; and in the whole hours (UTC) of the last day: 24 to 25 hours.
  std::map<Outcome, long long> finished_last_hour, finished_last_day;
  long long dead_letters = 0;  // failed in the last 30 days and not put back with retry
  struct PausedClass {
    std::string job;
    TimePoint paused_at;
    std::string paused_by;
    long long pending = 0;  // its checks, waiting for it to be resumed (as of counted_at)
  };
  std::vector<PausedClass> paused;  // live: job classes runners take nothing of (prescient jobs pause)
  // Live: checks flow limits deferred, per limit and key value, the most deferred first (at most 20).
  std::vector<FlowFigure> deferrals;
};

// Counts the figures again when they are absent or older than max_age and no other session is counting
// them; returns whether this call counted. max_age 0 counts now (after a counting session, if any).
bool refresh_queue_figures(soci::session& db, TimePoint now, Micros max_age = kFiguresMaxAge);

// For a process about to serve the figures (the dashboard, metrics): counts them now unless they are
// recent, so its first request finds some. A role that may not count them (a viewer), or a failing
// database, is logged, not thrown: the daemons' figures serve then.
void refresh_queue_figures_before_serving(soci::session& db, TimePoint now);

// REQUIRES a migrated database; 1 <= slots_ahead <= 1000. Counts the figures first when they are older
// than max_age, or when a check was enqueued since they were counted (a higher id than the newest they
// saw: a bulk enqueue shows at once; a cancel or a settlement waits for max_age). Micros::max(): only when
// they were never counted (waiting for a session counting them then); throws DatabaseError when this role
// may not count them.
QueueStats queue_stats(soci::session& db, TimePoint now, int slots_ahead, Micros max_age = kFiguresMaxAge);

// As `prescient stats --json` prints it (and the dashboard's /api/stats serves it).
nlohmann::json to_json(const QueueStats& stats);

// The time a series of buckets covers: one every `width` from `from` up to `to` (exclusive). A series leaves
// its empty buckets out; its span says where they are, so that a chart draws them as time (docs/web.md).
struct BucketSpan {
  TimePoint from, to;
  Micros width{};
};
// The past day by UTC hour as the figures count it (sql/functions/075_queue_figures.sql): from the hour a
// day before `now` through the hour of `now`: 25 hours.
BucketSpan past_day_hours(TimePoint now);
// Its fields "from", "to" and "bucket_seconds", added to an answer's object.
void add_span(nlohmann::json& answer, const BucketSpan& span);

// The future, as the figures hold it: pending checks by job class per slot over the next hour (as far as the
// figures keep slots: 1 000 of them), per hour over the next day, or per day over the next year.
enum class FutureZoom { slot, hour, day };
struct FutureBucket {
  TimePoint starts_at;  // the slot, or the hour or day (UTC)
  std::string job;
  long long checks = 0;
};
struct Future {
  TimePoint counted_at, current_slot;
  BucketSpan span;  // from the bucket after the current slot's (due now is not the future)
  std::vector<FutureBucket> buckets;  // by time, then class; empty buckets left out
};
// Figures never counted are counted first (as queue_stats with Micros::max()); throws DatabaseError when
// this role may not count them.
Future future(soci::session& db, FutureZoom zoom, TimePoint now);
nlohmann::json to_json(const Future& future);

// The past day, as the figures hold it: settlements per hour (UTC) and outcome, with their lateness.
struct FinishedHour {
  TimePoint hour;
  Outcome outcome = Outcome::done;
  long long checks = 0;
  std::optional<double> lateness_p50_seconds, lateness_p99_seconds;  // none for cancelled checks
};
struct PastDay {
  TimePoint counted_at;
  BucketSpan span;                  // past_day_hours(counted_at)
  std::vector<FinishedHour> hours;  // by hour, then outcome; hours with none left out
};
// Figures never counted are counted first, as future's.
PastDay past_day(soci::session& db, TimePoint now);
nlohmann::json to_json(const PastDay& past);

// Pending checks by when they are due, for metrics: before the current slot (overdue), at it (due), and
// within the hour, day and week after it; as the figures were last counted (nullopt: never). Reads only.
struct PendingByHorizon {
  TimePoint counted_at;
  long long overdue = 0, due = 0, next_hour = 0, next_day = 0, next_week = 0;
};
std::optional<PendingByHorizon> pending_by_horizon(soci::session& db);

// A thread that keeps the figures younger than max_age: every quarter of it, it asks to count them
// (prescient.refresh_queue_figures counts only when they are older; one session at a time), on a
// connection of its own. Failures are logged and tried again at the next turn. Stops when destroyed.
namespace ops {
class Turns;  // internal (ops/turns.hpp): the thread and its connection
}

class FiguresRefresher {
 public:
  // REQUIRES: clock outlives the refresher.
  FiguresRefresher(std::string database_url, const Clock& clock, Micros max_age = kFiguresMaxAge);
  ~FiguresRefresher();
  FiguresRefresher(const FiguresRefresher&) = delete;
  FiguresRefresher& operator=(const FiguresRefresher&) = delete;

 private:
  std::unique_ptr<ops::Turns> turns_;
};

}  // namespace prescient

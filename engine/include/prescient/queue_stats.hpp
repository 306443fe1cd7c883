#pragma once
// The queue at a glance, for `prescient stats`: what is pending, due, overdue and coming, and how
// checks finished lately. Every figure is exact (counts, not planner estimates), read in one
// repeatable-read snapshot so they add up.
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "prescient/outcome.hpp"
#include "prescient/time.hpp"

namespace soci {
class session;
}

namespace prescient {

struct QueueStats {
  TimePoint now;
  TimePoint current_slot;
  long long pending = 0;
  long long due_now = 0;   // at or before the current slot: what a runner would take now
  long long overdue = 0;   // before the current slot: missed slots, left behind or written off the grid
  struct Oldest {
    std::int64_t id = 0;
    std::string job;
    TimePoint next_check_at;
  };
  std::optional<Oldest> oldest_overdue;
  struct SlotCount {
    TimePoint slot;
    long long checks = 0;
  };
  std::vector<SlotCount> next_slots;  // the slots after the current one, empty ones included
  std::map<Outcome, long long> finished_last_hour, finished_last_day;
  long long dead_letters = 0;  // failed in the last 30 days and not put back with retry
  struct PausedClass {
    std::string job;
    TimePoint paused_at;
    std::string paused_by;
    long long pending = 0;  // its checks, waiting for it to be resumed
  };
  std::vector<PausedClass> paused;  // job classes runners take nothing of (prescient jobs pause)
};

// REQUIRES a migrated database. `slots_ahead` slots after the current one are counted.
QueueStats queue_stats(soci::session& db, TimePoint now, int slots_ahead);

// Pending checks by when they are due, for metrics: before the current slot (overdue), at it (due), and
// within the hour, day and week after it. Index range counts on the slot index.
struct PendingByHorizon {
  long long overdue = 0, due = 0, next_hour = 0, next_day = 0, next_week = 0;
};
PendingByHorizon pending_by_horizon(soci::session& db, TimePoint now);

}  // namespace prescient

#pragma once
// The calendars a runner thread's bound schedules are judged by (docs/schedules.md, "Bound to a calendar"):
// each calendar's open time is read once a version (all its spans: a few hundred rows a year), and its version
// looked up at most once a slot, so a change to a calendar applies to the occurrences judged from the next
// slot on. Held by the cron class's instance, which lives with its runner thread and that thread's database.
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "prescient/open_time.hpp"
#include "prescient/time.hpp"

namespace soci {
class session;
}

namespace prescient::jobs {

class CronCalendars {
 public:
  // The calendar's open time as its current version computed it, looked up through `db` unless looked up
  // in this slot already. NotFound when there is no such calendar.
  std::shared_ptr<const OpenTime> current(const std::string& calendar, TimePoint slot, soci::session& db);

 private:
  struct Known {
    std::shared_ptr<const OpenTime> open_time;
    TimePoint looked_up_in;  // the slot of the last look at its version
  };
  std::mutex mutex_;  // a job abandoned by its executor may still be running beside the next one
  std::map<std::string, Known> known_;
};

}  // namespace prescient::jobs

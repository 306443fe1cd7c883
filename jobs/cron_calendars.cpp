#include "cron_calendars.hpp"

#include "prescient/calendars.hpp"

namespace prescient::jobs {

std::shared_ptr<const OpenTime> CronCalendars::current(const std::string& calendar, TimePoint slot,
                                                       soci::session& db) {
  const std::lock_guard lock(mutex_);
  const auto it = known_.find(calendar);
  if (it != known_.end() && it->second.looked_up_in == slot) return it->second.open_time;
  if (it != known_.end() && it->second.open_time->version() == prescient::calendar(db, calendar).version) {
    it->second.looked_up_in = slot;
    return it->second.open_time;
  }
  auto open_time = std::make_shared<const OpenTime>(prescient::open_time(db, calendar));
  known_.insert_or_assign(calendar, Known{.open_time = open_time, .looked_up_in = slot});
  return open_time;
}

}  // namespace prescient::jobs

#pragma once
// An IANA time zone as the runner reads it: the system's tzdata through date/tz, and past the zone file's
// last explicit change, the file's closing rule (its POSIX TZ string, read with date/ptz.h). Debian's date/tz
// (3.0.1) does not read that rule, so without it the runner saw no DST from 2038 on, where PostgreSQL (and
// business time) follows the rule; tests/db/tzdata_agreement_test.cpp compares the two sides.
// Usable wherever date/tz takes a zone pointer: date::zoned_time{&zone, t} and date::format work with it.
#include <date/tz.h>

#include <chrono>
#include <memory>
#include <string>

namespace prescient {

class TimeZone {
 public:
  // Reads the zone file's closing rule ("CET-1CEST,M3.5.0,M10.5.0/3"), if it has one date/ptz can read.
  explicit TimeZone(const date::time_zone& zone);

  const std::string& name() const { return zone_->name(); }
  date::sys_info get_info(date::sys_seconds t) const;
  date::local_info get_info(date::local_seconds t) const;
  template <class Duration>
  date::sys_info get_info(date::sys_time<Duration> t) const {
    return get_info(std::chrono::floor<std::chrono::seconds>(t));
  }
  template <class Duration>
  date::local_time<std::common_type_t<Duration, std::chrono::seconds>> to_local(date::sys_time<Duration> t) const {
    return date::local_time<std::common_type_t<Duration, std::chrono::seconds>>{t.time_since_epoch() +
                                                                                get_info(t).offset};
  }

 private:
  const date::time_zone* zone_;
  struct Rule;  // date/ptz.h's Posix::time_zone, included by time_zone.cpp alone (it needs a C++20 workaround)
  std::shared_ptr<const Rule> rule_;
  date::sys_seconds rule_from_{};  // the file's last explicit change: the rule answers from there on
};

// The IANA zone named `name` ("Europe/Berlin", "UTC"). Throws InvalidInput for an unknown name.
const TimeZone& find_time_zone(const std::string& name);

}  // namespace prescient

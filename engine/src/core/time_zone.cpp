#include "prescient/time_zone.hpp"

// date/ptz.h (3.0.1) names hh_mm_ss unqualified under `using namespace date` and `std::chrono`, which C++20
// makes ambiguous: while it is read, the name means date's, through an alias only date has.
namespace date {
template <class Duration>
using hh_mm_ss_of_date = hh_mm_ss<Duration>;
}
#define hh_mm_ss hh_mm_ss_of_date
#include <date/ptz.h>
#undef hh_mm_ss

#include <cstdlib>
#include <fstream>
#include <iterator>
#include <map>
#include <memory>
#include <mutex>
#include <optional>

#include "prescient/errors.hpp"

namespace prescient {

struct TimeZone::Rule {
  Posix::time_zone zone;
};

namespace {

// The zone file's closing rule: its last line, after the binary data ("\nCET-1CEST,M3.5.0,M10.5.0/3\n"). None
// when the file cannot be read or has none, or when date/ptz cannot read it (a negative rule time, say): the
// runner then reads the zone as date/tz alone does.
std::optional<Posix::time_zone> closing_rule(const std::string& name) {
  const char* dir = std::getenv("TZDIR");
  std::ifstream file(std::string(dir != nullptr && *dir != '\0' ? dir : "/usr/share/zoneinfo") + "/" + name,
                     std::ios::binary);
  if (!file) return std::nullopt;
  const std::string text{std::istreambuf_iterator<char>(file), std::istreambuf_iterator<char>()};
  if (text.size() < 2 || text.back() != '\n') return std::nullopt;
  const std::size_t start = text.rfind('\n', text.size() - 2);
  if (start == std::string::npos || start + 2 >= text.size()) return std::nullopt;
  try {
    return Posix::time_zone(text.substr(start + 1, text.size() - start - 2));
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

}  // namespace

TimeZone::TimeZone(const date::time_zone& zone) : zone_(&zone) {
  std::optional<Posix::time_zone> rule = closing_rule(zone.name());
  if (!rule) return;
  // Past its last explicit change, date/tz answers with the last offset for ever: that change is where the
  // rule takes over.
  rule_from_ = zone.get_info(date::sys_days{date::year{2400} / 1 / 1}).begin;
  rule_ = std::make_shared<const Rule>(Rule{std::move(*rule)});
}

date::sys_info TimeZone::get_info(date::sys_seconds t) const {
  if (!rule_ || t < rule_from_) return zone_->get_info(t);
  date::sys_info info = rule_->zone.get_info(t);
  if (info.begin < rule_from_) info.begin = rule_from_;
  return info;
}

date::local_info TimeZone::get_info(date::local_seconds t) const {
  // A day's margin: a wall time near the last explicit change is date/tz's to answer, which knows it.
  if (!rule_ || t < date::local_seconds{rule_from_.time_since_epoch()} + date::days{1}) return zone_->get_info(t);
  return rule_->zone.get_info(t);
}

const TimeZone& find_time_zone(const std::string& name) {
  // One per name for the process's life (names are those date/tz knows, a bounded set), so that a reference
  // stays valid, as date::locate_zone's does.
  static std::mutex mutex;
  static std::map<std::string, std::unique_ptr<TimeZone>, std::less<>> zones;
  const std::lock_guard lock(mutex);
  if (const auto found = zones.find(name); found != zones.end()) return *found->second;
  const date::time_zone* zone = nullptr;
  try {
    zone = date::locate_zone(name);
  } catch (const std::exception&) {
    throw InvalidInput("unknown time zone '" + name + "' (use an IANA name such as UTC or Europe/Berlin)");
  }
  return *(zones[name] = std::make_unique<TimeZone>(*zone));
}

}  // namespace prescient

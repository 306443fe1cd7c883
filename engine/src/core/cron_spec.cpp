#include "prescient/cron_spec.hpp"

#include <date/tz.h>

#include <array>
#include <cctype>
#include <charconv>
#include <vector>

#include "prescient/duration.hpp"
#include "prescient/errors.hpp"
#include "prescient/time_text.hpp"
#include "prescient/time_zone.hpp"

namespace prescient {
namespace {

struct FieldRule {
  const char* name;
  int min, max;
  const char* const* names;  // index 0 = value `min` (or nullptr)
};

constexpr const char* kMonthNames[] = {"JAN", "FEB", "MAR", "APR", "MAY", "JUN",
                                       "JUL", "AUG", "SEP", "OCT", "NOV", "DEC"};
constexpr const char* kDayNames[] = {"SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT"};

[[noreturn]] void refuse_spec(std::string_view spec, const std::string& why) {
  throw InvalidInput("invalid cron spec '" + std::string(spec) + "': " + why);
}

int value_of(std::string_view spec, const FieldRule& rule, std::string_view token) {
  if (rule.names != nullptr && token.size() == 3 && std::isalpha(static_cast<unsigned char>(token[0]))) {
    std::string upper(token);
    for (char& c : upper) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    const int count = rule.names == kMonthNames ? 12 : 7;
    for (int i = 0; i < count; ++i) {
      if (upper == rule.names[i]) return (rule.names == kMonthNames ? 1 : 0) + i;
    }
  }
  int value = 0;
  const auto [end, ec] = std::from_chars(token.data(), token.data() + token.size(), value);
  if (token.empty() || ec != std::errc() || end != token.data() + token.size()) {
    refuse_spec(spec, std::string(rule.name) + " field: '" + std::string(token) + "' is not a number" +
                     (rule.names ? " or a name" : ""));
  }
  // Day of week 7 is Sunday, as in Vixie cron.
  const int max = rule.names == kDayNames ? 7 : rule.max;
  if (value < rule.min || value > max) {
    refuse_spec(spec, std::string(rule.name) + " field: " + std::to_string(value) + " is outside " +
                     std::to_string(rule.min) + "-" + std::to_string(max));
  }
  return value;
}

// Parses one field into the set of its values; returns whether it was restricted (not starting with *).
template <std::size_t N>
bool parse_field(std::string_view spec, std::string_view field, const FieldRule& rule, std::bitset<N>& out) {
  if (field.empty()) refuse_spec(spec, std::string(rule.name) + " field is empty");
  std::size_t start = 0;
  while (start <= field.size()) {
    const std::size_t comma = field.find(',', start);
    const std::string_view part = field.substr(start, comma == std::string_view::npos ? field.npos : comma - start);
    if (part.empty()) refuse_spec(spec, std::string(rule.name) + " field: an empty list item");
    const std::size_t slash = part.find('/');
    const std::string_view range = part.substr(0, slash);
    int step = 1;
    if (slash != std::string_view::npos) {
      const std::string_view step_text = part.substr(slash + 1);
      const auto [end, ec] = std::from_chars(step_text.data(), step_text.data() + step_text.size(), step);
      if (step_text.empty() || ec != std::errc() || end != step_text.data() + step_text.size() || step < 1 ||
          step > rule.max) {
        refuse_spec(spec, std::string(rule.name) + " field: step '" + std::string(step_text) + "' must be 1-" +
                         std::to_string(rule.max));
      }
    }
    int low = rule.min, high = rule.max;
    if (range != "*") {
      const std::size_t dash = range.find('-');
      low = value_of(spec, rule, range.substr(0, dash));
      if (dash != std::string_view::npos) {
        high = value_of(spec, rule, range.substr(dash + 1));
        if (high < low) refuse_spec(spec, std::string(rule.name) + " field: range '" + std::string(range) + "' runs backwards");
      } else {
        high = slash == std::string_view::npos ? low : (rule.names == kDayNames ? 6 : rule.max);
      }
    }
    for (int v = low; v <= high; v += step) out.set(rule.names == kDayNames ? v % 7 : v);
    if (comma == std::string_view::npos) break;
    start = comma + 1;
  }
  return field.front() != '*';
}

const FieldRule kSecond{"second", 0, 59, nullptr};
const FieldRule kMinute{"minute", 0, 59, nullptr};
const FieldRule kHour{"hour", 0, 23, nullptr};
const FieldRule kDayOfMonth{"day-of-month", 1, 31, nullptr};
const FieldRule kMonth{"month", 1, 12, kMonthNames};
const FieldRule kDayOfWeek{"day-of-week", 0, 6, kDayNames};

std::vector<std::string_view> split_fields(std::string_view text) {
  std::vector<std::string_view> fields;
  std::size_t i = 0;
  while (i < text.size()) {
    while (i < text.size() && std::isspace(static_cast<unsigned char>(text[i]))) ++i;
    const std::size_t start = i;
    while (i < text.size() && !std::isspace(static_cast<unsigned char>(text[i]))) ++i;
    if (i > start) fields.push_back(text.substr(start, i - start));
  }
  return fields;
}

// Local wall time to an instant: a skipped local time (spring forward) is the first instant after
// the gap; a repeated one (fall back) is the first of its two instants.
TimePoint to_instant(const TimeZone& zone, date::local_time<std::chrono::seconds> local) {
  const date::local_info info = zone.get_info(local);
  switch (info.result) {
    case date::local_info::unique: return TimePoint{local.time_since_epoch() - info.first.offset};
    case date::local_info::ambiguous: return TimePoint{local.time_since_epoch() - info.first.offset};
    default: return TimePoint{info.second.begin.time_since_epoch()};  // nonexistent
  }
}

constexpr int kMaxScanDays = 366 * 9;  // Feb 29 can be 8 years away (2096 -> 2104)

}  // namespace

std::vector<TimePoint> next_occurrences(const CronSpec& spec, const TimeZone& zone, TimePoint after,
                                        TimePoint anchor, int count) {
  std::vector<TimePoint> out;
  for (int i = 0; i < count; ++i) {
    const auto next = spec.next(after, zone, anchor);
    if (!next) break;
    out.push_back(after = *next);
  }
  return out;
}

std::string format_local_time(TimePoint t, const TimeZone& zone) {
  const date::zoned_time local{&zone, std::chrono::time_point_cast<std::chrono::seconds>(t)};
  return date::format("%FT%T%Ez", local);
}

CronSpec CronSpec::parse(std::string_view text) {
  CronSpec spec;
  spec.text_ = std::string(text);
  const std::vector<std::string_view> fields = split_fields(text);
  if (fields.empty()) refuse_spec(text, "it is empty");
  std::string_view expanded = text;
  static constexpr std::array<std::pair<std::string_view, std::string_view>, 7> kMacros{{
      {"@yearly", "0 0 1 1 *"}, {"@annually", "0 0 1 1 *"}, {"@monthly", "0 0 1 * *"}, {"@weekly", "0 0 * * 0"},
      {"@daily", "0 0 * * *"}, {"@midnight", "0 0 * * *"}, {"@hourly", "0 * * * *"}}};
  if (fields[0].front() == '@') {
    if (fields[0] == "@every") {
      if (fields.size() != 2) refuse_spec(text, "@every takes one duration, e.g. @every 1h");
      spec.kind_ = Kind::every;
      spec.every_ = parse_duration(fields[1]);
      if (spec.every_ < std::chrono::seconds{1}) refuse_spec(text, "@every needs a duration of at least 1s");
      return spec;
    }
    if (fields[0] == "@at") {
      if (fields.size() != 2) refuse_spec(text, "@at takes one time, e.g. @at 2026-12-24T18:00:00Z");
      spec.kind_ = Kind::at;
      spec.at_ = parse_time(fields[1]);
      return spec;
    }
    bool known = false;
    for (const auto& [macro, meaning] : kMacros) {
      if (fields[0] == macro && fields.size() == 1) {
        expanded = meaning;
        known = true;
      }
    }
    if (!known) refuse_spec(text, "unknown macro (use @yearly, @monthly, @weekly, @daily, @hourly, @every D or @at T)");
  }
  std::vector<std::string_view> parts = split_fields(expanded);
  if (parts.size() != 5 && parts.size() != 6) {
    refuse_spec(text, std::to_string(parts.size()) + " fields: use 5 (minute hour day month weekday) or 6 (with seconds)");
  }
  if (parts.size() == 5) {
    spec.seconds_.set(0);
  } else {
    parse_field(text, parts[0], kSecond, spec.seconds_);
    parts.erase(parts.begin());
  }
  parse_field(text, parts[0], kMinute, spec.minutes_);
  parse_field(text, parts[1], kHour, spec.hours_);
  // cronie's test (the first character of the field), so that both read a spec the same way.
  spec.real_time_ = parts[0].front() == '*' || parts[1].front() == '*';
  spec.dom_restricted_ = parse_field(text, parts[2], kDayOfMonth, spec.days_of_month_);
  parse_field(text, parts[3], kMonth, spec.months_);
  spec.dow_restricted_ = parse_field(text, parts[4], kDayOfWeek, spec.days_of_week_);
  // With the weekday unrestricted, some chosen day must exist in some chosen month (Feb has 29).
  if (!(spec.dow_restricted_ && spec.dom_restricted_) && spec.dom_restricted_) {
    static constexpr int kLongest[13] = {0, 31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    bool possible = false;
    for (int m = 1; m <= 12 && !possible; ++m) {
      for (int d = 1; d <= kLongest[m] && !possible; ++d) possible = spec.months_[m] && spec.days_of_month_[d];
    }
    if (!possible) refuse_spec(text, "it can never fire: no chosen day exists in a chosen month");
  }
  return spec;
}

// The search for a field spec's next occurrence.
struct CronScan {
  const CronSpec& spec;

  bool matches_day(date::local_days day) const {
    const date::year_month_day ymd{day};
    if (!spec.months_[static_cast<unsigned>(ymd.month())]) return false;
    const bool dom = spec.days_of_month_[static_cast<unsigned>(ymd.day())];
    const bool dow = spec.days_of_week_[date::weekday{day}.c_encoding()];
    return spec.dom_restricted_ && spec.dow_restricted_ ? (dom || dow) : (dom && dow);
  }

  // The first wall time in [from, before) the fields match, if any, within kMaxScanDays of `from`.
  std::optional<date::local_seconds> first_local_match(date::local_seconds from, date::local_seconds before) const {
    using namespace std::chrono;
    const date::local_days last_day = floor<date::days>(from) + date::days{kMaxScanDays};
    for (date::local_days day = floor<date::days>(from); day <= last_day && day < before; day += date::days{1}) {
      if (!matches_day(day)) continue;
      for (int h = 0; h < 24; ++h) {
        if (!spec.hours_[h] || day + hours{h} + minutes{59} + seconds{59} < from) continue;
        for (int m = 0; m < 60; ++m) {
          if (!spec.minutes_[m] || day + hours{h} + minutes{m} + seconds{59} < from) continue;
          for (int s = 0; s < 60; ++s) {
            const date::local_seconds candidate = day + hours{h} + minutes{m} + seconds{s};
            if (!spec.seconds_[s] || candidate < from) continue;
            return candidate < before ? std::optional(candidate) : std::nullopt;
          }
        }
      }
    }
    return std::nullopt;
  }

  // Every instant whose wall time matches: walk the zone's spans of constant offset, in each of which
  // wall time is the instant plus the offset, so a skipped local time has no instant and a repeated one
  // has two.
  std::optional<TimePoint> next_real_time(TimePoint after, const TimeZone& zone) const {
    using namespace std::chrono;
    const sys_seconds limit = floor<seconds>(after) + date::days{kMaxScanDays};
    sys_seconds t = floor<seconds>(after) + seconds{1};
    while (t < limit) {
      const date::sys_info span = zone.get_info(t);
      const sys_seconds span_end = std::min(span.end, limit);
      const auto wall = [&](sys_seconds instant) { return date::local_seconds{instant.time_since_epoch() + span.offset}; };
      if (const auto match = first_local_match(wall(t), wall(span_end))) {
        return TimePoint{match->time_since_epoch() - span.offset};
      }
      t = span_end;
    }
    return std::nullopt;
  }

  // Wall times, each at most once: a skipped local time fires at the first instant after the gap, a
  // repeated one at the first of its two instants. to_instant is non-decreasing in wall time, so the
  // scan skips whole hours and minutes that end before `after`.
  std::optional<TimePoint> next_fixed_time(TimePoint after, const TimeZone& zone) const {
    using namespace std::chrono;
    const auto local_after = zone.to_local(floor<seconds>(after));
    date::local_days day = floor<date::days>(local_after) - date::days{1};  // the day before: DST can shift
    for (int scanned = 0; scanned < kMaxScanDays; ++scanned, day += date::days{1}) {
      if (!matches_day(day)) continue;
      // The last candidate of the hour is the first thing to check: most are wholly before `after`.
      for (int h = 0; h < 24; ++h) {
        if (!spec.hours_[h] || to_instant(zone, day + hours{h} + minutes{59} + seconds{59}) <= after) continue;
        for (int m = 0; m < 60; ++m) {
          if (!spec.minutes_[m] || to_instant(zone, day + hours{h} + minutes{m} + seconds{59}) <= after) continue;
          for (int s = 0; s < 60; ++s) {
            if (!spec.seconds_[s]) continue;
            const TimePoint candidate = to_instant(zone, day + hours{h} + minutes{m} + seconds{s});
            if (candidate > after) return candidate;
          }
        }
      }
    }
    return std::nullopt;
  }
};

std::optional<TimePoint> CronSpec::next(TimePoint after, const TimeZone& zone, TimePoint anchor) const {
  if (kind_ == Kind::at) return at_ > after ? std::optional(at_) : std::nullopt;
  if (kind_ == Kind::every) {
    // The anchor (the schedule's creation) is not a firing itself: anchor + step is the first.
    const Micros step = every_;
    if (after < anchor) return anchor + step;
    return anchor + ((after - anchor) / step + 1) * step;
  }
  const CronScan scan{*this};
  return real_time_ ? scan.next_real_time(after, zone) : scan.next_fixed_time(after, zone);
}

}  // namespace prescient

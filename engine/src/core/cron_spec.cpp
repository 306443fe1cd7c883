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

constexpr int kMaxScanDays = 366 * 9;  // Feb 29 can be 8 years away (2096 -> 2104)

// What a change of clocks does to a field spec, the `automatic` values resolved by its kind.
struct DstRule {
  bool first = false, last = false;  // the instants of a repeated local time that fire
  enum class Gap { skip, shift, to_its_end } gap = Gap::skip;  // a skipped one; to_its_end: cronie's fixed times

  static DstRule of(DstPolicy policy, bool real_time) {
    DstRule rule;
    switch (policy.repeated) {
      case DstRepeated::automatic:
        rule.first = true;
        rule.last = real_time;
        break;
      case DstRepeated::first: rule.first = true; break;
      case DstRepeated::last: rule.last = true; break;
      case DstRepeated::both: rule.first = rule.last = true; break;
      case DstRepeated::none: break;
    }
    switch (policy.missing) {
      case DstMissing::automatic: rule.gap = real_time ? Gap::skip : Gap::to_its_end; break;
      case DstMissing::shift: rule.gap = Gap::shift; break;
      case DstMissing::skip: rule.gap = Gap::skip; break;
    }
    return rule;
  }
};

}  // namespace

DstPolicy DstPolicy::parse(std::string_view repeated, std::string_view missing) {
  static constexpr std::array<std::pair<std::string_view, DstRepeated>, 5> kRepeated{{
      {"auto", DstRepeated::automatic}, {"first", DstRepeated::first}, {"last", DstRepeated::last},
      {"both", DstRepeated::both}, {"none", DstRepeated::none}}};
  static constexpr std::array<std::pair<std::string_view, DstMissing>, 3> kMissing{{
      {"auto", DstMissing::automatic}, {"shift", DstMissing::shift}, {"skip", DstMissing::skip}}};
  const auto find = [](const auto& names, std::string_view option, std::string_view value, const char* choices) {
    for (const auto& [name, policy] : names) {
      if (name == value) return policy;
    }
    throw InvalidInput(std::string(option) + ": '" + std::string(value.substr(0, 64)) + "' is not a policy (use " +
                       choices + ")");
  };
  return {.repeated = find(kRepeated, "dst_repeated", repeated, "auto, first, last, both or none"),
          .missing = find(kMissing, "dst_missing", missing, "auto, shift or skip")};
}

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

CronSpec CronSpec::parse(std::string_view text, DstPolicy dst) {
  CronSpec spec;
  spec.text_ = std::string(text);
  spec.dst_ = dst;
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

  // The first instant in [begin, end) whose wall time at `offset` matches.
  std::optional<date::sys_seconds> first_match(date::sys_seconds begin, date::sys_seconds end,
                                               std::chrono::seconds offset) const {
    if (begin >= end) return std::nullopt;
    const auto wall = [&](date::sys_seconds instant) { return date::local_seconds{instant.time_since_epoch() + offset}; };
    const auto match = first_local_match(wall(begin), wall(end));
    if (!match) return std::nullopt;
    return date::sys_seconds{match->time_since_epoch() - offset};
  }

  // The first occurrence after `after`: walk the zone's spans of constant offset, in each of which wall time
  // is the instant plus the offset. Where a span begins with the clocks gone back, its first instants repeat
  // wall times the span before had (the `last` of them); where it ends before the clocks go back, its last
  // instants are the `first`. Where it begins with the clocks gone forward, the wall times of the gap have no
  // instant: shifted, each is read at the offset before (the instants of the gap's length from its
  // beginning, in order and apart as their wall times were); to_its_end, any of them fires at the gap's
  // end. Every candidate is an instant, so two that coincide fire once.
  std::optional<TimePoint> next(TimePoint after, const TimeZone& zone, DstRule rule) const {
    using namespace std::chrono;
    const sys_seconds limit = floor<seconds>(after) + date::days{kMaxScanDays};
    sys_seconds t = floor<seconds>(after) + seconds{1};
    std::optional<sys_seconds> best;
    const auto consider = [&](std::optional<sys_seconds> candidate) {
      if (candidate && (!best || *candidate < *best)) best = candidate;
    };
    while (t < limit) {
      const date::sys_info span = zone.get_info(t);
      const sys_seconds end = std::min(span.end, limit);
      const seconds offset = span.offset;
      // A change at the span's beginning matters while its repeated or skipped wall times (at most a day
      // of them) may still be ahead of t.
      seconds back{0}, gap{0}, offset_before{offset};
      if (span.begin > t - date::days{1}) {
        offset_before = zone.get_info(span.begin - seconds{1}).offset;
        back = std::max(offset_before - offset, seconds{0});
        gap = std::max(offset - offset_before, seconds{0});
      }
      const seconds ahead = span.end < limit ? std::max(offset - zone.get_info(span.end).offset, seconds{0})
                                             : seconds{0};
      const sys_seconds unique_from = std::max(t, span.begin + back), unique_to = std::min(end, span.end - ahead);
      if (rule.last) consider(first_match(t, std::min(span.begin + back, end), offset));
      consider(first_match(unique_from, unique_to, offset));
      if (rule.first) consider(first_match(std::max(t, span.end - ahead), end, offset));
      if (gap > seconds{0}) {
        const date::local_seconds gap_from{span.begin.time_since_epoch() + offset_before};
        if (rule.gap == DstRule::Gap::shift) {
          consider(first_match(std::max(t, span.begin), std::min(span.begin + gap, limit), offset_before));
        } else if (rule.gap == DstRule::Gap::to_its_end && span.begin >= t &&
                   first_local_match(gap_from, gap_from + gap)) {
          consider(span.begin);
        }
      }
      // Later spans' candidates are at or after `end`; only a shifted gap longer than its span reaches there.
      if (best && *best < end) break;
      t = end;
    }
    if (!best) return std::nullopt;
    return TimePoint{best->time_since_epoch()};
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
  return CronScan{*this}.next(after, zone, DstRule::of(dst_, real_time_));
}

}  // namespace prescient

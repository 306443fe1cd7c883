#include "prescient/time_text.hpp"

#include <date/date.h>

#include <cstdint>
#include <cstdio>
#include <optional>

#include "prescient/errors.hpp"

namespace prescient {
namespace {

// 9999-12-31T23:59:59Z: the last instant a four-digit year can name.
constexpr std::int64_t kMaxUnixSeconds = 253402300799;

[[noreturn]] void refuse_time(std::string_view text, const std::string& why) {
  throw InvalidInput("invalid time '" + std::string(text) + "': " + why +
                     " (use ISO-8601 with an offset, e.g. 2026-11-21T10:05:00Z, or @<unix seconds>)");
}

class Cursor {
 public:
  explicit Cursor(std::string_view text) : text_(text) {}
  bool done() const { return pos_ == text_.size(); }
  std::optional<char> peek() const { return done() ? std::nullopt : std::optional<char>(text_[pos_]); }
  bool take(char c) {
    if (peek() != c) return false;
    ++pos_;
    return true;
  }
  // Exactly `count` digits, as a number, or nullopt (and nothing consumed).
  std::optional<int> digits(int count) {
    if (text_.size() - pos_ < static_cast<std::size_t>(count)) return std::nullopt;
    int value = 0;
    for (int i = 0; i < count; ++i) {
      const char c = text_[pos_ + i];
      if (c < '0' || c > '9') return std::nullopt;
      value = value * 10 + (c - '0');
    }
    pos_ += count;
    return value;
  }
  std::string_view rest() const { return text_.substr(pos_); }

 private:
  std::string_view text_;
  std::size_t pos_ = 0;
};

int need(std::optional<int> value, std::string_view text, const char* what) {
  if (!value) refuse_time(text, std::string("expected ") + what);
  return *value;
}

TimePoint parse_unix_seconds(std::string_view text) {
  const std::string_view number = text.substr(1);
  if (number.empty()) refuse_time(text, "no seconds after '@'");
  std::int64_t seconds = 0;
  for (const char c : number) {
    if (c < '0' || c > '9') refuse_time(text, "unix seconds must be a non-negative whole number");
    seconds = seconds * 10 + (c - '0');
    if (seconds > kMaxUnixSeconds) refuse_time(text, "beyond the year 9999");
  }
  return TimePoint{std::chrono::seconds{seconds}};
}

// Fractional seconds after the '.', rounded up to whole microseconds.
Micros parse_fraction(Cursor& in, std::string_view text) {
  std::int64_t nanos = 0;
  int count = 0;
  while (in.peek() && *in.peek() >= '0' && *in.peek() <= '9') {
    if (++count > 9) refuse_time(text, "more than 9 fractional digits");
    nanos = nanos * 10 + (*in.peek() - '0');
    in.take(*in.peek());
  }
  if (count == 0) refuse_time(text, "expected digits after '.'");
  for (int i = count; i < 9; ++i) nanos *= 10;
  return Micros{(nanos + 999) / 1000};
}

std::chrono::minutes parse_offset(Cursor& in, std::string_view text) {
  if (in.take('Z') || in.take('z')) return std::chrono::minutes{0};
  int sign = 0;
  if (in.take('+')) sign = 1;
  else if (in.take('-')) sign = -1;
  else if (in.done()) refuse_time(text, "no offset: add Z for UTC or +HH:MM");
  else refuse_time(text, "unexpected '" + std::string(in.rest()) + "' where an offset (Z or +HH:MM) belongs");
  const int hours = need(in.digits(2), text, "two-digit offset hours");
  int minutes = 0;
  if (in.take(':')) minutes = need(in.digits(2), text, "two-digit offset minutes");
  else if (!in.done()) minutes = need(in.digits(2), text, "two-digit offset minutes");
  if (hours > 14 || minutes > 59 || (hours == 14 && minutes > 0)) refuse_time(text, "offset beyond ±14:00");
  return std::chrono::minutes{sign * (hours * 60 + minutes)};
}

}  // namespace

TimePoint parse_time(std::string_view text) {
  if (text.empty()) refuse_time(text, "it is empty");
  if (text.front() == '@') return parse_unix_seconds(text);

  Cursor in(text);
  const int year = need(in.digits(4), text, "a four-digit year");
  if (!in.take('-')) refuse_time(text, "expected '-' after the year");
  const int month = need(in.digits(2), text, "a two-digit month");
  if (!in.take('-')) refuse_time(text, "expected '-' after the month");
  const int day = need(in.digits(2), text, "a two-digit day");
  const date::year_month_day ymd{date::year{year}, date::month(static_cast<unsigned>(month)),
                                 date::day(static_cast<unsigned>(day))};
  if (!ymd.ok()) refuse_time(text, "no such date");
  if (in.done()) refuse_time(text, "no time of day: add e.g. T00:00:00Z");
  if (!(in.take('T') || in.take('t') || in.take(' '))) refuse_time(text, "expected 'T' between date and time");

  const int hour = need(in.digits(2), text, "two-digit hours");
  if (!in.take(':')) refuse_time(text, "expected ':' after the hours");
  const int minute = need(in.digits(2), text, "two-digit minutes");
  int second = 0;
  Micros fraction{0};
  if (in.take(':')) {
    second = need(in.digits(2), text, "two-digit seconds");
    if (in.take('.') || in.take(',')) fraction = parse_fraction(in, text);
  }
  if (hour > 23 || minute > 59 || second > 59) refuse_time(text, "hour, minute or second out of range");
  const std::chrono::minutes offset = parse_offset(in, text);
  if (!in.done()) refuse_time(text, "unexpected '" + std::string(in.rest()) + "' at the end");

  return TimePoint{date::sys_days{ymd}} + std::chrono::hours{hour} + std::chrono::minutes{minute} +
         std::chrono::seconds{second} + fraction - offset;
}

std::string format_time(TimePoint t) {
  // snprintf rather than date::format: no stream and no locale, which made this a hot spot of bulk
  // enqueue (a time per check).
  const auto days = std::chrono::floor<date::days>(t);
  const date::year_month_day ymd{days};
  const date::hh_mm_ss<Micros> clock{t - days};
  const int year = static_cast<int>(ymd.year());
  char text[48];
  int length = std::snprintf(text, sizeof text, "%s%04d-%02u-%02uT%02d:%02d:%02d", year < 0 ? "-" : "",
                             year < 0 ? -year : year, static_cast<unsigned>(ymd.month()),
                             static_cast<unsigned>(ymd.day()), static_cast<int>(clock.hours().count()),
                             static_cast<int>(clock.minutes().count()), static_cast<int>(clock.seconds().count()));
  if (const auto micros = clock.subseconds().count(); micros != 0) {
    length += std::snprintf(text + length, sizeof text - length, ".%06d", static_cast<int>(micros));
    while (text[length - 1] == '0') --length;
  }
  text[length++] = 'Z';
  return std::string(text, length);
}

}  // namespace prescient

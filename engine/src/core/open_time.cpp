#include "prescient/open_time.hpp"

#include <algorithm>

#include "prescient/errors.hpp"
#include "prescient/time_text.hpp"

namespace prescient {

OpenTime::OpenTime(std::string calendar, int version, std::vector<OpenSpan> spans)
    : calendar_(std::move(calendar)), version_(version), spans_(std::move(spans)) {
  for (std::size_t i = 0; i < spans_.size(); ++i) {
    if (spans_[i].opens >= spans_[i].closes || (i > 0 && spans_[i].opens < spans_[i - 1].closes)) {
      throw InvalidInput("calendar " + calendar_ + " version " + std::to_string(version_) + ": its open time at " +
                         format_time(spans_[i].opens) + " is not in order");
    }
  }
}

std::vector<OpenSpan>::const_iterator OpenTime::first_closing_after(TimePoint t) const {
  return std::upper_bound(spans_.begin(), spans_.end(), t,
                          [](TimePoint at, const OpenSpan& span) { return at < span.closes; });
}

bool OpenTime::is_open(TimePoint t) const {
  const auto span = first_closing_after(t);
  return span != spans_.end() && span->opens <= t;
}

std::optional<TimePoint> OpenTime::opening_from(TimePoint t) const {
  const auto span = first_closing_after(t);
  if (span == spans_.end()) return std::nullopt;
  return std::max(t, span->opens);
}

std::optional<TimePoint> OpenTime::after_open_time(TimePoint t, Micros open) const {
  for (auto span = first_closing_after(t); span != spans_.end(); ++span) {
    const TimePoint from = std::max(t, span->opens);
    if (from + open < span->closes) return from + open;
    open -= span->closes - from;
  }
  return std::nullopt;
}

WhenClosed parse_when_closed(std::string_view text) {
  if (text == "skip") return WhenClosed::skip;
  if (text == "move") return WhenClosed::move;
  throw InvalidInput("when_closed: '" + std::string(text.substr(0, 64)) + "' is not a policy (use skip or move)");
}

}  // namespace prescient

#pragma once
// Time inside prescient: UTC, microsecond precision (what PostgreSQL's timestamptz stores).
#include <chrono>
#include <cstdint>

namespace prescient {

using Micros = std::chrono::microseconds;
using TimePoint = std::chrono::sys_time<Micros>;

inline std::int64_t to_unix_micros(TimePoint t) { return t.time_since_epoch().count(); }
inline TimePoint from_unix_micros(std::int64_t us) { return TimePoint{Micros{us}}; }

}  // namespace prescient

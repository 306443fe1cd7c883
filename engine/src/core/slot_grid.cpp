#include "prescient/slot_grid.hpp"

#include <string>

#include "core/fnv.hpp"
#include "prescient/duration.hpp"
#include "prescient/errors.hpp"

namespace prescient {

using namespace prescient::core;
namespace {

constexpr std::int64_t kDaySeconds = 86400;

// Division rounding towards minus infinity, so times before the epoch land in the right slot.
std::int64_t floor_div(std::int64_t a, std::int64_t b) {
  const std::int64_t q = a / b;
  return (a % b != 0 && (a < 0) != (b < 0)) ? q - 1 : q;
}

}  // namespace

SlotGrid::SlotGrid(std::chrono::seconds resolution) : resolution_(resolution), resolution_us_(resolution) {
  const std::int64_t r = resolution.count();
  if (r < 1 || r > kDaySeconds) {
    throw InvalidInput("invalid slot resolution " + format_duration(resolution) +
                       ": it must be between 1s and 1d");
  }
  if (kDaySeconds % r != 0) {
    throw InvalidInput("invalid slot resolution " + format_duration(resolution) +
                       ": it must divide a day evenly (e.g. 1s, 5s, 1m, 15m, 1h, 1d) so slots align with midnight UTC");
  }
}

std::int64_t SlotGrid::index(TimePoint t) const {
  return floor_div(to_unix_micros(t), resolution_us_.count());
}

TimePoint SlotGrid::floor(TimePoint t) const { return from_unix_micros(index(t) * resolution_us_.count()); }

TimePoint SlotGrid::round_up(TimePoint t) const {
  const TimePoint below = floor(t);
  return below == t ? t : below + resolution_us_;
}

std::chrono::seconds SlotGrid::spread_offset(std::int64_t id, std::chrono::seconds window) const {
  const std::int64_t slots = window / resolution_;
  if (slots < 2 || id < 0) return std::chrono::seconds{0};
  return resolution_ * (id % slots);
}

std::chrono::seconds SlotGrid::jitter_offset(std::string_view schedule_id, TimePoint occurrence,
                                             std::chrono::seconds jitter) const {
  const std::int64_t slots = jitter / resolution_;
  if (slots < 2) return std::chrono::seconds{0};
  std::uint64_t h = fnv1a(std::string(schedule_id) + ":" + std::to_string(to_unix_micros(occurrence)));
  // FNV-1a's low bits follow its last bytes closely: mix them before taking a remainder (murmur3's
  // finalizer).
  h ^= h >> 33;
  h *= 0xff51afd7ed558ccdULL;
  h ^= h >> 33;
  return resolution_ * static_cast<std::int64_t>(h % static_cast<std::uint64_t>(slots));
}

int SlotGrid::shard_of(TimePoint t, int shard_count) const {
  const std::int64_t m = index(t) % shard_count;
  return static_cast<int>(m < 0 ? m + shard_count : m);
}

}  // namespace prescient

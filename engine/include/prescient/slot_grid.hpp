#pragma once
// The slot grid: time cut into equal slots of resolution R, aligned to the Unix epoch in UTC.
// Checks are stored on the grid (rounded up) and fired on exact slot boundaries.
#include <chrono>
#include <cstdint>
#include <string_view>

#include "prescient/time.hpp"

namespace prescient {

class SlotGrid {
 public:
  // Throws InvalidInput unless 1s <= resolution <= 1d and the resolution divides a day evenly,
  // so slots line up with midnight UTC every day.
  explicit SlotGrid(std::chrono::seconds resolution);

  std::chrono::seconds resolution() const { return resolution_; }

  // The slot containing t: the last boundary at or before t.
  TimePoint floor(TimePoint t) const;
  // The first boundary at or after t: a time on the grid stays, anything else moves later, never earlier.
  TimePoint round_up(TimePoint t) const;
  bool on_grid(TimePoint t) const { return floor(t) == t; }
  // Slots counted from the epoch: index(floor(t)) == floor(t) / R.
  std::int64_t index(TimePoint t) const;
  // Which of shard_count shards owns the slot containing t: index mod shard_count.
  // REQUIRES: shard_count >= 1.
  int shard_of(TimePoint t, int shard_count) const;
  // Where check `id` with a window fires relative to its own slot (docs/flow-control.md, "Spreading a
  // herd"): one of the window's whole slots, id mod their number, so that checks made one after another
  // take them in turn. Zero for a window shorter than two slots. The same rule as the SQL API's
  // prescient.spread_slot, which stores checks and schedules at their place.
  std::chrono::seconds spread_offset(std::int64_t id, std::chrono::seconds window) const;
  // Where an occurrence of a schedule with a jitter fires after it: one of the jitter's whole slots,
  // picked by a hash of the schedule's id and the occurrence, so each occurrence has its own, the same
  // every time it is computed. Zero for a jitter shorter than two slots.
  std::chrono::seconds jitter_offset(std::string_view schedule_id, TimePoint occurrence,
                                     std::chrono::seconds jitter) const;

 private:
  std::chrono::seconds resolution_;
  Micros resolution_us_;
};

}  // namespace prescient

#pragma once
// --shard I/N: runner I of N owns the slots whose index mod N is I.
#include <string>
#include <string_view>

#include "prescient/slot_grid.hpp"

namespace prescient {

struct Shard {
  int index = 0;
  int count = 1;

  bool owns(const SlotGrid& grid, TimePoint slot) const { return grid.shard_of(slot, count) == index; }
  std::string text() const { return std::to_string(index) + "/" + std::to_string(count); }
};

// "0/2", "1/2", "0/1". Throws InvalidInput naming the text unless 0 <= I < N <= 1024.
Shard parse_shard(std::string_view text);

}  // namespace prescient

// Uses the installed library: the slot grid and the parsers, no database needed.
#include <iostream>

#include "prescient/duration.hpp"
#include "prescient/slot_grid.hpp"
#include "prescient/time_text.hpp"
#include "prescient/version.hpp"

int main() {
  const prescient::SlotGrid grid(prescient::parse_duration("15m"));
  const auto slot = grid.floor(prescient::parse_time("2026-11-21T10:05:00Z"));
  std::cout << "prescient " << prescient::kVersion << ": " << prescient::format_time(slot) << "\n";
  return prescient::format_time(slot) == "2026-11-21T10:00:00Z" ? 0 : 1;
}

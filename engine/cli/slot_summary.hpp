#pragma once
// The one-line summary run-slot and sweep print (text, or JSON), and log.
#include "prescient/slot_runner.hpp"

namespace prescient::cli {

void print_slot_summary(const SlotReport& report, const RunnerOptions& options, bool json);

}  // namespace prescient::cli

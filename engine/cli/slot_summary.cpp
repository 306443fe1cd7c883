#include "slot_summary.hpp"

#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include <cstdio>
#include <iostream>

#include "prescient/time_text.hpp"

namespace prescient::cli {

void print_slot_summary(const SlotReport& r, const RunnerOptions& options, bool json) {
  if (json) {
    std::cout << nlohmann::json{{"slot", format_time(r.slot)},
                                {"shard", options.shard.text()},
                                {"owned", r.owned},
                                {"runner_id", options.runner_id},
                                {"claimed", r.claimed},
                                {"done", r.done},
                                {"rescheduled", r.rescheduled},
                                {"retried", r.retried},
                                {"failed", r.failed},
                                {"guarded", r.guarded},
                                {"events", r.events},
                                {"shifted", r.shifted},
                                {"seconds", r.seconds}}
              << "\n";
    return;
  }
  if (!r.owned) {
    std::cout << "slot " << format_time(r.slot) << ": not owned by shard " << options.shard.text() << "\n";
    return;
  }
  char seconds[32];
  std::snprintf(seconds, sizeof seconds, "%.3f", r.seconds);
  std::cout << "slot " << format_time(r.slot) << ": claimed " << r.claimed << ", done " << r.done << ", rescheduled "
            << r.rescheduled << ", retried " << r.retried << ", failed " << r.failed << ", guarded " << r.guarded
            << ", events " << r.events << (r.shifted ? ", shifted " + std::to_string(r.shifted) : "") << " in "
            << seconds << "s\n";
}

}  // namespace prescient::cli

#include <nlohmann/json.hpp>
#include <soci/soci.h>

#include <iostream>

#include "check_options.hpp"
#include "prescient/clock.hpp"
#include "prescient/checks.hpp"
#include "prescient/settings.hpp"
#include "prescient/time_text.hpp"

namespace prescient::cli {

Command retry_command() {
  return {
      .name = "retry",
      .summary = "Put a `failed` check from the history back as pending, at the next slot, attempts reset.",
      .usage = "retry --id N [--json]",
      .add_options =
          [](po::options_description& desc) {
            desc.add_options()
                ("id", po::value<std::int64_t>()->value_name("N")->required(), "the failed check's id")
                ("json", "print the pending check as one JSON object");
          },
      .run =
          [](const Invocation& in) {
            auto db = in.connect_migrated();
            const SlotGrid grid = read_settings(*db).grid();
            const TimePoint next = grid.floor(SystemClock().now()) + grid.resolution();
            const PendingCheck check = Checks(*db).revive_failed(in.get<std::int64_t>("id"), next);
            if (in.json()) std::cout << to_json(check) << "\n";
            else std::cout << "pending again id=" << check.id << " next_check_at=" << format_time(check.next_check_at) << "\n";
            return kOk;
          },
  };
}

}  // namespace prescient::cli

#include <nlohmann/json.hpp>
#include <soci/soci.h>

#include <iostream>

#include "command.hpp"
#include "prescient/duration.hpp"
#include "prescient/settings.hpp"

namespace prescient::cli {

Command settings_command() {
  return {
      .name = "settings",
      .summary = "Show the database-wide settings: slot resolution and guard defaults.",
      .usage = "settings [--json]",
      .add_options = [](po::options_description& desc) { desc.add_options()("json", "print one JSON object"); },
      .run =
          [](const Invocation& in) {
            auto db = in.connect_migrated();
            const Settings s = read_settings(*db);
            if (in.json()) {
              std::cout << nlohmann::json{{"slot", format_duration(s.slot)},
                                          {"slot_seconds", s.slot.count()},
                                          {"max_horizon", format_duration(s.max_horizon)},
                                          {"max_horizon_seconds", s.max_horizon.count()},
                                          {"max_checks", s.max_checks},
                                          {"max_attempts", s.max_attempts},
                                          {"job_timeout", format_duration(s.job_timeout)},
                                          {"job_timeout_seconds", s.job_timeout.count()}}
                        << "\n";
              return kOk;
            }
            std::cout << "slot          " << format_duration(s.slot) << "\n"
                      << "max_horizon   " << format_duration(s.max_horizon) << "\n"
                      << "max_checks    " << s.max_checks << "\n"
                      << "max_attempts  " << s.max_attempts << "\n"
                      << "job_timeout   " << format_duration(s.job_timeout) << "\n";
            return kOk;
          },
  };
}

}  // namespace prescient::cli

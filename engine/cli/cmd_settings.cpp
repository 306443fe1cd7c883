#include <nlohmann/json.hpp>
#include <soci/soci.h>

#include <iostream>

#include "command.hpp"
#include "prescient/duration.hpp"
#include "prescient/retention.hpp"
#include "prescient/settings.hpp"

namespace prescient::cli {
namespace {

nlohmann::json seconds_or_null(const std::optional<std::chrono::seconds>& retention) {
  return retention ? nlohmann::json(retention->count()) : nlohmann::json(nullptr);
}

// A retention as `prescient settings` shows it: the duration, or that nothing is removed.
std::string kept_or(const std::optional<std::chrono::seconds>& retention) {
  return retention ? format_duration(*retention) : "keep (not set)";
}

}  // namespace

Command settings_command() {
  return {
      .name = "settings",
      .summary = "Show the database-wide settings: slot resolution, guard defaults and retention.",
      .usage = "settings [--json]",
      .add_options = [](po::options_description& desc) { desc.add_options()("json", "print one JSON object"); },
      .run =
          [](const Invocation& in) {
            auto db = in.connect_migrated();
            const Settings s = read_settings(*db);
            const Retention r = read_retention(*db);
            if (in.json()) {
              std::cout << nlohmann::json{{"slot", format_duration(s.slot)},
                                          {"slot_seconds", s.slot.count()},
                                          {"max_horizon", format_duration(s.max_horizon)},
                                          {"max_horizon_seconds", s.max_horizon.count()},
                                          {"max_checks", s.max_checks},
                                          {"max_attempts", s.max_attempts},
                                          {"job_timeout", format_duration(s.job_timeout)},
                                          {"job_timeout_seconds", s.job_timeout.count()},
                                          {"history_retention_seconds", seconds_or_null(r.history)},
                                          {"dead_letter_retention_seconds", seconds_or_null(r.dead_letters)},
                                          {"event_retention_seconds", seconds_or_null(r.events)}}
                        << "\n";
              return kOk;
            }
            std::cout << "slot                   " << format_duration(s.slot) << "\n"
                      << "max_horizon            " << format_duration(s.max_horizon) << "\n"
                      << "max_checks             " << s.max_checks << "\n"
                      << "max_attempts           " << s.max_attempts << "\n"
                      << "job_timeout            " << format_duration(s.job_timeout) << "\n"
                      << "history_retention      " << kept_or(r.history) << "\n"
                      << "dead_letter_retention  " << kept_or(r.dead_letters) << "\n"
                      << "event_retention        " << kept_or(r.events) << "\n";
            return kOk;
          },
  };
}

}  // namespace prescient::cli

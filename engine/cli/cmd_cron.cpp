#include <date/tz.h>
#include <nlohmann/json.hpp>

#include <iostream>

#include "check_options.hpp"
#include "prescient/clock.hpp"
#include "prescient/cron_spec.hpp"
#include "prescient/errors.hpp"
#include "prescient/time_text.hpp"

namespace prescient::cli {

// `prescient cron next`: the pure part of recurring schedules; the schedule table's commands join it
// with the recurring-schedules issue.
Command cron_command() {
  return {
      .name = "cron",
      .summary = "Recurring schedules. Today: `cron next`, which prints when a spec fires (no database).",
      .usage = "cron next --spec SPEC [--tz ZONE] [--from TIME] [--count N] [--json]",
      .add_options =
          [](po::options_description& desc) {
            desc.add_options()
                ("action", po::value<std::string>()->value_name("next"), "what to do: next")
                ("spec", po::value<std::string>()->value_name("SPEC"),
                 "5 or 6 fields (with seconds), @hourly/@daily/@weekly/@monthly/@yearly, @every DURATION, @at TIME")
                ("tz", po::value<std::string>()->value_name("ZONE")->default_value("UTC"), "IANA time zone")
                ("from", po::value<std::string>()->value_name("TIME"),
                 "list firings after this time (default: now); also the anchor of @every")
                ("count", po::value<int>()->value_name("N")->default_value(5), "how many firings (1-1000)")
                ("json", "print a JSON array of times");
          },
      .run =
          [](const Invocation& in) {
            if (!in.has("action") || in.get<std::string>("action") != "next") {
              throw InvalidInput("use `prescient cron next --spec SPEC` (the other cron actions are not there yet)");
            }
            if (!in.has("spec")) throw InvalidInput("missing --spec");
            const int count = in.get<int>("count");
            if (count < 1 || count > 1000) throw InvalidInput("invalid --count " + std::to_string(count) + ": use 1-1000");
            const CronSpec spec = CronSpec::parse(in.get<std::string>("spec"));
            const date::time_zone& zone = find_time_zone(in.get<std::string>("tz"));
            const TimePoint from = in.has("from") ? parse_time(in.get<std::string>("from")) : SystemClock().now();
            nlohmann::json out = nlohmann::json::array();
            TimePoint at = from;
            for (int i = 0; i < count; ++i) {
              const auto next = spec.next(at, zone, from);
              if (!next) break;
              at = *next;
              if (in.json()) {
                out.push_back(format_time(at));
              } else {
                const auto local = date::make_zoned(&zone, std::chrono::floor<std::chrono::seconds>(at));
                std::cout << format_time(at) << "  " << date::format("%F %T %Z", local) << "\n";
              }
            }
            if (in.json()) std::cout << out << "\n";
            return kOk;
          },
  };
}

}  // namespace prescient::cli

#include <nlohmann/json.hpp>
#include <soci/soci.h>

#include <iostream>

#include "check_options.hpp"
#include "prescient/clock.hpp"
#include "prescient/duration.hpp"
#include "prescient/errors.hpp"
#include "prescient/retention.hpp"
#include "prescient/time_text.hpp"

namespace prescient::cli {

Command purge_command() {
  return {
      .name = "purge",
      .summary = "Retention: remove history rows and/or events older than a duration (whole months of history at once).",
      .usage = "purge --older-than DURATION [--history] [--events] [--json]",
      .add_options =
          [](po::options_description& desc) {
            desc.add_options()
                ("older-than", po::value<std::string>()->value_name("DURATION")->required(),
                 "delete what finished (history) or was emitted (events) longer ago than this")
                ("history", "purge job_history")
                ("events", "purge the event outbox")
                ("json", "print one JSON object");
          },
      .run =
          [](const Invocation& in) {
            const auto age = in.parsed("older-than", parse_duration);
            if (!in.has("history") && !in.has("events")) throw InvalidInput("say what to purge: --history and/or --events");
            auto db = in.connect_migrated();
            const TimePoint cutoff = SystemClock().now() - age;
            constexpr int kBatch = 10000;
            const HistoryPurge history = in.has("history") ? purge_history(*db, cutoff, kBatch) : HistoryPurge{};
            const std::int64_t events = in.has("events") ? purge_events(*db, cutoff, kBatch) : 0;
            if (in.json()) {
              std::cout << nlohmann::json{{"history", history.rows}, {"history_months_dropped", history.months_dropped},
                                          {"runs", history.runs}, {"deferrals", history.deferrals}, {"events", events},
                                          {"before", format_time(cutoff)}}
                        << "\n";
            } else {
              std::cout << "purged " << history.rows << " history rows (" << history.months_dropped
                        << " whole months dropped), " << history.runs << " runs, " << history.deferrals
                        << " deferrals and " << events
                        << " events from before " << format_time(cutoff) << "\n";
            }
            return kOk;
          },
  };
}

}  // namespace prescient::cli

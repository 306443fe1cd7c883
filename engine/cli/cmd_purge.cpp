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
namespace {

constexpr int kBatch = 10000;

void print(const Invocation& in, const RetentionRun& run, const std::optional<TimePoint>& cutoff) {
  if (in.json()) {
    nlohmann::json out{{"history", run.history.rows}, {"history_months_dropped", run.history.months_dropped},
                       {"runs", run.history.runs},   {"deferrals", run.history.deferrals},
                       {"deferral_counts", run.history.flow_figures},
                       {"dead_letters", run.dead_letters}, {"events", run.events},
                       {"idle_flow_rows", run.idle_flow_rows}};
    if (cutoff) out["before"] = format_time(*cutoff);
    std::cout << out << "\n";
    return;
  }
  std::cout << "purged " << run.history.rows << " history rows (" << run.history.months_dropped
            << " whole months dropped), " << run.history.runs << " runs, " << run.history.deferrals << " deferrals ("
            << run.history.flow_figures << " counts), " << run.dead_letters << " dead letters, " << run.events
            << " events and " << run.idle_flow_rows << " idle flow control rows";
  if (cutoff) {
    std::cout << " from before " << format_time(*cutoff) << "\n";
  } else {
    std::cout << " past the retention of prescient.settings\n";
  }
}

}  // namespace

Command purge_command() {
  return {
      .name = "purge",
      .summary = "Retention: remove old history, dead letters and/or events (whole months of history at once), or as "
                 "the settings say.",
      .usage = "purge --older-than DURATION [--history] [--dead-letters] [--events] [--json]\n"
               "       prescient purge --retention [--json]",
      .add_options =
          [](po::options_description& desc) {
            desc.add_options()
                ("older-than", po::value<std::string>()->value_name("DURATION"),
                 "delete what finished (history, dead letters) or was emitted (events) longer ago than this")
                ("history", "purge job_history, the checks' timelines, deferrals and their counts (dead letters "
                            "stay)")
                ("dead-letters", "purge dead letters (failed, never retried)")
                ("events", "purge the event outbox")
                ("retention", "apply the retention set in prescient.settings, as the owner's daemon does hourly, "
                              "and forget flow control's rows that hold nothing")
                ("json", "print one JSON object");
          },
      .run =
          [](const Invocation& in) {
            const bool some_table = in.has("history") || in.has("dead-letters") || in.has("events");
            if (in.has("retention")) {
              if (in.has("older-than") || some_table) {
                throw InvalidInput("--retention takes its cut-offs from prescient.settings: no --older-than, "
                                   "--history, --dead-letters or --events with it");
              }
              auto db = in.connect_migrated();
              print(in, apply_retention(*db, SystemClock().now(), kBatch), std::nullopt);
              return kOk;
            }
            if (!in.has("older-than")) throw InvalidInput("say how old: --older-than DURATION, or --retention");
            const auto age = in.parsed("older-than", parse_duration);
            if (!some_table) throw InvalidInput("say what to purge: --history, --dead-letters and/or --events");
            auto db = in.connect_migrated();
            const TimePoint cutoff = SystemClock().now() - age;
            RetentionRun run;
            if (in.has("dead-letters")) run.dead_letters = purge_dead_letters(*db, cutoff, kBatch);
            if (in.has("history")) run.history = purge_history(*db, cutoff, kBatch);
            if (in.has("events")) run.events = purge_events(*db, cutoff, kBatch);
            print(in, run, cutoff);
            return kOk;
          },
  };
}

}  // namespace prescient::cli

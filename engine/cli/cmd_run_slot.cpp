#include <nlohmann/json.hpp>
#include <soci/soci.h>
#include <spdlog/spdlog.h>

#include <iostream>

#include "check_options.hpp"
#include "prescient/clock.hpp"
#include "prescient/time_text.hpp"
#include "runner_options.hpp"
#include "slot_summary.hpp"

namespace prescient::cli {

Command run_slot_command() {
  return {
      .name = "run-slot",
      .summary = "Fire one slot (default: the current one) and exit: the cron-triggered runner.",
      .usage = "run-slot [--slot TIME] [--shard I/N] [--workers N] [--batch N] [--runner-id ID]\n                         [--batch-deadline DURATION] [--plugins DIR] [--commands DIR] [--http-targets FILE]\n                         [--prepared-statements MODE] [--max-clock-offset DURATION] [--json]",
      .add_options =
          [](po::options_description& desc) {
            desc.add_options()("slot", po::value<std::string>()->value_name("TIME"),
                               "the slot to fire: on the grid and not later than the current slot "
                               "(default: the current slot)");
            add_runner_options(desc);
            desc.add_options()("json", "print the summary as one JSON object");
          },
      .run =
          [](const Invocation& in) {
            const RunnerOptions options = runner_options_of(in);
            const auto requested = optional_time_flag(in, "slot");
            // Refuses a database without the current schema before firing anything; declares the classes loaded.
            declare_loaded_classes(*in.connect_migrated(), known_job_classes(in), options);
            const SystemClock system_clock;
            ServerClock clock(system_clock);
            SlotRunner runner(options, known_job_classes(in), clock);
            put_on_server_clock(runner, clock, options);
            ensure_history_partitions(runner);
            const TimePoint slot = requested ? *requested : runner.settings().grid().floor(clock.now());
            const SlotReport report = runner.run_slot(slot);
            print_slot_summary(report, options, in.json());
            return kOk;
          },
  };
}

}  // namespace prescient::cli

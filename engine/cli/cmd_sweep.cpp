#include <soci/soci.h>
#include <unistd.h>

#include <iostream>

#include "check_options.hpp"
#include "prescient/clock.hpp"
#include "prescient/time_text.hpp"
#include "runner_options.hpp"
#include "slot_summary.hpp"

namespace prescient::cli {

Command sweep_command() {
  return {
      .name = "sweep",
      .summary = "Catch up checks of missed slots (before --until, oldest first): run them or shift them.",
      .usage = "sweep [--until TIME] [--mode run|shift] [--shard I/N] [--workers N] [--batch N] [--runner-id ID]\n                         [--batch-deadline DURATION] [--plugins DIR] [--commands DIR] [--http-targets FILE]\n                         [--prepared-statements MODE] [--max-clock-offset DURATION] [--json]",
      .add_options =
          [](po::options_description& desc) {
            desc.add_options()
                ("until", po::value<std::string>()->value_name("TIME"),
                 "sweep checks due strictly before this slot (default: the current slot)")
                ("mode", po::value<std::string>()->value_name("MODE")->default_value("run"),
                 "run: fire them now; shift: move them to the next slot boundary without running them");
            add_runner_options(desc);
            desc.add_options()("json", "print the summary as one JSON object");
          },
      .run =
          [](const Invocation& in) {
            const RunnerOptions options = runner_options_of(in);
            const SweepMode mode = parse_sweep_mode(in.get<std::string>("mode"));
            const auto requested = optional_time_flag(in, "until");
            declare_loaded_classes(*in.connect_migrated(), known_job_classes(in), options);
            const SystemClock system_clock;
            ServerClock clock(system_clock);
            SlotRunner runner(options, known_job_classes(in), clock);
            put_on_server_clock(runner, clock, options);
            ensure_history_partitions(runner);
            const TimePoint until = requested ? *requested : runner.settings().grid().floor(clock.now());
            const bool terminal = ::isatty(STDERR_FILENO) != 0;
            const SlotReport report = runner.sweep(until, mode, [&](const SlotReport& slot) {
              if (terminal) std::cerr << "\rswept slot " << format_time(slot.slot) << std::flush;
            });
            if (terminal) std::cerr << "\n";
            print_slot_summary(report, options, in.json());
            return kOk;
          },
  };
}

}  // namespace prescient::cli

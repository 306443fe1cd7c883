#include <signal.h>
#include <soci/soci.h>
#include <spdlog/spdlog.h>

#include <thread>

#include "check_options.hpp"
#include "prescient/daemon.hpp"
#include "runner_options.hpp"

namespace prescient::cli {

Command daemon_command() {
  return {
      .name = "daemon",
      .summary = "Run continuously: sweep missed slots, then fire every slot at its boundary. SIGTERM/SIGINT stop it.",
      .usage = "daemon [--shard I/N] [--workers N] [--batch N] [--runner-id ID] [--plugins DIR] [--commands DIR]",
      .add_options = [](po::options_description& desc) { add_runner_options(desc); },
      .run =
          [](const Invocation& in) {
            const RunnerOptions options = runner_options_of(in);
            const Registry& registry = known_job_classes(in);
            in.connect_migrated();
            // Signals go to one thread that asks the daemon to stop; the others never see them.
            sigset_t signals;
            sigemptyset(&signals);
            sigaddset(&signals, SIGTERM);
            sigaddset(&signals, SIGINT);
            pthread_sigmask(SIG_BLOCK, &signals, nullptr);
            const SystemClock clock;
            SystemWaiter waiter(clock);
            std::thread signal_thread([&] {
              int received = 0;
              sigwait(&signals, &received);
              spdlog::info("runner {}: received {}, finishing the batch in hand", options.runner_id,
                           received == SIGTERM ? "SIGTERM" : "SIGINT");
              waiter.stop();
            });
            Daemon daemon(options, registry, clock, waiter);
            try {
              daemon.run();
            } catch (...) {
              pthread_kill(signal_thread.native_handle(), SIGTERM);
              signal_thread.join();
              throw;
            }
            signal_thread.join();
            return kOk;
          },
  };
}

}  // namespace prescient::cli

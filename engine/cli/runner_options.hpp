#pragma once
// Flags shared by the commands that fire checks (run-slot, sweep, daemon, jobs).
#include "command.hpp"
#include "prescient/registry.hpp"
#include "prescient/slot_runner.hpp"

namespace prescient::cli {

void add_runner_options(po::options_description& desc);
RunnerOptions runner_options_of(const Invocation& in);
// "<hostname>:<pid>": unique enough to tell runners apart in the history.
std::string default_runner_id();
// The history partitions ahead of time, for the one-shot commands (run-slot, sweep): a failure is a
// warning, never a reason not to fire (settlements of a month without one go to the default partition).
void ensure_history_partitions(SlotRunner& runner);
// For the one-shot commands (run-slot, sweep): measures the clock's offset from the server's once and
// adopts it (refusing past --max-clock-offset), so the runner fires on the server's clock.
void put_on_server_clock(SlotRunner& runner, ServerClock& clock, const RunnerOptions& options);
// Every runner (daemon, run-slot, sweep) at its start: declares the classes it loads, built-ins and plugins,
// in the database's registry (prescient.job_class), by its runner id, so that enqueue knows them.
void declare_loaded_classes(soci::session& db, const Registry& registry, const RunnerOptions& options);

}  // namespace prescient::cli

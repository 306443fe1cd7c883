#include <spdlog/spdlog.h>

#include <cstdio>
#include <cstdlib>
#include <iostream>

#include "command.hpp"
#include "prescient/slot_runner.hpp"

int main(int argc, char** argv) {
  const int code = prescient::cli::run_cli(argc, argv);
  if (const int stuck = prescient::abandoned_jobs_running(); stuck > 0) {
    // Jobs that never returned still run on their threads. Returning from main would destroy what they
    // may still touch (loggers, plugin state, statics) under them: leave without running destructors.
    spdlog::warn("exiting with {} job(s) that did not return still running; they end with the process", stuck);
    spdlog::default_logger()->flush();
    std::cout.flush();
    std::fflush(nullptr);
    std::_Exit(code);
  }
  return code;
}

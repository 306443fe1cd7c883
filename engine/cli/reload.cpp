#include "reload.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>

#include "option_sources.hpp"
#include "prescient/log.hpp"

namespace prescient::cli {

void reload_options(const Invocation& running) {
  const std::string command = running.command().name;
  try {
    const Invocation now = running.reread();
    const std::string level = global_value(now, "log-level");
    try {
      set_log_level(level);
    } catch (const InvalidInput& e) {
      now.refuse("log-level", e.what());
    }
    const auto before = shown_options(running), after = shown_options(now);
    std::string changed;
    for (const auto& option : after) {
      if (option.first != "log-level" && std::find(before.begin(), before.end(), option) == before.end()) {
        changed += (changed.empty() ? "" : ", ") + option.first;
      }
    }
    for (const auto& option : before) {
      const auto same_name = [&](const auto& other) { return other.first == option.first; };
      if (std::find_if(after.begin(), after.end(), same_name) == after.end()) {
        changed += (changed.empty() ? "" : ", ") + option.first;
      }
    }
    spdlog::info("{}: reloaded on SIGHUP: log level {} (from {})", command, level, now.origin("log-level").describe());
    if (!changed.empty()) spdlog::warn("{}: changed, and applied only at a restart: {}", command, changed);
  } catch (const std::exception& e) {
    spdlog::error("{}: reload on SIGHUP refused, nothing changed: {}", command, e.what());
  }
}

}  // namespace prescient::cli

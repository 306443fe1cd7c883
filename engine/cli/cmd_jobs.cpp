#include <nlohmann/json.hpp>

#include <iostream>

#include "check_options.hpp"
#include "prescient/duration.hpp"

namespace prescient::cli {

Command jobs_command() {
  return {
      .name = "jobs",
      .summary = "List the registered job classes and their policies.",
      .usage = "jobs [--plugins DIR] [--json]",
      .add_options =
          [](po::options_description& desc) {
            add_plugins_option(desc);
            desc.add_options()("json", "print a JSON array");
          },
      .run =
          [](const Invocation& in) {
            const Registry& registry = known_job_classes(in);
            const auto setting = [](const auto& value) {
              return value ? nlohmann::json(*value) : nlohmann::json("setting");
            };
            nlohmann::json out = nlohmann::json::array();
            std::vector<std::vector<std::string>> rows;
            for (const std::string& name : registry.names()) {
              const JobPolicy p = registry.create(name)->policy();
              const auto timeout = p.timeout ? std::optional(format_duration(*p.timeout)) : std::nullopt;
              out.push_back({{"name", name}, {"origin", registry.origin_of(name)}, {"max_checks", setting(p.max_checks)},
                             {"max_attempts", setting(p.max_attempts)}, {"timeout", setting(timeout)},
                             {"long_running", p.long_running}});
              const auto text = [](const auto& v) { return v ? nlohmann::json(*v).dump() : std::string("setting"); };
              rows.push_back({name, registry.origin_of(name), text(p.max_checks), text(p.max_attempts),
                              timeout.value_or("setting"), p.long_running ? "yes" : "no"});
            }
            if (in.json()) std::cout << out << "\n";
            else print_table({"CLASS", "ORIGIN", "MAX_CHECKS", "MAX_ATTEMPTS", "TIMEOUT", "LONG_RUNNING"}, rows);
            return kOk;
          },
  };
}

}  // namespace prescient::cli

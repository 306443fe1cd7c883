#include <nlohmann/json.hpp>

#include <iostream>

#include "check_options.hpp"
#include "command.hpp"
#include "option_sources.hpp"

namespace prescient::cli {

int show_config(const Invocation& in, bool json) {
  struct Shown {
    std::string option, value, from;
  };
  std::vector<Shown> shown;
  for (const auto& [name, value] : shown_options(in)) shown.push_back({name, value, in.origin(name).describe()});
  for (const GlobalOption& g : global_options()) {
    if (!in.has(g.name) && *g.fallback && std::string(g.name) != "config") shown.push_back({g.name, g.fallback, "default"});
  }
  const auto& file = in.config_path();
  if (json) {
    nlohmann::json options = nlohmann::json::array();
    for (const Shown& s : shown) options.push_back({{"option", s.option}, {"value", s.value}, {"from", s.from}});
    std::cout << nlohmann::json{{"command", in.command().name},
                                {"config_file", file ? nlohmann::json(*file) : nlohmann::json()},
                                {"options", options}}
              << "\n";
    return kOk;
  }
  std::cout << "config file: " << (file ? *file : "none") << "\n";
  std::vector<std::vector<std::string>> rows;
  for (const Shown& s : shown) rows.push_back({s.option, s.value, s.from});
  print_table({"option", "value", "from"}, rows);
  return kOk;
}

Command config_command() {
  return {
      .name = "config",
      .summary = "Show the options a command runs with and where each comes from (a flag, a variable, a line of "
                 "the config file, a default), after checking the config file.",
      .usage = "config [COMMAND [OPTIONS]] [--json]",
      .add_options = [](po::options_description& desc) {
        desc.add_options()("json", "print one JSON object");
      },
      .run = [](const Invocation& in) { return show_config(in, in.json()); },
  };
}

}  // namespace prescient::cli

#pragma once
// Where a command's options come from, in order of precedence: its flags, then the environment
// variables that stand in for some of them, then the configuration file (--config, PRESCIENT_CONFIG, else
// the default file when it exists), then the options' defaults. A flag-only option (a switch such as
// --json) is set in a variable or the file by a yes or no.
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "command.hpp"

namespace prescient::cli {

// The environment variable that stands in for an option, or nullptr ("db" -> "PRESCIENT_DATABASE_URL").
const char* variable_of(std::string_view option);

// The options of `command` run with `args` (its words after its name, global options moved after them),
// from every source; nullopt when the flags ask for --help. Throws InvalidInput naming the flag, the
// variable or the file's line of what is wrong.
std::optional<Invocation> resolve_invocation(const Command& command, const std::vector<std::string>& args);

// A global option's value: from its sources, else its fallback ("info" for log-level).
std::string global_value(const Invocation& in, const char* name);

// The option's value in `vm` as text: "2", "a, b" for a list, "yes" for a switch that is set.
std::string option_text(const po::options_description& desc, const po::variables_map& vm, const std::string& name);

// The options an invocation shows (`prescient config`): each option of its command that has a value, in
// the order --help lists them, with the value as it may be shown (shown_value); not those only a command
// line gives.
std::vector<std::pair<std::string, std::string>> shown_options(const Invocation& in);

// The value as it may be shown: a connection string holding a password is not.
std::string shown_value(const std::string& option, const std::string& value);

}  // namespace prescient::cli

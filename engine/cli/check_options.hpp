#pragma once
// Options and output shared by the commands that manage checks.
#include <nlohmann/json.hpp>

#include <cstdint>
#include <iostream>
#include <optional>
#include <string>
#include <vector>

#include "command.hpp"
#include "prescient/registry.hpp"
#include "prescient/time.hpp"

namespace prescient::cli {

// --job-key K | --id N: exactly one.
struct CheckTarget {
  std::optional<std::int64_t> id;
  std::optional<std::string> job_key;
  std::string describe() const;  // "id 5" or "job key 'k'"
};
void add_target_options(po::options_description& desc);
CheckTarget target_of(const Invocation& in);

// --at TIME | --in DURATION.
void add_time_options(po::options_description& desc);
// Both unset is allowed only when `required` is false.
struct TimeChoice {
  std::optional<TimePoint> at;
  std::optional<std::chrono::seconds> in;
};
TimeChoice time_choice_of(const Invocation& in, bool required);

// --by WHO if given, else the OS user: who a change is recorded as made by.
std::string acting_user(const Invocation& in);

// A flag's value if given.
std::optional<std::string> optional_flag(const Invocation& in, const char* name);
std::optional<int> optional_int_flag(const Invocation& in, const char* name);
std::optional<TimePoint> optional_time_flag(const Invocation& in, const char* name);
std::optional<std::chrono::seconds> optional_duration_flag(const Invocation& in, const char* name);
// A duration read with a sign ("-5m"), whose rule is SQL's (a negative window is refused by the function that
// holds the rule, in the words every other door gets), not the flag parser's: a window, a jitter, a
// deadline, a debounce's ceiling, a dedupe window.
std::optional<std::chrono::seconds> ruled_duration_flag(const Invocation& in, const char* name);

// --plugins DIR: job classes from the shared libraries in DIR (default: PRESCIENT_PLUGIN_PATH).
void add_plugins_option(po::options_description& desc);
// --read-db URL, for the commands that only read (list, history, show, stats, web).
void add_read_db_option(po::options_description& desc);
// --listen-db URL, for what LISTENs (events --follow, the dashboard's event stream).
void add_listen_db_option(po::options_description& desc);
// Where to LISTEN: --listen-db, else PRESCIENT_LISTEN_DATABASE_URL, else the --db database when `db` (a
// session on it) does not go through a connection pooler; throws InvalidInput, saying what to give, when
// it does.
std::string listen_database_url(const Invocation& in, soci::session& db);
// The job classes this process knows: the built-in ones and those of the plugin directory, if any.
// Loaded once per process.
const Registry& known_job_classes(const Invocation& in);

// A plain text table: a header row, then rows, columns padded to their widest cell.
void print_table(const std::vector<std::string>& header, const std::vector<std::vector<std::string>>& rows);

std::string or_dash(const std::optional<std::string>& value);

// Prints items as one JSON array (for --json), each through `convert`, by default its to_json.
template <class T, class Convert>
void print_json_array(const std::vector<T>& items, Convert convert) {
  nlohmann::json out = nlohmann::json::array();
  for (const T& item : items) out.push_back(convert(item));
  std::cout << out << "\n";
}
template <class T>
void print_json_array(const std::vector<T>& items) {
  print_json_array(items, [](const T& item) { return to_json(item); });
}

// --payload JSON: parsed, whatever JSON it is. That it must be an object is the rule of the SQL function the
// command calls (schedule, cron), which refuses it in the words every door gets.
nlohmann::json payload_of(const Invocation& in);

}  // namespace prescient::cli

#include "check_options.hpp"

#include "prescient/database.hpp"

#include <algorithm>
#include <filesystem>
#include <iostream>

#include "builtin_jobs.hpp"
#include "prescient/plugin.hpp"
#include "prescient/client.hpp"
#include "prescient/duration.hpp"
#include "prescient/errors.hpp"
#include "prescient/time_text.hpp"

namespace prescient::cli {

using namespace prescient::jobs;

std::string CheckTarget::describe() const { return id ? "id " + std::to_string(*id) : "job key '" + *job_key + "'"; }

void add_target_options(po::options_description& desc) {
  desc.add_options()
      ("job-key", po::value<std::string>()->value_name("KEY"), "the check's job key")
      ("id", po::value<std::int64_t>()->value_name("N"), "the check's id");
}

CheckTarget target_of(const Invocation& in) {
  if (in.has("job-key") == in.has("id")) throw InvalidInput("give exactly one of --job-key and --id");
  CheckTarget target;
  if (in.has("id")) target.id = in.get<std::int64_t>("id");
  if (in.has("job-key")) {
    target.job_key = in.get<std::string>("job-key");
    if (target.job_key->empty()) in.refuse("job-key", "--job-key is empty");
  }
  return target;
}

void add_time_options(po::options_description& desc) {
  desc.add_options()
      ("at", po::value<std::string>()->value_name("TIME"),
       "when: ISO-8601 with an offset (2026-11-21T10:05:00Z) or @<unix seconds>; rounded up to the slot grid")
      ("in", po::value<std::string>()->value_name("DURATION"), "when, from now: 90s, 15m, 1h30m, 3d");
}

TimeChoice time_choice_of(const Invocation& in, bool required) {
  if (in.has("at") && in.has("in")) throw InvalidInput("give either --at or --in, not both");
  if (required && !in.has("at") && !in.has("in")) throw InvalidInput("give a time: --at TIME or --in DURATION");
  TimeChoice choice;
  choice.at = optional_time_flag(in, "at");
  choice.in = optional_duration_flag(in, "in");
  return choice;
}

std::string acting_user(const Invocation& in) {
  return in.has("by") ? in.get<std::string>("by") : current_os_user();
}

std::optional<std::string> optional_flag(const Invocation& in, const char* name) {
  return in.has(name) ? std::optional(in.get<std::string>(name)) : std::nullopt;
}

std::optional<int> optional_int_flag(const Invocation& in, const char* name) {
  return in.has(name) ? std::optional(in.get<int>(name)) : std::nullopt;
}

std::optional<TimePoint> optional_time_flag(const Invocation& in, const char* name) {
  return in.has(name) ? std::optional(in.parsed(name, parse_time)) : std::nullopt;
}

std::optional<std::chrono::seconds> optional_duration_flag(const Invocation& in, const char* name) {
  return in.has(name) ? std::optional(in.parsed(name, parse_duration)) : std::nullopt;
}

std::optional<std::chrono::seconds> ruled_duration_flag(const Invocation& in, const char* name) {
  return in.has(name) ? std::optional(in.parsed(name, parse_signed_duration)) : std::nullopt;
}

void add_plugins_option(po::options_description& desc) {
  desc.add_options()("plugins", po::value<std::string>()->value_name("DIR"),
                     "load job classes from the *.so files in DIR (default: $PRESCIENT_PLUGIN_PATH)");
}

void add_read_db_option(po::options_description& desc) {
  desc.add_options()("read-db", po::value<std::string>()->value_name("URL"),
                     "read from this database instead, e.g. a streaming replica, so reading does not load the "
                     "primary; what it shows lags by the replica's delay (default: $PRESCIENT_READ_DATABASE_URL, "
                     "else --db)");
}

void add_listen_db_option(po::options_description& desc) {
  desc.add_options()("listen-db", po::value<std::string>()->value_name("URL"),
                     "where event notifications are listened for: a direct connection to PostgreSQL when --db is a "
                     "pooler in transaction "
                     "mode, which cannot hold one (default: $PRESCIENT_LISTEN_DATABASE_URL, else --db, refused "
                     "when --db goes through a pooler)");
}

std::string listen_database_url(const Invocation& in, soci::session& db) {
  if (in.has("listen-db")) {
    in.warn_if_password("listen-db");
    return in.with_password_file(in.get<std::string>("listen-db"));
  }
  if (through_pooler(db)) {
    throw InvalidInput("the database is reached through a connection pooler, which in transaction mode loses a "
                       "listener between transactions: give --listen-db URL (or PRESCIENT_LISTEN_DATABASE_URL), a "
                       "direct connection to PostgreSQL, or the pooler's own URL if it pools by session");
  }
  return in.database_url();
}

const Registry& known_job_classes(const Invocation& in) {
  static const Registry registry = [&] {
    Registry r;
    BuiltinOptions builtins;
    if (in.has("commands")) {
      builtins.commands_dir = std::filesystem::absolute(in.get<std::string>("commands")).lexically_normal().string();
      if (!std::filesystem::is_directory(*builtins.commands_dir)) {
        in.refuse("commands", "--commands '" + in.get<std::string>("commands") + "' is not a directory");
      }
    }
    if (in.has("http-targets")) {
      builtins.http_targets = std::make_shared<const HttpTargets>(in.parsed("http-targets", read_http_targets));
    }
    register_builtin_jobs(r, builtins);
    if (in.has("plugins")) in.parsed("plugins", [&r](const std::string& dir) { return load_plugins(dir, r); });
    return r;
  }();
  return registry;
}

void print_table(const std::vector<std::string>& header, const std::vector<std::vector<std::string>>& rows) {
  std::vector<std::size_t> widths(header.size());
  for (std::size_t c = 0; c < header.size(); ++c) widths[c] = header[c].size();
  for (const auto& row : rows) {
    for (std::size_t c = 0; c < row.size(); ++c) widths[c] = std::max(widths[c], row[c].size());
  }
  const auto print_row = [&](const std::vector<std::string>& row) {
    std::string line;
    for (std::size_t c = 0; c < row.size(); ++c) {
      line += row[c];
      if (c + 1 < row.size()) line += std::string(widths[c] - row[c].size() + 2, ' ');
    }
    std::cout << line << "\n";
  };
  print_row(header);
  for (const auto& row : rows) print_row(row);
}

std::string or_dash(const std::optional<std::string>& value) { return value ? *value : "-"; }

nlohmann::json payload_of(const Invocation& in) {
  const std::string text = in.get<std::string>("payload");
  nlohmann::json payload;
  try {
    payload = nlohmann::json::parse(text);
  } catch (const nlohmann::json::parse_error& e) {
    in.refuse("payload", "invalid --payload '" + text + "': not JSON (" + e.what() + ")");
  }
  return payload;
}

}  // namespace prescient::cli

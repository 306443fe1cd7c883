#include <nlohmann/json.hpp>
#include <soci/soci.h>

#include <iostream>
#include <map>

#include "check_options.hpp"
#include "policy_options.hpp"
#include "core/text_rules.hpp"
#include "prescient/checks.hpp"
#include "prescient/client.hpp"
#include "prescient/clock.hpp"
#include "prescient/errors.hpp"
#include "prescient/job_classes.hpp"
#include "prescient/schedules.hpp"
#include "prescient/duration.hpp"
#include "prescient/time_text.hpp"

namespace prescient::cli {

using namespace prescient::core;

namespace {

std::string target_of(const std::string& action, const Invocation& in) {
  if (!in.has("target")) throw InvalidInput("missing the job class: prescient jobs " + action + " CLASS");
  return in.get<std::string>("target");
}

// jobs pause CLASS / jobs resume CLASS. Any class name: one whose plugin is not loaded here may still
// have checks waiting.
ExitCode pause_or_resume_class(const std::string& action, const Invocation& in) {
  const std::string job = target_of(action, in);
  if (auto problem = name_problem("the job class", job)) throw InvalidInput(*problem);
  auto db = in.connect_migrated();
  Checks checks(*db);
  const bool changed = action == "pause" ? checks.pause_job(job, acting_user(in), SystemClock().now()) : checks.resume_job(job);
  const std::string status = pause_status(action, changed);
  if (in.json()) std::cout << nlohmann::json{{"job", job}, {"status", status}} << "\n";
  else std::cout << "job class " << job << ": " << status << "\n";
  return kOk;
}

// jobs add CLASS [--worker] / jobs forget CLASS: the rules are SQL's (job_class_add, job_class_forget).
ExitCode add_or_forget(const std::string& action, const Invocation& in) {
  const std::string job = target_of(action, in);
  if (auto problem = text_problem("the job class", job)) throw InvalidInput(*problem);
  if (in.has("worker") && action != "add") throw InvalidInput("--worker only applies to jobs add");
  auto db = in.connect_migrated();
  std::string status = "forgotten";
  if (action == "add") status = add_job_class(*db, job, in.has("worker"), acting_user(in), SystemClock().now());
  else forget_job_class(*db, job);
  if (in.json()) std::cout << nlohmann::json{{"job", job}, {"status", status}} << "\n";
  else std::cout << "job class " << job << ": " << status << "\n";
  return kOk;
}

std::string optional_text(const std::optional<int>& v) { return v ? std::to_string(*v) : "-"; }
std::string optional_text(const std::optional<std::chrono::seconds>& v) { return v ? format_duration(*v) : "-"; }

// jobs set CLASS ...: the flags' syntax here; the values' rules are prescient.set_job_policy's.
ExitCode set_policy(const Invocation& in) {
  const std::string job = target_of("set", in);
  if (auto problem = text_problem("the job class", job)) throw InvalidInput(*problem);
  // --max-checks, --max-attempts and --backoff read as schedule reads a check's own.
  const JobPolicy flags = check_policy_of(in);
  JobPolicyChange change{.max_checks = flags.max_checks,
                         .max_attempts = flags.max_attempts,
                         .backoff = flags.backoff,
                         .backoff_max = flags.backoff_max};
  if (in.has("timeout")) change.timeout = parse_signed_duration(in.get<std::string>("timeout"));
  if (in.has("clear")) {
    const std::string list = in.get<std::string>("clear");
    for (std::size_t start = 0; start <= list.size();) {
      const std::size_t comma = std::min(list.find(',', start), list.size());
      change.clear.push_back(list.substr(start, comma - start));
      start = comma + 1;
    }
  }
  if (!change.max_checks && !change.max_attempts && !change.backoff && !change.timeout && change.clear.empty()) {
    throw InvalidInput("nothing to set: give --max-checks, --max-attempts, --backoff, --timeout or --clear");
  }
  auto db = in.connect_migrated();
  const JobClassRow row = set_job_policy(*db, job, change, acting_user(in), SystemClock().now());
  if (in.json()) {
    std::cout << to_json(row) << "\n";
  } else {
    std::cout << "job class " << row.job << ": max_checks=" << optional_text(row.max_checks)
              << " max_attempts=" << optional_text(row.max_attempts) << " backoff=" << optional_text(row.backoff)
              << " backoff_max=" << optional_text(row.backoff_max) << " timeout=" << optional_text(row.timeout)
              << "\n";
  }
  return kOk;
}

// jobs list: the database's registry, merged with the classes loaded here (built-ins, --plugins) and their
// coded policy. A class loaded here that is not a row is one no runner with these plugins has declared yet.
ExitCode list_classes(const Invocation& in) {
  if (in.has("target")) throw InvalidInput("unexpected argument '" + in.get<std::string>("target") + "'");
  const Registry& registry = known_job_classes(in);
  auto db = in.connect_migrated();
  std::map<std::string, std::optional<JobClassRow>> rows;
  for (JobClassRow& row : job_classes(*db)) rows[row.job] = std::move(row);
  for (const std::string& name : registry.names()) rows.try_emplace(name);
  nlohmann::json out = nlohmann::json::array();
  std::vector<std::vector<std::string>> table;
  for (const auto& [name, row] : rows) {
    nlohmann::json j = row ? to_json(*row) : nlohmann::json{{"name", name}, {"runs_in", nullptr}, {"origin", nullptr}};
    j["in_database"] = row.has_value();
    j["loaded"] = registry.contains(name) ? nlohmann::json(registry.origin_of(name)) : nlohmann::json(nullptr);
    if (registry.contains(name)) {
      const JobPolicy p = registry.create(name)->policy();
      const auto value = [](const auto& v) { return v ? nlohmann::json(*v) : nlohmann::json(nullptr); };
      j["class_policy"] = {{"max_checks", value(p.max_checks)}, {"max_attempts", value(p.max_attempts)},
                           {"timeout", p.timeout ? nlohmann::json(format_duration(*p.timeout)) : nlohmann::json(nullptr)},
                           {"long_running", p.long_running}};
    } else {
      j["class_policy"] = nullptr;
    }
    out.push_back(j);
    table.push_back({name, row ? row->runs_in : "-", row ? row->origin : "(not in the database)",
                     row && row->seen_at ? format_time(*row->seen_at) : "-",
                     row ? optional_text(row->max_checks) : "-", row ? optional_text(row->max_attempts) : "-",
                     row ? optional_text(row->backoff) + (row->backoff_max ? ".." + optional_text(row->backoff_max) : "")
                         : "-",
                     row ? optional_text(row->timeout) : "-",
                     registry.contains(name) ? registry.origin_of(name) : "no"});
  }
  if (in.json()) std::cout << out << "\n";
  else print_table({"CLASS", "RUNS_IN", "ORIGIN", "SEEN_AT", "MAX_CHECKS", "MAX_ATTEMPTS", "BACKOFF", "TIMEOUT", "LOADED_FROM"},
                   table);
  return kOk;
}

}  // namespace

Command jobs_command() {
  return {
      .name = "jobs",
      .summary = "The database's registry of job classes: list them with their policies; declare one ahead of its "
                 "runner (or one run by workers), forget one, set a class's policy; pause or resume a class "
                 "(runners claim none of a paused class's checks, which stay pending; `stats` lists paused "
                 "classes). Enqueue refuses a class that is not in the registry.",
      .usage = "jobs [list] [--plugins DIR] [--json]\n"
               "       prescient jobs add CLASS [--worker] [--by WHO] [--json]\n"
               "       prescient jobs forget CLASS [--json]\n"
               "       prescient jobs set CLASS [--max-checks N|unlimited] [--max-attempts N] [--backoff D[..MAX]]\n"
               "                                [--timeout D] [--clear FIELD,...] [--by WHO] [--json]\n"
               "       prescient jobs pause CLASS [--by WHO] [--json]\n"
               "       prescient jobs resume CLASS [--json]",
      .add_options =
          [](po::options_description& desc) {
            add_plugins_option(desc);
            desc.add_options()
                ("action", po::value<std::string>()->value_name("ACTION"),
                 "list (default), add, forget, set, pause or resume")
                ("target", po::value<std::string>()->value_name("CLASS"), "add, forget, set, pause, resume: the job class")
                ("worker", "add: the class is run by workers in another language (runs_in worker), not by a runner")
                ("max-checks", po::value<std::string>()->value_name("N"),
                 "set: how many times a check of the class may be run before it is settled guard_max_checks "
                 "(unlimited or 0: no limit)")
                ("max-attempts", po::value<std::string>()->value_name("N"),
                 "set: how many failed attempts in a row before a check is settled failed (at least 1)")
                ("backoff", po::value<std::string>()->value_name("D[..MAX]"),
                 "set: the wait before the first retry, and optionally the longest wait (e.g. 30s..1h)")
                ("timeout", po::value<std::string>()->value_name("D"), "set: how long one run may take (e.g. 30s)")
                ("clear", po::value<std::string>()->value_name("FIELD,..."),
                 "set: clear these fields (max_checks, max_attempts, backoff, backoff_max, timeout): the runner "
                 "falls back to the class's coded policy, the config file, then the settings")
                ("by", po::value<std::string>()->value_name("WHO"),
                 "add, set, pause: recorded with it (default: the OS user)")
                ("json", "print JSON");
          },
      .run =
          [](const Invocation& in) {
            const std::string action = in.has("action") ? in.get<std::string>("action") : "list";
            if (action == "pause" || action == "resume") return pause_or_resume_class(action, in);
            if (action == "add" || action == "forget") return add_or_forget(action, in);
            if (action == "set") return set_policy(in);
            if (action != "list") {
              throw InvalidInput("unknown jobs action '" + action + "': use list, add, forget, set, pause or resume");
            }
            return list_classes(in);
          },
  };
}

}  // namespace prescient::cli

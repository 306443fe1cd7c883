#include <nlohmann/json.hpp>
#include <soci/soci.h>

#include <iostream>

#include "check_options.hpp"
#include "core/text_rules.hpp"
#include "prescient/checks.hpp"
#include "prescient/client.hpp"
#include "prescient/clock.hpp"
#include "prescient/errors.hpp"
#include "prescient/schedules.hpp"
#include "prescient/duration.hpp"

namespace prescient::cli {

using namespace prescient::core;

namespace {

// jobs pause CLASS / jobs resume CLASS. Any class name: one whose plugin is not loaded here may still
// have checks waiting.
ExitCode pause_or_resume(const std::string& action, const Invocation& in) {
  if (!in.has("target")) throw InvalidInput("missing the job class: prescient jobs " + action + " CLASS");
  const std::string job = in.get<std::string>("target");
  if (auto problem = name_problem("the job class", job)) throw InvalidInput(*problem);
  auto db = in.connect_migrated();
  Checks checks(*db);
  const bool changed = action == "pause"
                           ? checks.pause_job(job, in.has("by") ? in.get<std::string>("by") : current_os_user(),
                                              SystemClock().now())
                           : checks.resume_job(job);
  const std::string status = pause_status(action, changed);
  if (in.json()) std::cout << nlohmann::json{{"job", job}, {"status", status}} << "\n";
  else std::cout << "job class " << job << ": " << status << "\n";
  return kOk;
}

}  // namespace

Command jobs_command() {
  return {
      .name = "jobs",
      .summary = "List the registered job classes and their policies; pause or resume a class (runners claim "
                 "none of a paused class's checks, which stay pending; `stats` lists paused classes).",
      .usage = "jobs [list] [--plugins DIR] [--json]\n"
               "       prescient jobs pause CLASS [--by WHO] [--json]\n"
               "       prescient jobs resume CLASS [--json]",
      .add_options =
          [](po::options_description& desc) {
            add_plugins_option(desc);
            desc.add_options()
                ("action", po::value<std::string>()->value_name("ACTION"), "list (default), pause or resume")
                ("target", po::value<std::string>()->value_name("CLASS"), "pause, resume: the job class")
                ("by", po::value<std::string>()->value_name("WHO"), "pause: recorded with it (default: the OS user)")
                ("json", "print JSON");
          },
      .run =
          [](const Invocation& in) {
            const std::string action = in.has("action") ? in.get<std::string>("action") : "list";
            if (action == "pause" || action == "resume") return pause_or_resume(action, in);
            if (action != "list") throw InvalidInput("unknown jobs action '" + action + "': use list, pause or resume");
            if (in.has("target")) throw InvalidInput("unexpected argument '" + in.get<std::string>("target") + "'");
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

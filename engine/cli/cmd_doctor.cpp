#include <nlohmann/json.hpp>
#include <soci/soci.h>

#include <iostream>

#include "check_options.hpp"
#include "command.hpp"
#include "health_text.hpp"
#include "prescient/duration.hpp"
#include "prescient/health_problems.hpp"

namespace prescient::cli {
namespace {

HealthLimits limits_of(const Invocation& in) {
  HealthLimits limits;
  limits.horizon_age = in.parsed("horizon-age", parse_duration);
  limits.backlog_age = in.parsed("backlog-age", parse_duration);
  limits.horizon_xids = in.get<long long>("horizon-xids");
  if (limits.horizon_xids < 1) {
    in.refuse("horizon-xids", "--horizon-xids must be at least 1, not " + std::to_string(limits.horizon_xids));
  }
  limits.min_dead_tuples = in.get<long long>("dead-tuples");
  if (limits.min_dead_tuples < 1) {
    in.refuse("dead-tuples", "--dead-tuples must be at least 1, not " + std::to_string(limits.min_dead_tuples));
  }
  return limits;
}

}  // namespace

Command doctor_command() {
  const HealthLimits defaults;
  return {
      .name = "doctor",
      .summary = "Judge the database's health, read on --db (the primary: a replica is a problem of its own), "
                 "and name what to do about each problem: a session, replication slot, standby or prepared "
                 "transaction holding back the horizon, dead tuples autovacuum does not reclaim, overdue checks. "
                 "Exit 4 when something needs action.",
      .usage = "doctor [--horizon-age DURATION] [--horizon-xids N] [--dead-tuples N] [--backlog-age DURATION] [--json]",
      .add_options =
          [defaults](po::options_description& desc) {
            desc.add_options()(
                "horizon-age", po::value<std::string>()->default_value(format_duration(defaults.horizon_age))
                                   ->value_name("DURATION"),
                "a session or prepared transaction holding the horizon longer than this is a problem")(
                "horizon-xids", po::value<long long>()->default_value(defaults.horizon_xids)->value_name("N"),
                "so is any holder (a replication slot or a standby's feedback too, which have no start time) more "
                "than N transactions behind")(
                "dead-tuples", po::value<long long>()->default_value(defaults.min_dead_tuples)->value_name("N"),
                "a table with at least N dead tuples and more than twice the number at which autovacuum takes it "
                "is a problem")(
                "backlog-age", po::value<std::string>()->default_value(format_duration(defaults.backlog_age))
                                   ->value_name("DURATION"),
                "a check overdue for longer than this is a problem")(
                "json", "print one JSON object: the health figures and the problems");
          },
      .run =
          [](const Invocation& in) {
            const HealthLimits limits = limits_of(in);
            // Always --db, the primary: a replica's statistics do not show what holds back the primary (read on
            // one, that is the first problem).
            const auto db = in.connect_migrated();
            const DatabaseHealth health = database_health(*db);
            const std::vector<HealthProblem> problems = health_problems(health, limits);
            if (in.json()) {
              nlohmann::json found = nlohmann::json::array();
              for (const HealthProblem& p : problems) {
                found.push_back({{"subject", p.subject}, {"finding", p.finding}, {"advice", p.advice}});
              }
              std::cout << nlohmann::json{{"health", to_json(health)}, {"problems", found}} << "\n";
            } else {
              print_health(std::cout, health, 5);
              if (problems.empty()) std::cout << "no problem found\n";
              for (const HealthProblem& p : problems) {
                std::cout << "\nproblem (" << p.subject << "): " << p.finding << "\n  what to do: " << p.advice << "\n";
              }
            }
            return problems.empty() ? kOk : kNeedsAction;
          },
  };
}

}  // namespace prescient::cli

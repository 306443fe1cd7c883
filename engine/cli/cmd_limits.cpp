// prescient limits: flow limits (docs/flow-control.md), declared, listed and removed.
#include <nlohmann/json.hpp>
#include <soci/soci.h>

#include <iostream>
#include <map>

#include "check_options.hpp"
#include "core/text_rules.hpp"
#include "prescient/client.hpp"
#include "prescient/clock.hpp"
#include "prescient/errors.hpp"
#include "prescient/flow_limits.hpp"
#include "prescient/time_text.hpp"

namespace prescient::cli {

using namespace prescient::core;

namespace {

std::string limit_name_of(const std::string& action, const Invocation& in) {
  if (!in.has("target")) throw InvalidInput("missing the limit's name: prescient limits " + action + " NAME");
  const std::string name = in.get<std::string>("target");
  if (auto problem = name_problem("the limit's name", name)) throw InvalidInput(*problem);
  return name;
}

std::optional<std::string> optional_name(const Invocation& in, const char* option, const char* what) {
  if (!in.has(option)) return std::nullopt;
  const std::string value = in.get<std::string>(option);
  if (auto problem = name_problem(what, value)) in.refuse(option, *problem);
  return value;
}

// --weight VALUE=N: a fair-share weight. The value is everything before the last '=' (it may hold one).
// Only the flag's syntax is judged here; the weight's range, its value and that it needs fair share are
// prescient.weights_problem's (sql/functions/085_flow_control.sql), refused by limit_set in its words.
std::pair<std::string, int> weight_of(const std::string& text) {
  const auto bad = [&] { return InvalidInput("invalid --weight '" + text + "': write VALUE=N, N a whole number"); };
  const auto equals = text.rfind('=');
  if (equals == std::string::npos) throw bad();
  const std::string number = text.substr(equals + 1);
  if (number.empty() || number.size() > 9 || number.find_first_not_of("0123456789") != std::string::npos) throw bad();
  return {text.substr(0, equals), std::stoi(number)};
}

ExitCode set_limit(const Invocation& in) {
  FlowLimit limit;
  limit.name = limit_name_of("set", in);
  if (!in.has("key")) throw InvalidInput("missing --key: job, entity_name, http_target or payload.<field>");
  limit.key = in.get<std::string>("key");
  if (auto problem = name_problem("the key", limit.key)) in.refuse("key", *problem);
  // The key's word before migration 0054, which limit_set takes for one release and stores as entity_name.
  if (limit.key == "entity") {
    std::cerr << "prescient: --key entity is deprecated: it is stored as entity_name; write --key entity_name, "
                 "the next release refuses entity\n";
  }
  limit.job = optional_name(in, "job", "the job class");
  limit.key_value = optional_name(in, "value", "the key value");
  if (in.has("rate")) {
    const FlowRate rate = in.parsed("rate", parse_flow_rate);
    limit.rate = rate.count;
    limit.per_seconds = rate.per_seconds;
  }
  if (in.has("burst")) limit.burst = in.get<int>("burst");
  if (in.has("concurrency")) limit.concurrency = in.get<int>("concurrency");
  limit.fair_share = in.has("fair-share");
  if (in.has("weight")) {
    for (const std::string& text : in.get<std::vector<std::string>>("weight")) {
      std::pair<std::string, int> weighted;
      try {
        weighted = weight_of(text);
      } catch (const InvalidInput& e) {
        in.refuse("weight", e.what());
      }
      const auto& [value, weight] = weighted;
      if (auto problem = text_problem("the weighted key value", value)) in.refuse("weight", *problem);
      if (!limit.weights.emplace(value, weight).second) in.refuse("weight", "--weight names '" + value + "' twice");
    }
  }
  const std::string by = acting_user(in);
  auto db = in.connect_migrated();
  const std::string status = FlowLimits(*db).set(limit, by, SystemClock().now());
  if (in.json()) std::cout << nlohmann::json{{"name", limit.name}, {"status", status}} << "\n";
  else std::cout << "limit " << limit.name << ": " << status << "\n";
  return kOk;
}

ExitCode remove_limit(const Invocation& in) {
  const std::string name = limit_name_of("remove", in);
  auto db = in.connect_migrated();
  if (!FlowLimits(*db).remove(name)) throw NotFound("no limit named '" + name + "'");
  if (in.json()) std::cout << nlohmann::json{{"name", name}, {"status", "removed"}} << "\n";
  else std::cout << "limit " << name << ": removed\n";
  return kOk;
}

// "no", "yes", or "yes, acme=3 globex=2" with weights.
std::string fair_share_text(const FlowLimit& l) {
  if (!l.fair_share) return "no";
  std::string text = "yes";
  for (const auto& [value, weight] : l.weights) {
    text.append(text == "yes" ? ", " : " ").append(value).append("=").append(std::to_string(weight));
  }
  return text;
}

ExitCode list_limits(const Invocation& in) {
  if (in.has("target")) throw InvalidInput("unexpected argument '" + in.get<std::string>("target") + "'");
  auto db = in.connect_for_reading();
  FlowLimits limits(*db);
  const std::vector<FlowLimit> all = limits.list();
  std::map<std::string, std::vector<FlowFigure>> figures;
  for (FlowFigure& f : limits.figures()) figures[f.limit_name].push_back(std::move(f));
  const auto or_any = [](const std::optional<std::string>& v) { return v.value_or("*"); };
  if (in.json()) {
    nlohmann::json out = nlohmann::json::array();
    for (const FlowLimit& l : all) {
      nlohmann::json deferrals = nlohmann::json::array();
      for (const FlowFigure& f : figures[l.name]) deferrals.push_back(to_json(f));
      out.push_back(to_json(l));
      out.back()["deferrals"] = deferrals;
    }
    std::cout << out << "\n";
    return kOk;
  }
  std::vector<std::vector<std::string>> rows, deferral_rows;
  for (const FlowLimit& l : all) {
    long long deferred = 0;
    for (const FlowFigure& f : figures[l.name]) {
      deferred += f.deferred;
      deferral_rows.push_back({l.name, f.key_value, std::to_string(f.deferred), format_time(f.last_deferred_at)});
    }
    rows.push_back({l.name, l.key, or_any(l.job), or_any(l.key_value),
                    l.rate ? format_flow_rate(*l.rate, l.per_seconds) : "-", std::to_string(l.burst),
                    l.concurrency ? std::to_string(*l.concurrency) : "-", fair_share_text(l),
                    std::to_string(deferred)});
  }
  print_table({"NAME", "KEY", "JOB", "VALUE", "RATE", "BURST", "CONCURRENCY", "FAIR_SHARE", "DEFERRED"}, rows);
  if (!deferral_rows.empty()) {
    std::cout << "\n";
    print_table({"LIMIT", "KEY_VALUE", "DEFERRED", "LAST_DEFERRED_AT"}, deferral_rows);
  }
  return kOk;
}

}  // namespace

Command limits_command() {
  return {
      .name = "limits",
      .summary = "Flow limits at firing time: a rate or a concurrency per key value, held by every runner "
                 "through the database (over budget, a check moves to when its budget allows), and fair share "
                 "of a slot between key values (docs/flow-control.md).",
      .usage = "limits [list] [--json]\n"
               "       prescient limits set NAME --key KEY [--rate COUNT/PERIOD] [--burst N] [--concurrency N]\n"
               "                            [--fair-share [--weight VALUE=N]...] [--job CLASS] [--value VALUE]\n"
               "                            [--by WHO] [--json]\n"
               "       prescient limits remove NAME [--json]",
      .add_options =
          [](po::options_description& desc) {
            desc.add_options()
                ("action", po::value<std::string>()->value_name("ACTION"), "list (default), set or remove")
                ("target", po::value<std::string>()->value_name("NAME"), "set, remove: the limit's name")
                ("key", po::value<std::string>()->value_name("KEY"),
                 "set: what the limited checks share: job, entity_name, http_target or payload.<field>")
                ("rate", po::value<std::string>()->value_name("COUNT/PERIOD"),
                 "set: at most COUNT checks started per PERIOD per key value (200/s, 30/m, 5/10s)")
                ("burst", po::value<int>()->value_name("N"),
                 "set: how many may start at once after a quiet spell (default 1: evenly spaced)")
                ("concurrency", po::value<int>()->value_name("N"), "set: at most N running at once per key value")
                ("fair-share", "set: within a slot, claim the key values in turn (a payload field; builds an "
                               "index on future_job, which blocks writes to it while it is built)")
                ("weight", po::value<std::vector<std::string>>()->value_name("VALUE=N"),
                 "set, with --fair-share: a claim takes N checks of this key value for each one of a value not "
                 "named (N from 1 to 1000; repeat for more values)")
                ("job", po::value<std::string>()->value_name("CLASS"), "set: only checks of this job class")
                ("value", po::value<std::string>()->value_name("VALUE"),
                 "set: only this key value (default: each value has a budget of its own)")
                ("by", po::value<std::string>()->value_name("WHO"), "set: recorded with it (default: the OS user)")
                ("json", "print JSON");
          },
      .run =
          [](const Invocation& in) {
            const std::string action = in.has("action") ? in.get<std::string>("action") : "list";
            if (action == "set") return set_limit(in);
            if (action == "remove") return remove_limit(in);
            if (action != "list") throw InvalidInput("unknown limits action '" + action + "': use list, set or remove");
            return list_limits(in);
          },
  };
}

}  // namespace prescient::cli

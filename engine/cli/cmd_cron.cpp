#include <date/tz.h>
#include <nlohmann/json.hpp>
#include <soci/soci.h>

#include <iostream>

#include "check_options.hpp"
#include "prescient/client.hpp"
#include "prescient/clock.hpp"
#include "prescient/cron_spec.hpp"
#include "prescient/duration.hpp"
#include "prescient/errors.hpp"
#include "prescient/schedules.hpp"
#include "prescient/time_text.hpp"

namespace prescient::cli {
namespace {

std::vector<TimePoint> next_firings(const CronSpec& spec, const date::time_zone& zone, TimePoint from, TimePoint anchor,
                                    int count) {
  std::vector<TimePoint> out;
  TimePoint at = from;
  for (int i = 0; i < count; ++i) {
    const auto next = spec.next(at, zone, anchor);
    if (!next) break;
    out.push_back(at = *next);
  }
  return out;
}

nlohmann::json definition_json(const ScheduleDefinition& d) {
  const auto optional_time = [](const std::optional<TimePoint>& t) {
    return t ? nlohmann::json(format_time(*t)) : nlohmann::json(nullptr);
  };
  return {{"id", d.id},
          {"spec", d.spec},
          {"time_zone", d.time_zone},
          {"job", d.job},
          {"payload", d.payload},
          {"deadline", d.deadline ? nlohmann::json(format_duration(*d.deadline)) : nlohmann::json(nullptr)},
          {"catch_up", d.catch_up},
          {"version", d.version},
          {"created_at", format_time(d.created_at)},
          {"updated_at", format_time(d.updated_at)},
          {"last_occurrence_at", optional_time(d.last_occurrence_at)},
          {"next_check_at", optional_time(d.next_check_at)}};
}

void print_definition(const ScheduleDefinition& d) {
  std::cout << "schedule " << d.id << " (version " << d.version << "): " << d.spec << " in " << d.time_zone
            << ", job " << d.job << ", catch-up " << d.catch_up
            << (d.deadline ? ", deadline " + format_duration(*d.deadline) : "") << "\n"
            << "  payload " << d.payload.dump() << "\n"
            << "  last occurrence " << (d.last_occurrence_at ? format_time(*d.last_occurrence_at) : "-")
            << ", next check " << (d.next_check_at ? format_time(*d.next_check_at) : "- (finished)") << "\n";
}

int run_next(const Invocation& in) {
  if (!in.has("spec")) throw InvalidInput("missing --spec");
  const int count = in.get<int>("count");
  if (count < 1 || count > 1000) throw InvalidInput("invalid --count " + std::to_string(count) + ": use 1-1000");
  const CronSpec spec = CronSpec::parse(in.get<std::string>("spec"));
  const date::time_zone& zone = find_time_zone(in.has("time-zone") ? in.get<std::string>("time-zone") : "UTC");
  const TimePoint from = in.has("from") ? parse_time(in.get<std::string>("from")) : SystemClock().now();
  nlohmann::json out = nlohmann::json::array();
  for (const TimePoint t : next_firings(spec, zone, from, from, count)) {
    if (in.json()) {
      out.push_back(format_time(t));
    } else {
      const auto local = date::make_zoned(&zone, std::chrono::floor<std::chrono::seconds>(t));
      std::cout << format_time(t) << "  " << date::format("%F %T %Z", local) << "\n";
    }
  }
  if (in.json()) std::cout << out << "\n";
  return kOk;
}

int run_on_database(const std::string& action, const Invocation& in) {
  const auto need_id = [&] {
    if (!in.has("id")) throw InvalidInput("missing --id");
    return in.get<std::string>("id");
  };
  // Check every flag before touching the database.
  if ((action == "add" || action == "update") && in.has("spec")) CronSpec::parse(in.get<std::string>("spec"));
  if (in.has("time-zone")) find_time_zone(in.get<std::string>("time-zone"));
  const std::optional<nlohmann::json> payload = in.has("payload") ? std::optional(payload_of(in)) : std::nullopt;
  const std::optional<std::chrono::seconds> deadline =
      in.has("deadline") ? std::optional(parse_duration(in.get<std::string>("deadline"))) : std::nullopt;
  auto db = in.connect_migrated();
  const SystemClock clock;
  Schedules schedules(*db, clock, &known_job_classes(in));
  if (action == "add" || action == "update") {
    ScheduleDefinition d;
    if (action == "add") {
      if (!in.has("spec")) throw InvalidInput("missing --spec");
      d = schedules.add({.id = need_id(),
                         .spec = in.get<std::string>("spec"),
                         .time_zone = in.has("time-zone") ? in.get<std::string>("time-zone") : "UTC",
                         .job = in.has("job") ? in.get<std::string>("job") : "emit",
                         .payload = payload.value_or(nlohmann::json::object()),
                         .deadline = deadline,
                         .catch_up = in.has("catch-up") ? in.get<std::string>("catch-up") : "one"});
    } else {
      d = schedules.update(need_id(), {.spec = optional_flag(in, "spec"),
                                       .time_zone = optional_flag(in, "time-zone"),
                                       .job = optional_flag(in, "job"),
                                       .catch_up = optional_flag(in, "catch-up"),
                                       .payload = payload,
                                       .deadline = deadline});
    }
    if (in.json()) std::cout << definition_json(d) << "\n";
    else print_definition(d);
    return kOk;
  }
  if (action == "remove") {
    const std::string id = need_id();
    schedules.remove(id, in.has("by") ? in.get<std::string>("by") : current_os_user());
    std::cout << (in.json() ? nlohmann::json{{"id", id}, {"status", "removed"}}.dump() : "removed schedule " + id) << "\n";
    return kOk;
  }
  if (action == "list") {
    const auto all = schedules.list();
    if (in.json()) {
      print_json_array(all, definition_json);
    } else {
      std::vector<std::vector<std::string>> rows;
      for (const auto& d : all) {
        rows.push_back({d.id, d.spec, d.time_zone, d.job, d.catch_up, std::to_string(d.version),
                        d.next_check_at ? format_time(*d.next_check_at) : "-"});
      }
      print_table({"ID", "SPEC", "TIME_ZONE", "JOB", "CATCH_UP", "VERSION", "NEXT_CHECK_AT"}, rows);
    }
    return kOk;
  }
  // show
  const ScheduleDefinition d = schedules.show(need_id());
  const CronSpec spec = CronSpec::parse(d.spec);
  const auto& zone = find_time_zone(d.time_zone);
  const auto upcoming = next_firings(spec, zone, std::max(clock.now(), d.last_occurrence_at.value_or(clock.now())),
                                     d.anchor_at, 5);
  const auto recent = schedules.recent_events(d.id, 10);
  if (in.json()) {
    nlohmann::json out = definition_json(d);
    out["next_firings"] = nlohmann::json::array();
    for (const TimePoint t : upcoming) out["next_firings"].push_back(format_time(t));
    out["recent_events"] = nlohmann::json::array();
    for (const auto& e : recent) {
      out["recent_events"].push_back(
          {{"id", e.id}, {"occurred_at", format_time(e.occurred_at)}, {"emitted_at", format_time(e.emitted_at)}});
    }
    std::cout << out << "\n";
    return kOk;
  }
  print_definition(d);
  std::cout << "next firings:\n";
  for (const TimePoint t : upcoming) std::cout << "  " << format_time(t) << "\n";
  std::cout << "recent events: " << recent.size() << "\n";
  for (const auto& e : recent) std::cout << "  " << e.id << "  occurred " << format_time(e.occurred_at) << ", emitted "
                                         << format_time(e.emitted_at) << "\n";
  return kOk;
}

}  // namespace

Command cron_command() {
  return {
      .name = "cron",
      .summary = "Recurring schedules: add, update, remove, list, show; `cron next` prints when a spec fires.",
      .usage = "cron add    --id ID --spec SPEC [--time-zone ZONE] [--payload JSON] [--job CLASS]\n"
               "                            [--deadline DURATION] [--catch-up one|all|none] [--json]\n"
               "       prescient cron update --id ID [same options]    # bumps the version\n"
               "       prescient cron remove --id ID [--by WHO]\n"
               "       prescient cron list   [--json]\n"
               "       prescient cron show   --id ID [--json]         # definition, next firings, recent events\n"
               "       prescient cron next   --spec SPEC [--time-zone ZONE] [--from TIME] [--count N] [--json]",
      .add_options =
          [](po::options_description& desc) {
            desc.add_options()
                ("action", po::value<std::string>()->value_name("ACTION"), "add, update, remove, list, show or next")
                ("id", po::value<std::string>()->value_name("ID"), "the schedule's id")
                ("spec", po::value<std::string>()->value_name("SPEC"),
                 "5 or 6 fields (with seconds), @hourly/@daily/@weekly/@monthly/@yearly, @every DURATION, @at TIME")
                ("time-zone", po::value<std::string>()->value_name("ZONE"), "IANA time zone (default UTC)")
                ("payload", po::value<std::string>()->value_name("JSON"), "a JSON object: the event's payload")
                ("job", po::value<std::string>()->value_name("CLASS"),
                 "emit (default): publish the payload at each occurrence; another class: a check of it each time")
                ("deadline", po::value<std::string>()->value_name("DURATION"),
                 "an occurrence fired later than this after its time is skipped (history: deadline_missed)")
                ("catch-up", po::value<std::string>()->value_name("POLICY"),
                 "after downtime: one (default; the latest missed occurrence), all, or none")
                ("by", po::value<std::string>()->value_name("WHO"), "remove: recorded in the history (default: the OS user)")
                ("from", po::value<std::string>()->value_name("TIME"), "next: firings after this time (default: now)")
                ("count", po::value<int>()->value_name("N")->default_value(5), "next: how many firings (1-1000)")
                ("json", "print JSON");
            add_plugins_option(desc);
          },
      .run =
          [](const Invocation& in) {
            const std::string action = in.has("action") ? in.get<std::string>("action") : "";
            if (action == "next") return run_next(in);
            if (action == "add" || action == "update" || action == "remove" || action == "list" || action == "show") {
              return run_on_database(action, in);
            }
            throw InvalidInput(action.empty() ? "missing action: add, update, remove, list, show or next"
                                              : "unknown cron action '" + action +
                                                    "': use add, update, remove, list, show or next");
          },
  };
}

}  // namespace prescient::cli

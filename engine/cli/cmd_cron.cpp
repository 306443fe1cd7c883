#include <nlohmann/json.hpp>
#include <soci/soci.h>

#include <cstdio>
#include <iostream>
#include <map>

#include "check_options.hpp"
#include "core/text_rules.hpp"
#include "json_lines.hpp"
#include "prescient/client.hpp"
#include "prescient/clock.hpp"
#include "prescient/cron_spec.hpp"
#include "prescient/open_time.hpp"
#include "prescient/duration.hpp"
#include "prescient/errors.hpp"
#include "prescient/schedules.hpp"
#include "prescient/time_text.hpp"
#include "prescient/time_zone.hpp"
#include "db/transaction.hpp"

namespace prescient::cli {

using namespace prescient::db;
namespace {

void print_definition(const ScheduleDefinition& d) {
  std::cout << "schedule " << d.id << " (version " << d.version << "): " << d.spec << " in " << d.time_zone
            << ", job " << d.job << ", catch-up " << d.catch_up
            << (d.deadline ? ", deadline " + format_duration(*d.deadline) : "")
            << (d.window ? ", window " + format_duration(*d.window) : "")
            << (d.jitter ? ", jitter " + format_duration(*d.jitter) : "")
            << (d.overlap != "allow" ? ", overlap " + d.overlap : "")
            << (d.dst_repeated != ScheduleDefinition{}.dst_repeated ? ", dst_repeated " + d.dst_repeated : "")
            << (d.dst_missing != ScheduleDefinition{}.dst_missing ? ", dst_missing " + d.dst_missing : "")
            << (d.calendar ? ", bound to calendar " + *d.calendar + " (closed: " + d.when_closed + ")" : "")
            << (d.priority != ScheduleDefinition{}.priority ? ", priority " + std::to_string(d.priority) : "") << "\n";
  if (d.start_at || d.end_at || d.max_runs) {
    std::cout << "  bounds: from " << (d.start_at ? format_time(*d.start_at) : "-") << " to "
              << (d.end_at ? format_time(*d.end_at) : "-")
              << (d.max_runs ? ", ran " + std::to_string(d.run_count) + " of max_runs " + std::to_string(*d.max_runs)
                             : "")
              << "\n";
  }
  if (d.pause_after_failures) {
    std::cout << "  pauses after " << *d.pause_after_failures << " failed occurrences in a row (failed so far: "
              << d.failed_in_a_row;
    if (d.last_failure) std::cout << "; the last: " << core::one_line(*d.last_failure);
    std::cout << ")\n";
  }
  std::cout << "  payload " << d.payload.dump() << "\n"
            << "  last occurrence " << (d.last_occurrence_at ? format_time(*d.last_occurrence_at) : "-")
            << ", next check " << (d.next_check_at ? format_time(*d.next_check_at) : "-") << "\n"
            << "  state " << state_of(d) << (d.paused_at ? " since " + format_time(*d.paused_at) : "")
            << (d.pause_note ? ": " + *d.pause_note : "")
            << (d.ended_at && !d.paused_at ? " at " + format_time(*d.ended_at) + ": " + d.ended_reason.value_or("") : "")
            << (d.invalid_reason ? ": " + *d.invalid_reason : "") << "\n";
}

// --dst-repeated and --dst-missing (auto when not given) by the parser the runner uses: a bad value is
// refused before connecting, in SQL's words.
DstPolicy dst_policy_flags(const Invocation& in) {
  return DstPolicy::parse(optional_flag(in, "dst-repeated").value_or("auto"),
                          optional_flag(in, "dst-missing").value_or("auto"));
}

// --calendar, --when-closed and --no-calendar: where they apply (`cron next` has no database to read a calendar
// from; `cron show` lists where a bound schedule fires), and when_closed by the runner's parser.
void check_binding_flags(const std::string& action, const Invocation& in) {
  for (const char* binding : {"calendar", "when-closed"}) {
    if (in.has(binding) && action != "add" && action != "update") {
      throw InvalidInput(std::string("--") + binding + " only applies to cron add and update");
    }
  }
  if (in.has("no-calendar") && (action != "update" || in.has("calendar"))) {
    throw InvalidInput("--no-calendar only applies to cron update, without --calendar");
  }
  if (in.has("when-closed")) parse_when_closed(in.get<std::string>("when-closed"));
}

int run_next(const Invocation& in) {
  check_binding_flags("next", in);
  if (!in.has("spec")) throw InvalidInput("missing --spec");
  const int count = in.get<int>("count");
  if (count < 1 || count > 1000) in.refuse("count", "invalid --count " + std::to_string(count) + ": use 1-1000");
  const DstPolicy dst = dst_policy_flags(in);
  const CronSpec spec = in.parsed("spec", [&](const std::string& text) { return CronSpec::parse(text, dst); });
  const TimeZone& zone =
      in.has("time-zone") ? *in.parsed("time-zone", [](const std::string& name) { return &find_time_zone(name); })
                          : find_time_zone("UTC");
  const TimePoint from = optional_time_flag(in, "from").value_or(SystemClock().now());
  nlohmann::json out = nlohmann::json::array();
  for (const TimePoint t : next_occurrences(spec, zone, from, from, count)) {
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

// Schedules are added from a file in statements of this many, all in one transaction.
constexpr std::size_t kFileStatementSize = 10000;

// One line of `cron add --file`: a JSON object with the fields of the flags.
ScheduleDefinition definition_from_line(const nlohmann::json& object) {
  ScheduleDefinition d;
  for (const auto& [field, value] : object.items()) {
    if (field == "id") d.id = string_field(value, field);
    else if (field == "spec") d.spec = string_field(value, field);
    else if (field == "time_zone") d.time_zone = string_field(value, field);
    else if (field == "job") d.job = string_field(value, field);
    else if (field == "catch_up") d.catch_up = string_field(value, field);
    else if (field == "deadline") d.deadline = parse_signed_duration(string_field(value, field));
    else if (field == "window") d.window = parse_signed_duration(string_field(value, field));
    else if (field == "jitter") d.jitter = parse_signed_duration(string_field(value, field));
    else if (field == "overlap") d.overlap = string_field(value, field);
    else if (field == "start_at") d.start_at = parse_time(string_field(value, field));
    else if (field == "end_at") d.end_at = parse_time(string_field(value, field));
    else if (field == "max_runs") d.max_runs = int_field(value, field);
    else if (field == "priority") d.priority = int_field(value, field);
    else if (field == "pause_after_failures") d.pause_after_failures = int_field(value, field);
    else if (field == "dst_repeated") d.dst_repeated = string_field(value, field);
    else if (field == "dst_missing") d.dst_missing = string_field(value, field);
    else if (field == "calendar") d.calendar = string_field(value, field);
    else if (field == "when_closed") d.when_closed = string_field(value, field);
    else if (field == "payload") d.payload = value;  // an object or not: SQL's rule
    else {
      throw InvalidInput("unknown field '" + field +
                         "' (fields: id, spec, time_zone, job, payload, catch_up, deadline, window, jitter, overlap,"
                         " start_at, end_at, max_runs, priority, pause_after_failures, dst_repeated, dst_missing,"
                         " calendar, when_closed)");
    }
  }
  if (d.id.empty()) throw InvalidInput("field 'id' is missing");
  if (d.spec.empty()) throw InvalidInput("field 'spec' is missing");
  return d;
}

struct FileLine {
  int line_number;
  ScheduleDefinition definition;
};

int add_file(const Invocation& in, Schedules& schedules, soci::session& db) {
  const std::string path = in.get<std::string>("file");
  std::vector<FileLine> parsed;
  std::vector<LineProblem> refused;
  const JsonLinesRead read = read_json_lines(
      path, [&](int line_number, const nlohmann::json& object) { parsed.push_back({line_number, definition_from_line(object)}); },
      &refused);
  // The rules are the database's (prescient.cron_problems): asked once per statement's worth of lines, so each
  // bad line is named by its number in the words every other door gets.
  const auto problems =
      judge_lines(parsed, &FileLine::definition, kFileStatementSize,
                  [&](std::span<const ScheduleDefinition> part) { return schedules.problems_with(part); });
  std::vector<ScheduleDefinition> good;
  std::vector<int> good_lines;
  std::map<std::string, int> id_lines;
  for (std::size_t i = 0; i < parsed.size(); ++i) {
    FileLine& line = parsed[i];
    const std::string& id = line.definition.id;
    if (const auto& problem = problems[i]) {
      refused.push_back({line.line_number, *problem});
    } else if (const auto seen = id_lines.find(id); seen != id_lines.end()) {
      refused.push_back({line.line_number, "schedule id '" + id + "' is already on line " + std::to_string(seen->second)});
    } else {
      id_lines[id] = line.line_number;
      good.push_back(std::move(line.definition));
      good_lines.push_back(line.line_number);
    }
  }
  const int invalid = static_cast<int>(refused.size()), line_number = read.lines;
  report_line_problems(std::move(refused));
  if (invalid > 0 && !in.has("skip-invalid")) {
    throw InvalidInput(std::to_string(invalid) + " invalid line(s) in " + path +
                       ": nothing was added (--skip-invalid adds the valid lines)");
  }
  db::Transaction all_or_nothing(db);
  for (std::size_t start = 0; start < good.size(); start += kFileStatementSize) {
    const std::size_t count = std::min(kFileStatementSize, good.size() - start);
    try {
      schedules.add_many(std::span(good).subspan(start, count));
    } catch (const InvalidInput& e) {
      // What changed since the lines were judged (an id taken meanwhile): "item K: ..." names the line instead.
      std::string message = e.what();
      if (std::size_t k = 0; std::sscanf(message.c_str(), "item %zu:", &k) == 1 && k >= 1 && k <= count) {
        message = "line " + std::to_string(good_lines[start + k - 1]) + message.substr(message.find(':'));
      }
      throw InvalidInput(message + " (nothing was added)");
    }
  }
  all_or_nothing.commit();
  if (in.json()) {
    std::cout << nlohmann::json{{"added", good.size()}, {"invalid", invalid}, {"lines", line_number}} << "\n";
  } else {
    std::cout << "added " << good.size() << " schedule(s) from " << path << "; skipped " << invalid << " invalid line(s)\n";
  }
  return kOk;
}

std::string required_id(const Invocation& in) {
  if (!in.has("id")) throw InvalidInput("missing --id");
  return in.get<std::string>("id");
}

// The flags of an action on the database, each checked before the database is touched.
struct CronFlags {
  std::optional<nlohmann::json> payload;
  std::optional<std::chrono::seconds> deadline, window, jitter;
  std::optional<TimePoint> start_at, end_at;
  std::optional<int> max_runs, priority, pause_after_failures;
  std::optional<TimePoint> backfill_from, backfill_to;
};

CronFlags checked_flags(const std::string& action, const Invocation& in) {
  if ((action == "add" || action == "update") && in.has("spec")) {
    in.parsed("spec", [](const std::string& text) { return CronSpec::parse(text); });
  }
  if (in.has("time-zone")) in.parsed("time-zone", [](const std::string& name) { return &find_time_zone(name); });
  dst_policy_flags(in);
  // What the flags say is read here; whether it is allowed is SQL's rule (cron_add_arrays, cron_update).
  CronFlags flags{.payload = in.has("payload") ? std::optional(payload_of(in)) : std::nullopt,
                  .deadline = ruled_duration_flag(in, "deadline"),
                  .window = ruled_duration_flag(in, "window"),
                  .jitter = ruled_duration_flag(in, "jitter"),
                  .start_at = optional_time_flag(in, "start-at"),
                  .end_at = optional_time_flag(in, "end-at"),
                  .max_runs = optional_int_flag(in, "max-runs"),
                  .priority = optional_int_flag(in, "priority"),
                  .pause_after_failures = optional_int_flag(in, "pause-after-failures")};
  if (action == "backfill") {
    flags.backfill_from = optional_time_flag(in, "from");
    flags.backfill_to = optional_time_flag(in, "to");
    if (!flags.backfill_from || !flags.backfill_to) throw InvalidInput("cron backfill needs --from TIME and --to TIME");
  }
  if (in.has("note") && action != "pause") throw InvalidInput("--note only applies to cron pause");
  check_binding_flags(action, in);
  return flags;
}

// update: --calendar NAME binds, --no-calendar unbinds, neither leaves the binding.
std::optional<std::optional<std::string>> calendar_change(const Invocation& in) {
  if (in.has("no-calendar")) return std::optional<std::string>();
  if (in.has("calendar")) return std::optional<std::string>(in.get<std::string>("calendar"));
  return std::nullopt;
}

int add_or_update(const std::string& action, const Invocation& in, Schedules& schedules, const CronFlags& flags) {
  ScheduleDefinition d;
  if (action == "add") {
    if (!in.has("spec")) throw InvalidInput("missing --spec");
    d = schedules.add({.id = required_id(in),
                       .spec = in.get<std::string>("spec"),
                       .time_zone = in.has("time-zone") ? in.get<std::string>("time-zone") : "UTC",
                       .job = in.has("job") ? in.get<std::string>("job") : "emit",
                       .payload = flags.payload.value_or(nlohmann::json::object()),
                       .deadline = flags.deadline,
                       .catch_up = in.has("catch-up") ? in.get<std::string>("catch-up") : "one",
                       .window = flags.window,
                       .jitter = flags.jitter,
                       .overlap = in.has("overlap") ? in.get<std::string>("overlap") : "allow",
                       .start_at = flags.start_at,
                       .end_at = flags.end_at,
                       .max_runs = flags.max_runs,
                       .priority = flags.priority.value_or(ScheduleDefinition{}.priority),
                       .pause_after_failures = flags.pause_after_failures,
                       .dst_repeated = optional_flag(in, "dst-repeated").value_or(ScheduleDefinition{}.dst_repeated),
                       .dst_missing = optional_flag(in, "dst-missing").value_or(ScheduleDefinition{}.dst_missing),
                       .calendar = optional_flag(in, "calendar"),
                       .when_closed = optional_flag(in, "when-closed").value_or(ScheduleDefinition{}.when_closed)});
  } else {
    d = schedules.update(required_id(in), {.spec = optional_flag(in, "spec"),
                                           .time_zone = optional_flag(in, "time-zone"),
                                           .job = optional_flag(in, "job"),
                                           .catch_up = optional_flag(in, "catch-up"),
                                           .payload = flags.payload,
                                           .deadline = flags.deadline,
                                           .window = flags.window,
                                           .jitter = flags.jitter,
                                           .overlap = optional_flag(in, "overlap"),
                                           .start_at = flags.start_at,
                                           .end_at = flags.end_at,
                                           .max_runs = flags.max_runs,
                                           .priority = flags.priority,
                                           .pause_after_failures = flags.pause_after_failures,
                                           .dst_repeated = optional_flag(in, "dst-repeated"),
                                           .dst_missing = optional_flag(in, "dst-missing"),
                                           .calendar = calendar_change(in),
                                           .when_closed = optional_flag(in, "when-closed")});
  }
  if (in.json()) std::cout << to_json(d) << "\n";
  else print_definition(d);
  return kOk;
}

int remove_schedule(const Invocation& in, Schedules& schedules) {
  const std::string id = required_id(in);
  schedules.remove(id, acting_user(in));
  std::cout << (in.json() ? nlohmann::json{{"id", id}, {"status", "removed"}}.dump() : "removed schedule " + id) << "\n";
  return kOk;
}

int pause_or_resume(const std::string& action, const Invocation& in, Schedules& schedules) {
  const std::string id = required_id(in);
  const std::string by = acting_user(in);
  const bool changed = action == "pause" ? schedules.pause(id, by, optional_flag(in, "note")) : schedules.resume(id, by);
  const std::string status = pause_status(action, changed);
  std::cout << (in.json() ? nlohmann::json{{"id", id}, {"status", status}}.dump() : "schedule " + id + ": " + status)
            << "\n";
  return kOk;
}

int backfill(const Invocation& in, Schedules& schedules, TimePoint from, TimePoint to) {
  const std::string id = required_id(in);
  const std::int64_t check = schedules.backfill(id, from, to, acting_user(in));
  if (in.json()) {
    std::cout << nlohmann::json{{"id", id}, {"check", check}, {"from", format_time(from)}, {"to", format_time(to)}}
              << "\n";
  } else {
    std::cout << "schedule " << id << ": backfill of " << format_time(from) << " to " << format_time(to)
              << " is check " << check << "; it fires at the next boundary what has not run\n";
  }
  return kOk;
}

int trigger(const Invocation& in, Schedules& schedules) {
  const std::string id = required_id(in);
  const std::string occurrence = schedules.trigger(id, acting_user(in));
  if (in.json()) {
    std::cout << nlohmann::json{{"id", id}, {"occurrence", occurrence}} << "\n";
  } else {
    std::cout << "schedule " << id << ": occurrence " << occurrence
              << " fires at the next boundary; the series goes on as before\n";
  }
  return kOk;
}

int list_schedules(const Invocation& in, Schedules& schedules) {
  const auto all = schedules.list({.limit = in.get<int>("limit"),
                                   .after = optional_flag(in, "after"),
                                   .paused = in.has("paused"),
                                   .invalid = in.has("invalid"),
                                   .job = optional_flag(in, "job")});
  if (in.json()) {
    print_json_array(all, [](const ScheduleDefinition& d) { return to_json(d); });
    return kOk;
  }
  std::vector<std::vector<std::string>> rows;
  for (const auto& d : all) {
    rows.push_back({d.id, d.spec, d.time_zone, d.dst_repeated + "/" + d.dst_missing, d.job, d.catch_up,
                    std::to_string(d.version), d.next_check_at ? format_time(*d.next_check_at) : "-", state_of(d)});
  }
  print_table({"ID", "SPEC", "TIME_ZONE", "DST", "JOB", "CATCH_UP", "VERSION", "NEXT_CHECK_AT", "STATE"}, rows);
  if (static_cast<int>(all.size()) == in.get<int>("limit")) {
    std::cerr << "prescient: more may follow: --after " << all.back().id << "\n";
  }
  return kOk;
}

int show_schedule(const Invocation& in, Schedules& schedules) {
  const Schedules::Detail detail = schedules.detail(required_id(in));
  if (in.json()) {
    std::cout << to_json(detail) << "\n";
    return kOk;
  }
  const ScheduleDefinition& d = detail.definition;
  const auto& zone = find_time_zone(d.time_zone);
  print_definition(d);
  if (d.window) {
    std::cout << "next occurrences (each fires at the schedule's place in its " << format_duration(*d.window)
              << " window; next check above):\n";
  } else if (d.jitter) {
    std::cout << "next occurrences (each fires at its jitter in " << format_duration(*d.jitter)
              << "; next check above):\n";
  } else {
    std::cout << "next firings:\n";
  }
  for (const TimePoint t : detail.next_firings) {
    std::cout << "  " << format_time(t) << "  (" << format_local_time(t, zone) << " " << d.time_zone << ")\n";
  }
  std::cout << "recent events: " << detail.recent_events.size() << "\n";
  for (const auto& e : detail.recent_events) {
    std::cout << "  " << e.id << "  occurred " << format_time(e.occurred_at) << ", emitted " << format_time(e.emitted_at)
              << "\n";
  }
  return kOk;
}

// add --file takes the schedules from a file, and none of the flags that define one.
void refuse_flags_beside_file(const Invocation& in) {
  for (const char* single : {"id", "spec", "time-zone", "payload", "job", "deadline", "catch-up", "window", "jitter",
                             "overlap", "start-at", "end-at", "max-runs", "priority", "pause-after-failures",
                             "dst-repeated", "dst-missing", "calendar", "when-closed"}) {
    if (in.has(single)) throw InvalidInput(std::string("--") + single + " cannot be combined with --file");
  }
}

int run_on_database(const std::string& action, const Invocation& in) {
  const CronFlags flags = checked_flags(action, in);
  const bool from_file = action == "add" && in.has("file");
  if (from_file) refuse_flags_beside_file(in);
  else if (in.has("file") || in.has("skip-invalid")) throw InvalidInput("--file and --skip-invalid only apply to cron add");
  auto db = in.connect_migrated();
  const SystemClock clock;
  Schedules schedules(*db, clock);
  if (from_file) return add_file(in, schedules, *db);
  if (action == "add" || action == "update") return add_or_update(action, in, schedules, flags);
  if (action == "remove") return remove_schedule(in, schedules);
  if (action == "pause" || action == "resume") return pause_or_resume(action, in, schedules);
  if (action == "backfill") return backfill(in, schedules, *flags.backfill_from, *flags.backfill_to);
  if (action == "trigger") return trigger(in, schedules);
  if (action == "list") return list_schedules(in, schedules);
  return show_schedule(in, schedules);
}

}  // namespace

Command cron_command() {
  return {
      .name = "cron",
      .summary = "Recurring schedules: add (one, or many from a file), update, pause, resume, remove, backfill, "
                 "trigger, list, show; `cron next` prints when a spec fires.",
      .usage = "cron add    --id ID --spec SPEC [--time-zone ZONE] [--payload JSON] [--job CLASS]\n"
               "                            [--deadline DURATION] [--catch-up one|all|none]\n"
               "                            [--window DURATION | --jitter DURATION] [--overlap POLICY]\n"
               "                            [--start-at TIME] [--end-at TIME] [--max-runs N] [--priority P]\n"
               "                            [--pause-after-failures N] [--dst-repeated POLICY]\n"
               "                            [--dst-missing POLICY] [--calendar NAME [--when-closed skip|move]]\n"
               "                            [--json]\n"
               "       prescient cron add    --file FILE|- [--skip-invalid] [--json]   # JSON lines, all or nothing\n"
               "       prescient cron update --id ID [same options] [--no-calendar]    # bumps the version\n"
               "       prescient cron pause  --id ID [--note TEXT] [--by WHO]  # keeps its place; resume applies catch-up\n"
               "       prescient cron resume --id ID [--by WHO]\n"
               "       prescient cron remove --id ID [--by WHO]\n"
               "       prescient cron backfill --id ID --from TIME --to TIME [--by WHO]  # a past range, once\n"
               "       prescient cron trigger --id ID [--by WHO] [--json]  # one occurrence now, out of the series\n"
               "       prescient cron list   [--limit N] [--after ID] [--paused] [--invalid] [--job CLASS] [--json]\n"
               "       prescient cron show   --id ID [--json]         # definition, next firings, recent events\n"
               "       prescient cron next   --spec SPEC [--time-zone ZONE] [--dst-repeated POLICY]\n"
               "                            [--dst-missing POLICY] [--from TIME] [--count N] [--json]",
      .add_options =
          [](po::options_description& desc) {
            desc.add_options()
                ("action", po::value<std::string>()->value_name("ACTION"),
                 "add, update, pause, resume, remove, backfill, trigger, list, show or next")
                ("id", po::value<std::string>()->value_name("ID"), "the schedule's id")
                ("spec", po::value<std::string>()->value_name("SPEC"),
                 "5 or 6 fields (with seconds), @hourly/@daily/@weekly/@monthly/@yearly, @every DURATION, @at TIME")
                ("time-zone", po::value<std::string>()->value_name("ZONE"), "IANA time zone (default UTC)")
                ("payload", po::value<std::string>()->value_name("JSON"), "a JSON object: the event's payload")
                ("job", po::value<std::string>()->value_name("CLASS"),
                 "emit (default): publish the payload at each occurrence; another class (one the database knows, "
                 "prescient jobs list): a check of it each time; list: only schedules of this class")
                ("deadline", po::value<std::string>()->value_name("DURATION"),
                 "an occurrence fired later than this after its time is skipped (history: deadline_missed)")
                ("catch-up", po::value<std::string>()->value_name("POLICY"),
                 "after downtime: one (default; the latest missed occurrence), all, or none")
                ("window", po::value<std::string>()->value_name("DURATION"),
                 "each occurrence fires at the schedule's place in this window after it: schedules added together "
                 "spread over its slots (e.g. 10m; the deadline counts from that place)")
                ("jitter", po::value<std::string>()->value_name("DURATION"),
                 "each occurrence fires at an offset of its own within this long after it, from the schedule's id "
                 "and the occurrence (e.g. 5m; not with --window)")
                ("overlap", po::value<std::string>()->value_name("POLICY"),
                 "a job class's occurrence while an earlier one's check is pending or running: allow (default), "
                 "skip (record it, history overlap_skipped), buffer_one (one waits, more are skipped), "
                 "cancel_previous (cancel those not running; it waits for one running)")
                ("start-at", po::value<std::string>()->value_name("TIME"),
                 "no occurrence before this time fires (one at it does)")
                ("end-at", po::value<std::string>()->value_name("TIME"),
                 "no occurrence after this time fires; then the schedule ends by itself (state ended)")
                ("max-runs", po::value<int>()->value_name("N"),
                 "the schedule ends by itself after N occurrences fired (from 1)")
                ("priority", po::value<int>()->value_name("P"),
                 "add, update: the priority of the schedule's check and its occurrences' checks, from 0 (first) "
                 "to 9 (last); default 5")
                ("pause-after-failures", po::value<int>()->value_name("N"),
                 "add, update: pause the schedule when N of the checks its occurrences make end failed in a row "
                 "(1-1000; a done sets the count back to 0, a resume starts it again)")
                ("dst-repeated", po::value<std::string>()->value_name("POLICY"),
                 "add, update, next: a local time that occurs twice when the clocks go back fires at its first "
                 "instant, its last, both or none; auto (default): both for a spec with * first in its minute or "
                 "hour field, else the first")
                ("dst-missing", po::value<std::string>()->value_name("POLICY"),
                 "add, update, next: a local time that does not occur when the clocks go forward: shift (fires the "
                 "gap's length later, 02:30 at 03:30) or skip; auto (default): skip for a spec with * first in its "
                 "minute or hour field, else the first instant after the gap")
                ("calendar", po::value<std::string>()->value_name("NAME"),
                 "add, update: bind the schedule to this calendar (prescient calendar list): its occurrences fire "
                 "only in the calendar's open time, and a window or jitter counts open time")
                ("when-closed", po::value<std::string>()->value_name("POLICY"),
                 "add, update: what an occurrence in the calendar's closed time does: skip (default) or move (to "
                 "the next opening, where the occurrences moved there fire once)")
                ("no-calendar", "update: unbind the schedule from its calendar")
                ("note", po::value<std::string>()->value_name("TEXT"),
                 "pause: why, shown by cron show and the dashboard until it resumes, kept in the history")
                ("by", po::value<std::string>()->value_name("WHO"),
                 "remove, pause, resume, backfill, trigger: recorded in the history (default: the OS user)")
                ("file", po::value<std::string>()->value_name("FILE"),
                 "add: JSON lines with the fields id, spec, time_zone, job, payload, catch_up, deadline, window, "
                 "jitter, overlap, start_at, end_at, max_runs, priority, pause_after_failures, dst_repeated, "
                 "dst_missing, calendar, when_closed ('-': stdin);"
                 " all or nothing, every bad line named")
                ("skip-invalid", "add --file: add the valid lines, report the others")
                ("limit", po::value<int>()->value_name("N")->default_value(100), "list: at most N schedules (1-10000)")
                ("after", po::value<std::string>()->value_name("ID"), "list: those after this id (the next page)")
                ("paused", "list: only paused schedules")
                ("invalid", "list: only schedules the runner marked invalid")
                ("from", po::value<std::string>()->value_name("TIME"),
                 "next: firings after this time (default: now); backfill: the first time of the range (included)")
                ("to", po::value<std::string>()->value_name("TIME"),
                 "backfill: the last time of the range (included; not in the future, at most 366 days after --from)")
                ("count", po::value<int>()->value_name("N")->default_value(5), "next: how many firings (1-1000)")
                ("json", "print JSON");
          },
      .run =
          [](const Invocation& in) {
            const std::string action = in.has("action") ? in.get<std::string>("action") : "";
            if (action == "next") return run_next(in);
            for (const char* known :
                 {"add", "update", "pause", "resume", "remove", "backfill", "trigger", "list", "show"}) {
              if (action == known) return run_on_database(action, in);
            }
            throw InvalidInput(action.empty()
                                   ? "missing action: add, update, pause, resume, remove, backfill, trigger, list, show or next"
                                   : "unknown cron action '" + action +
                                         "': use add, update, pause, resume, remove, backfill, trigger, list, show or next");
          },
  };
}

}  // namespace prescient::cli

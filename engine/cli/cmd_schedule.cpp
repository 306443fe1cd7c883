#include <nlohmann/json.hpp>
#include <soci/soci.h>

#include <algorithm>
#include <cerrno>
#include <iostream>
#include <map>

#include "check_options.hpp"
#include "json_lines.hpp"
#include "policy_options.hpp"
#include "prescient/client.hpp"
#include "prescient/duration.hpp"
#include "prescient/errors.hpp"
#include "prescient/time_text.hpp"
#include "db/transaction.hpp"

namespace prescient::cli {

using namespace prescient::db;
namespace {

// Bulk files are sent in statements of this many checks, all in one transaction.
constexpr std::size_t kBulkStatementSize = 10000;

nlohmann::json result_json(const Scheduled& s) {
  nlohmann::json out{{"id", s.id}, {"job_key", s.job_key ? nlohmann::json(*s.job_key) : nlohmann::json(nullptr)},
                     {"status", to_string(s.status)}};
  out["next_check_at"] = s.next_check_at ? nlohmann::json(format_time(*s.next_check_at)) : nlohmann::json(nullptr);
  out["first_check_at"] = s.first_check_at ? nlohmann::json(format_time(*s.first_check_at)) : nlohmann::json(nullptr);
  return out;
}

void print_result(const Scheduled& s) {
  if (s.status == Scheduled::Status::deduplicated) {
    std::cout << "deduplicated: check " << s.id << " with job_key=" << or_dash(s.job_key)
              << " settled within the dedupe window; nothing scheduled\n";
    return;
  }
  std::cout << to_string(s.status) << " id=" << s.id << " job_key=" << or_dash(s.job_key)
            << " next_check_at=" << format_time(*s.next_check_at) << "\n";
}

// --dedupe-outcomes OUTCOME,...: nothing when not given.
std::vector<Outcome> dedupe_outcomes_flag(const Invocation& in) {
  std::vector<Outcome> outcomes;
  if (!in.has("dedupe-outcomes")) return outcomes;
  const std::string list = in.get<std::string>("dedupe-outcomes");
  for (std::size_t start = 0; start <= list.size();) {
    const std::size_t comma = std::min(list.find(',', start), list.size());
    outcomes.push_back(parse_outcome(list.substr(start, comma - start)));
    start = comma + 1;
  }
  return outcomes;
}

// A field that is a number or text ("unlimited"), as its text.
std::string text_or_number(const nlohmann::json& value, const std::string& field) {
  return value.is_number_integer() ? std::to_string(value.get<long long>()) : string_field(value, field);
}

ScheduleRequest request_from_flags(const Invocation& in) {
  for (const char* required : {"job", "entity-name", "entity-key"}) {
    if (!in.has(required)) throw InvalidInput(std::string("missing --") + required + " (or give --file)");
  }
  // With --calendar, --in is a business delay, read by SQL ("4h", "3bd"); and no time at all is now.
  const bool business = in.has("calendar");
  if (business && in.has("at") && in.has("in")) throw InvalidInput("give either --at or --in, not both");
  const TimeChoice when = business ? TimeChoice{.at = optional_time_flag(in, "at")} : time_choice_of(in, true);
  ScheduleRequest request{.job = in.get<std::string>("job"),
                          .entity_name = in.get<std::string>("entity-name"),
                          .entity_key = in.get<std::string>("entity-key"),
                          .job_key = optional_flag(in, "job-key"),
                          .group_key = optional_flag(in, "group-key"),
                          .at = when.at,
                          .in = business ? std::nullopt : when.in,
                          .by = optional_flag(in, "by"),
                          .on_conflict = parse_on_conflict(in.get<std::string>("on-conflict"))};
  if (in.has("payload")) request.payload = payload_of(in);  // an object or not: SQL's rule
  request.window = ruled_duration_flag(in, "window");
  request.max_wait = ruled_duration_flag(in, "max-wait");
  request.dedupe_for = ruled_duration_flag(in, "dedupe-for");
  request.dedupe_outcomes = dedupe_outcomes_flag(in);
  request.policy = check_policy_of(in);
  request.priority = optional_int_flag(in, "priority");  // its range is SQL's rule (priority_problem)
  request.traceparent = optional_flag(in, "traceparent");    // and so is the trace context (trace_problem)
  request.tracestate = optional_flag(in, "tracestate");
  request.calendar = optional_flag(in, "calendar");  // what it may name, and the delay, are SQL's rules
  if (business) request.business_delay = optional_flag(in, "in");
  return request;
}

// The fields of a bulk file's line, each with how it is read: the one list of them, from which the refusal of
// an unknown field and --file's help are made. They are schedule's flags as JSON, but for the file's own
// (--dedupe-outcomes, --allow-unknown-class); tests/db/check_fields_test.cpp compares them with the arguments
// of prescient.schedule and prescient.set_check_policy.
struct BulkField {
  const char* name;
  void (*read)(ScheduleRequest& request, const nlohmann::json& value, const std::string& field);
};
using BulkValue = const nlohmann::json&;
using BulkName = const std::string&;
constexpr BulkField kBulkFields[] = {
    {"job", [](ScheduleRequest& r, BulkValue v, BulkName f) { r.job = string_field(v, f); }},
    {"entity_name", [](ScheduleRequest& r, BulkValue v, BulkName f) { r.entity_name = string_field(v, f); }},
    {"entity_key", [](ScheduleRequest& r, BulkValue v, BulkName f) { r.entity_key = string_field(v, f); }},
    {"at", [](ScheduleRequest& r, BulkValue v, BulkName f) { r.at = parse_time(string_field(v, f)); }},
    {"in", [](ScheduleRequest& r, BulkValue v, BulkName f) { r.in = parse_duration(string_field(v, f)); }},
    {"window",
     [](ScheduleRequest& r, BulkValue v, BulkName f) { r.window = parse_signed_duration(string_field(v, f)); }},
    {"job_key", [](ScheduleRequest& r, BulkValue v, BulkName f) { r.job_key = string_field(v, f); }},
    {"group_key", [](ScheduleRequest& r, BulkValue v, BulkName f) { r.group_key = string_field(v, f); }},
    {"payload", [](ScheduleRequest& r, BulkValue v, BulkName) { r.payload = v; }},  // an object or not: SQL's rule
    {"by", [](ScheduleRequest& r, BulkValue v, BulkName f) { r.by = string_field(v, f); }},
    {"on_conflict",
     [](ScheduleRequest& r, BulkValue v, BulkName f) { r.on_conflict = parse_on_conflict(string_field(v, f)); }},
    {"max_wait",
     [](ScheduleRequest& r, BulkValue v, BulkName f) { r.max_wait = parse_signed_duration(string_field(v, f)); }},
    {"dedupe_for",
     [](ScheduleRequest& r, BulkValue v, BulkName f) { r.dedupe_for = parse_signed_duration(string_field(v, f)); }},
    {"priority", [](ScheduleRequest& r, BulkValue v, BulkName f) { r.priority = int_field(v, f); }},
    {"traceparent", [](ScheduleRequest& r, BulkValue v, BulkName f) { r.traceparent = string_field(v, f); }},
    {"tracestate", [](ScheduleRequest& r, BulkValue v, BulkName f) { r.tracestate = string_field(v, f); }},
    {"calendar", [](ScheduleRequest& r, BulkValue v, BulkName f) { r.calendar = string_field(v, f); }},
    {"max_checks",
     [](ScheduleRequest& r, BulkValue v, BulkName f) {
       r.policy.max_checks = max_checks_syntax(text_or_number(v, f));
     }},
    {"max_attempts",
     [](ScheduleRequest& r, BulkValue v, BulkName f) {
       r.policy.max_attempts = whole_number_syntax(text_or_number(v, f), "max_attempts");
     }},
    {"backoff",  // D[..MAX]: the first wait and the ceiling
     [](ScheduleRequest& r, BulkValue v, BulkName f) {
       const Backoff backoff = backoff_syntax(string_field(v, f));
       r.policy.backoff = backoff.first;
       r.policy.backoff_max = backoff.most;
     }},
};

// "job, entity_name, ..., backoff"
std::string bulk_field_names() {
  std::string names;
  for (const BulkField& field : kBulkFields) names += (names.empty() ? "" : ", ") + std::string(field.name);
  return names;
}

// One line of a bulk file: a JSON object with the same fields as the flags.
ScheduleRequest request_from_line(const nlohmann::json& object, const ScheduleRequest& defaults) {
  ScheduleRequest request = defaults;
  // As on the command line: beside a calendar, `in` is a business delay ("4h", "3bd").
  const bool business = object.contains("calendar");
  for (const auto& [field, value] : object.items()) {
    if (business && field == "in") {
      request.business_delay = string_field(value, field);
      continue;
    }
    const auto known = std::find_if(std::begin(kBulkFields), std::end(kBulkFields),
                                    [&](const BulkField& f) { return field == f.name; });
    if (known == std::end(kBulkFields)) {
      throw InvalidInput("unknown field '" + field + "' (fields: " + bulk_field_names() + ")");
    }
    known->read(request, value, field);
  }
  // --dedupe-outcomes is the file's: it applies to the lines that dedupe.
  if (!request.dedupe_for) request.dedupe_outcomes.clear();
  return request;
}

struct BulkLine {
  int line_number;
  ScheduleRequest request;
};

int schedule_file(const Invocation& in) {
  const std::string path = in.get<std::string>("file");
  const bool skip_invalid = in.has("skip-invalid");
  const ScheduleRequest defaults{.by = optional_flag(in, "by"),
                                 .on_conflict = parse_on_conflict(in.get<std::string>("on-conflict")),
                                 .dedupe_outcomes = dedupe_outcomes_flag(in),
                                 .priority = optional_int_flag(in, "priority"),
                                 .traceparent = optional_flag(in, "traceparent"),
                                 .tracestate = optional_flag(in, "tracestate")};

  auto db = in.connect_migrated();
  Client client(*db, {.allow_unknown_class = in.has("allow-unknown-class")});
  std::vector<BulkLine> parsed;
  std::vector<LineProblem> refused;
  const JsonLinesRead read = read_json_lines(
      path,
      [&](int line_number, const nlohmann::json& object) {
        parsed.push_back({line_number, request_from_line(object, defaults)});
      },
      &refused);
  // The rules are the database's (prescient.schedule_problems): asked once per statement's worth of lines, so
  // each bad line is named by its number in the words every other door gets.
  const auto problems = judge_lines(parsed, &BulkLine::request, kBulkStatementSize,
                                    [&](std::span<const ScheduleRequest> part) { return client.problems_with(part); });
  std::vector<BulkLine> good;
  std::map<std::string, int> key_lines;
  for (std::size_t i = 0; i < parsed.size(); ++i) {
    BulkLine& line = parsed[i];
    if (const auto& problem = problems[i]) {
      refused.push_back({line.line_number, *problem});
    } else if (line.request.job_key && key_lines.contains(*line.request.job_key)) {
      refused.push_back({line.line_number, "job key '" + *line.request.job_key + "' is already on line " +
                                               std::to_string(key_lines[*line.request.job_key])});
    } else {
      if (line.request.job_key) key_lines[*line.request.job_key] = line.line_number;
      good.push_back(std::move(line));
    }
  }
  const int invalid = static_cast<int>(refused.size()), line_number = read.lines;
  report_line_problems(std::move(refused));
  if (invalid > 0 && !skip_invalid) {
    throw InvalidInput(std::to_string(invalid) + " invalid line(s) in " + path +
                       ": nothing was scheduled (--skip-invalid schedules the valid lines)");
  }

  std::vector<ScheduleRequest> requests;
  requests.reserve(good.size());
  for (const BulkLine& g : good) requests.push_back(g.request);
  std::vector<Scheduled> results;
  results.reserve(requests.size());
  db::Transaction all_or_nothing(*db);
  for (std::size_t start = 0; start < requests.size(); start += kBulkStatementSize) {
    const std::size_t count = std::min(kBulkStatementSize, requests.size() - start);
    try {
      auto part = client.schedule_many(std::span(requests).subspan(start, count), skip_invalid);
      results.insert(results.end(), part.begin(), part.end());
    } catch (const InvalidInput& e) {
      throw InvalidInput(std::string(e.what()) + " (lines " + std::to_string(good[start].line_number) + "-" +
                         std::to_string(good[start + count - 1].line_number) + "; nothing was scheduled)");
    }
  }
  all_or_nothing.commit();

  std::map<Scheduled::Status, int> counts;
  nlohmann::json out = nlohmann::json::array();
  for (std::size_t i = 0; i < results.size(); ++i) {
    ++counts[results[i].status];
    if (results[i].status == Scheduled::Status::conflict) {
      std::cerr << "prescient: line " << good[i].line_number << ": a pending check with job key '" << *results[i].job_key
                << "' already exists (id " << results[i].id << "): skipped\n";
    }
    if (in.json()) {
      nlohmann::json entry = result_json(results[i]);
      entry["line"] = good[i].line_number;
      out.push_back(std::move(entry));
    }
  }
  if (in.json()) {
    std::cout << out << "\n";
  } else {
    std::cout << "scheduled " << results.size() - counts[Scheduled::Status::conflict] << " of " << line_number
              << " lines from " << path << ": " << counts[Scheduled::Status::created] << " created, "
              << counts[Scheduled::Status::replaced] << " replaced, " << counts[Scheduled::Status::kept]
              << " kept, " << counts[Scheduled::Status::debounced] << " debounced, "
              << counts[Scheduled::Status::collected] << " collected, "
              << counts[Scheduled::Status::deduplicated] << " deduplicated; skipped " << invalid << " invalid and "
              << counts[Scheduled::Status::conflict]
              << " conflicting\n";
  }
  return kOk;
}

}  // namespace

Command schedule_command() {
  return {
      .name = "schedule",
      .summary = "Put a check into the future (or many, from a file of JSON lines).",
      .usage = "schedule --job CLASS --entity-name NAME --entity-key KEY (--at TIME | --in DURATION)\n"
               "                          [--window DURATION] [--job-key KEY] [--group-key KEY] [--payload JSON]\n"
               "                          [--by WHO] [--on-conflict error|replace|keep|debounce|collect [--max-wait DURATION]]\n"
               "                          [--dedupe-for DURATION [--dedupe-outcomes OUTCOME,...]] [--allow-unknown-class]\n"
               "                          [--max-checks N|unlimited] [--max-attempts N] [--backoff D[..MAX]]\n"
               "                          [--priority P] [--traceparent TP [--tracestate TS]] [--json]\n"
               "       prescient schedule ... --calendar NAME [--at TIME | --in 4h|3bd]\n"
               "       prescient schedule --file FILE|- [--skip-invalid] [--by WHO] [--on-conflict ...]\n"
               "                          [--priority P] [--traceparent TP [--tracestate TS]] [--allow-unknown-class]\n"
               "                          [--json]",
      .add_options =
          [](po::options_description& desc) {
            desc.add_options()
                ("job", po::value<std::string>()->value_name("CLASS"),
                 "the job class that runs the check: one the database knows (prescient jobs list), else refused")
                ("entity-name", po::value<std::string>()->value_name("NAME"), "what the check is about, e.g. orders")
                ("entity-key", po::value<std::string>()->value_name("KEY"), "which one, e.g. 42");
            add_time_options(desc);
            desc.add_options()
                ("window", po::value<std::string>()->value_name("DURATION"),
                 "the check may fire any time this long after its time: a herd given one time is spread evenly "
                 "over the window's slots (e.g. 10m; docs/flow-control.md)")
                ("job-key", po::value<std::string>()->value_name("KEY"),
                 "natural key, unique among pending checks: cancel and reschedule by it")
                ("group-key", po::value<std::string>()->value_name("KEY"),
                 "checks of one group are run together, in order")
                ("payload", po::value<std::string>()->value_name("JSON"), "a JSON object handed to the job class")
                ("by", po::value<std::string>()->value_name("WHO"), "recorded as enqueued_by (default: the OS user)")
                ("on-conflict", po::value<std::string>()->value_name("POLICY")->default_value("error"),
                 "when a pending check has the same job key: error (exit 2), replace (update it in place), keep, "
                 "debounce (replace it, but never later than its first enqueue plus --max-wait), or collect (a "
                 "digest: add the payload to the check's list, moved as debounce moves it)")
                ("max-wait", po::value<std::string>()->value_name("DURATION"),
                 "with --on-conflict debounce or collect: the ceiling (e.g. 6h), from the pending check's first "
                 "enqueue, or from the first payload of a digest's list")
                ("dedupe-for", po::value<std::string>()->value_name("DURATION"),
                 "schedule nothing when a check with this job key settled within this long (e.g. 24h): the answer "
                 "names it")
                ("dedupe-outcomes", po::value<std::string>()->value_name("OUTCOME,..."),
                 "with --dedupe-for, or for the lines of --file with dedupe_for: the outcomes that count (default done)")
                ("priority", po::value<int>()->value_name("P"),
                 "from 0 (first) to 9 (last), default 5: among the checks due at the same time, the lower number "
                 "runs first; with --file, for the lines without a priority")
                ("traceparent", po::value<std::string>()->value_name("TP"),
                 "the W3C trace context the check is created in (00-<trace id>-<parent id>-<flags>, e.g. "
                 "\"$TRACEPARENT\"): each run continues the trace with a span of its own; with --file, for the "
                 "lines without one")
                ("tracestate", po::value<std::string>()->value_name("TS"),
                 "with --traceparent: the W3C tracestate that goes with it (vendor=value,...)")
                ("calendar", po::value<std::string>()->value_name("NAME"),
                 "time the check in this calendar's open time (prescient calendar list): --in is then open time "
                 "(4h, 90m, 1h30m) or business days (3bd) from now; --at, or no time, is that time (or now) if "
                 "open, else the next opening; --window is counted in open time (docs/business-time.md)")
                ("file", po::value<std::string>()->value_name("FILE"),
                 ("bulk: one JSON object per line with the fields " + bulk_field_names() +
                  " (at or in); - reads standard input. All lines or none are scheduled")
                     .c_str())
                ("skip-invalid", "bulk: schedule the valid lines and report each invalid or conflicting one");
            add_check_policy_options(desc);
            desc.add_options()
                ("allow-unknown-class",
                 "accept a job class the database does not know (one deployed after its checks are written); "
                 "without it such a class is refused, listing the known ones")
                ("json", "print the result as JSON (an array for --file)");
          },
      .run =
          [](const Invocation& in) -> int {
            if (in.has("file")) {
              for (const char* single :
                   {"job", "entity-name", "entity-key", "at", "in", "window", "job-key", "group-key", "payload", "calendar",
                    "max-wait", "dedupe-for", "max-checks", "max-attempts", "backoff"}) {
                if (in.has(single)) throw InvalidInput(std::string("--") + single + " cannot be combined with --file");
              }
              return schedule_file(in);
            }
            if (in.has("skip-invalid")) throw InvalidInput("--skip-invalid only applies to --file");
            const ScheduleRequest request = request_from_flags(in);
            auto db = in.connect_migrated();
            Client client(*db, {.allow_unknown_class = in.has("allow-unknown-class")});
            const Scheduled result = client.schedule(request);
            if (in.json()) std::cout << result_json(result) << "\n";
            else print_result(result);
            return kOk;
          },
  };
}

}  // namespace prescient::cli

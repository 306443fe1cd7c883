// prescient calendar: calendars for business time (docs/business-time.md), set, listed and asked.
#include <fstream>
#include <iostream>
#include <iterator>

#include "check_options.hpp"
#include "json_lines.hpp"
#include "core/text_rules.hpp"
#include "prescient/calendars.hpp"
#include "prescient/client.hpp"
#include "prescient/clock.hpp"
#include "prescient/errors.hpp"
#include "prescient/time_text.hpp"

namespace prescient::cli {

using namespace prescient::core;

namespace {

std::string calendar_name_of(const std::string& action, const Invocation& in) {
  if (!in.has("target")) throw InvalidInput("missing the calendar's name: prescient calendar " + action + " NAME");
  return in.get<std::string>("target");  // the naming rule is the database's (calendar_problem), in its words
}

// --file FILE ('-': standard input): the definition, one JSON object.
nlohmann::json definition_of(const Invocation& in) {
  if (!in.has("file")) throw InvalidInput("missing --file: the calendar's definition, a JSON object ('-': standard input)");
  const std::string path = in.get<std::string>("file");
  std::ifstream file;
  std::istream& input = input_of(path, file);
  const std::string text{std::istreambuf_iterator<char>(input), std::istreambuf_iterator<char>()};
  nlohmann::json definition;
  try {
    definition = nlohmann::json::parse(text);
  } catch (const nlohmann::json::parse_error& e) {
    in.refuse("file", "'" + path + "' is not JSON (" + e.what() + ")");
  }
  if (!definition.is_object()) in.refuse("file", "'" + path + "' is not a JSON object (hours, holidays, days)");
  return definition;
}

void print_version(const Invocation& in, const std::string& name, int version) {
  if (in.json()) std::cout << nlohmann::json{{"name", name}, {"version", version}} << "\n";
  else std::cout << "calendar " << name << ": version " << version << "\n";
}

ExitCode set_or_add(const Invocation& in, bool must_be_new) {
  const std::string name = calendar_name_of(must_be_new ? "add" : "set", in);
  if (must_be_new && !in.has("zone")) throw InvalidInput("missing --zone: the calendar's IANA time zone (Europe/Berlin)");
  const nlohmann::json definition = definition_of(in);
  auto db = in.connect_migrated();
  // The zone's rule is the database's (calendar_problem); set keeps the zone it had when none is given.
  const std::string zone = in.has("zone") ? in.get<std::string>("zone") : calendar(*db, name).time_zone;
  const int version = must_be_new ? add_calendar(*db, name, zone, definition, acting_user(in))
                                  : set_calendar(*db, name, zone, definition, acting_user(in));
  print_version(in, name, version);
  return kOk;
}

ExitCode add_holidays(const Invocation& in) {
  const std::string name = calendar_name_of("holiday", in);
  if (!in.has("day")) throw InvalidInput("missing --day: a holiday (2026-12-24, 2026-12-28..2026-12-31, 12-25, last mon of may)");
  auto db = in.connect_migrated();
  print_version(in, name, add_calendar_holidays(*db, name, in.get<std::vector<std::string>>("day"), acting_user(in)));
  return kOk;
}

ExitCode list_calendars(const Invocation& in) {
  if (in.has("target")) throw InvalidInput("unexpected argument '" + in.get<std::string>("target") + "'");
  auto db = in.connect_for_reading();
  const std::vector<Calendar> all = calendars(*db);
  if (in.json()) {
    nlohmann::json out = nlohmann::json::array();
    for (const Calendar& c : all) out.push_back(to_json(c));
    std::cout << out << "\n";
    return kOk;
  }
  std::vector<std::vector<std::string>> rows;
  for (const Calendar& c : all) {
    rows.push_back({c.name, c.time_zone, std::to_string(c.version), format_time(c.changed_at), c.changed_by});
  }
  print_table({"NAME", "ZONE", "VERSION", "CHANGED_AT", "CHANGED_BY"}, rows);
  return kOk;
}

TimePoint from_of(const Invocation& in) { return optional_time_flag(in, "from").value_or(SystemClock().now()); }

ExitCode show_calendar(const Invocation& in) {
  const std::string name = calendar_name_of("show", in);
  auto db = in.connect_for_reading();
  const Calendar c = calendar(*db, name);
  const std::vector<Opening> openings = calendar_openings(*db, name, from_of(in), in.get<int>("openings"));
  if (in.json()) {
    nlohmann::json out = to_json(c);
    out["openings"] = nlohmann::json::array();
    for (const Opening& o : openings) out["openings"].push_back(to_json(o));
    std::cout << out << "\n";
    return kOk;
  }
  std::cout << "calendar " << c.name << ", version " << c.version << ", in " << c.time_zone << ", set "
            << format_time(c.changed_at) << " by " << c.changed_by << "\n";
  for (const auto& [key, value] : c.definition.items()) std::cout << "  " << key << ": " << value.dump() << "\n";
  std::cout << "open next, in " << c.time_zone << ":\n";
  for (const Opening& o : openings) std::cout << "  " << o.opens_wall << " to " << o.closes_wall << "\n";
  return kOk;
}

ExitCode next_time(const Invocation& in) {
  const std::string name = calendar_name_of("next", in);
  const TimePoint from = from_of(in);
  auto db = in.connect_for_reading();
  const CalendarTime t = in.has("in") ? business_after(*db, name, from, in.get<std::string>("in"))
                                      : business_next_open(*db, name, from);
  if (in.json()) std::cout << to_json(t) << "\n";
  else std::cout << format_time(t.at) << " (" << t.wall << ", calendar " << name << " version " << t.version << ")\n";
  return kOk;
}

}  // namespace

Command calendar_command() {
  return {
      .name = "calendar",
      .summary = "Calendars for business time: opening hours per weekday, holidays and special days in a time "
                 "zone, versioned, and the time a business delay ends (docs/business-time.md).",
      .usage = "calendar [list] [--json]\n"
               "       prescient calendar add NAME --zone ZONE --file FILE [--by WHO] [--json]\n"
               "       prescient calendar set NAME [--zone ZONE] --file FILE [--by WHO] [--json]\n"
               "       prescient calendar holiday NAME --day DAY [--day DAY]... [--by WHO] [--json]\n"
               "       prescient calendar show NAME [--from TIME] [--openings N] [--json]\n"
               "       prescient calendar next NAME [--from TIME] [--in DELAY] [--json]",
      .add_options =
          [](po::options_description& desc) {
            add_read_db_option(desc);
            desc.add_options()
                ("action", po::value<std::string>()->value_name("ACTION"),
                 "list (default), add, set, holiday, show or next")
                ("target", po::value<std::string>()->value_name("NAME"), "the calendar's name")
                ("zone", po::value<std::string>()->value_name("ZONE"),
                 "add, set: its IANA time zone (Europe/Berlin); set keeps the zone it had when not given")
                ("file", po::value<std::string>()->value_name("FILE"),
                 "add, set: its definition, a JSON object of hours, holidays and days ('-': standard input; "
                 "docs/business-time.md): each set makes its next version")
                ("day", po::value<std::vector<std::string>>()->value_name("DAY"),
                 "holiday: a day closed, added to its holidays (a next version): 2026-12-24, "
                 "2026-12-28..2026-12-31, 12-25 (every year) or 'last mon of may'; repeat for more")
                ("from", po::value<std::string>()->value_name("TIME"), "show, next: from this time (default: now)")
                ("in", po::value<std::string>()->value_name("DELAY"),
                 "next: the time a business delay after --from ends: 4h, 90m, 1h30m of open time, or 3bd "
                 "(business days: the same time of day that many open days later, or the next opening). "
                 "Without it: the next opening")
                ("openings", po::value<int>()->value_name("N")->default_value(5), "show: the next N openings")
                ("by", po::value<std::string>()->value_name("WHO"),
                 "add, set, holiday: recorded with the version (default: the OS user)")
                ("json", "print JSON");
          },
      .run =
          [](const Invocation& in) {
            const std::string action = in.has("action") ? in.get<std::string>("action") : "list";
            if (action == "add") return set_or_add(in, true);
            if (action == "set") return set_or_add(in, false);
            if (action == "holiday") return add_holidays(in);
            if (action == "show") return show_calendar(in);
            if (action == "next") return next_time(in);
            if (action != "list") {
              throw InvalidInput("unknown calendar action '" + action + "': use list, add, set, holiday, show or next");
            }
            return list_calendars(in);
          },
  };
}

}  // namespace prescient::cli

// prescient calendar: calendars for business time (docs/business-time.md), set, listed and asked.
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <map>

#include "check_options.hpp"
#include "config_file.hpp"
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

// A [calendar NAME] section of the config file: the calendar it wants, and the entries that said so, for messages.
struct CalendarSection {
  CalendarWanted wanted;
  const ConfigEntry* zone = nullptr;
  const ConfigEntry* file = nullptr;
};

// The definition a section's `file` names, read whole: a path relative to the config file's folder.
nlohmann::json definition_in(const ConfigFile& config, const ConfigEntry& entry) {
  const std::string where = config.where(entry) + ": file = " + one_line(entry.value) + ": ";
  std::filesystem::path path(entry.value);
  if (path.is_relative()) path = std::filesystem::path(config.path).parent_path() / path;
  std::ifstream in(path);
  if (!in) throw InvalidInput(where + "cannot read " + path.string() + ": " + std::strerror(errno));
  nlohmann::json definition;
  try {
    definition = nlohmann::json::parse(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  } catch (const nlohmann::json::parse_error& e) {
    throw InvalidInput(where + "not JSON (" + e.what() + ")");
  }
  if (!definition.is_object()) throw InvalidInput(where + "not a JSON object (hours, holidays, days)");
  return definition;
}

// The config file's calendars, in the order their sections first appear; each with one zone and one file.
std::vector<CalendarSection> calendar_sections(const ConfigFile& config) {
  std::vector<CalendarSection> sections;
  std::map<std::string, std::size_t> index;
  for (const ConfigEntry& entry : config.entries) {
    const auto name = calendar_section_name(entry.section);
    if (!name) continue;
    const auto [at, added] = index.try_emplace(*name, sections.size());
    if (added) sections.push_back({.wanted = {.name = *name, .time_zone = {}, .definition = {}}});
    CalendarSection& section = sections[at->second];
    const ConfigEntry*& slot = entry.key == "zone" ? section.zone : section.file;
    if (slot != nullptr) {
      throw InvalidInput(config.where(entry) + ": " + entry.key + " = " + one_line(entry.value) + ": calendar " +
                         one_line(*name) + " has its " + entry.key + " on line " + std::to_string(slot->line));
    }
    slot = &entry;
  }
  for (CalendarSection& section : sections) {
    const ConfigEntry& some = section.zone != nullptr ? *section.zone : *section.file;
    for (const char* key : {"zone", "file"}) {
      if ((key == std::string("zone") ? section.zone : section.file) == nullptr) {
        throw InvalidInput(config.where(some) + ": [calendar " + one_line(section.wanted.name) + "] has no " + key +
                           " (a calendar's section takes zone = Europe/Berlin and file = DEFINITION.json)");
      }
    }
    section.wanted.time_zone = section.zone->value;
    section.wanted.definition = definition_in(config, *section.file);
  }
  return sections;
}

std::string change_text(const CalendarApplied& applied) {
  switch (applied.change) {
    case CalendarApplied::Change::added:
      return "added, version " + std::to_string(applied.version);
    case CalendarApplied::Change::changed:
      return "set, version " + std::to_string(applied.version) + " (was " + std::to_string(applied.previous_version) + ")";
    case CalendarApplied::Change::unchanged:
      break;
  }
  return "unchanged, version " + std::to_string(applied.version);
}

// apply: makes the calendars of the config file's [calendar NAME] sections what they say, all or none.
ExitCode apply_calendar_sections(const Invocation& in) {
  if (in.has("target")) throw InvalidInput("unexpected argument '" + in.get<std::string>("target") + "': apply reads every [calendar NAME] section");
  if (!in.config_path()) {
    throw InvalidInput("calendar apply reads the config file's [calendar NAME] sections, and no config file was read "
                       "(--config FILE)");
  }
  const ConfigFile config = read_config_file(*in.config_path());
  const std::vector<CalendarSection> sections = calendar_sections(config);
  if (sections.empty()) throw InvalidInput("config file '" + config.path + "' has no [calendar NAME] section");
  std::vector<CalendarWanted> wanted;
  for (const CalendarSection& section : sections) wanted.push_back(section.wanted);
  auto db = in.connect_migrated();
  std::vector<CalendarApplied> applied;
  try {
    applied = apply_calendars(*db, wanted, acting_user(in));
  } catch (const CalendarRefused& e) {
    const CalendarSection& section = sections.at(e.index);
    const ConfigEntry& entry = e.part == CalendarRefused::Part::definition ? *section.file : *section.zone;
    const std::string shown = e.part == CalendarRefused::Part::name ? "[calendar " + one_line(section.wanted.name) + "]"
                                                                    : entry.key + " = " + one_line(entry.value);
    throw InvalidInput(config.where(entry) + ": " + shown + ": " + e.what() + " (nothing was set)");
  }
  if (in.json()) {
    static const char* const kChanges[] = {"added", "changed", "unchanged"};
    nlohmann::json out = nlohmann::json::array();
    for (const CalendarApplied& a : applied) {
      out.push_back({{"name", a.name},
                     {"change", kChanges[static_cast<int>(a.change)]},
                     {"version", a.version},
                     {"previous_version", a.previous_version == 0 ? nlohmann::json(nullptr) : nlohmann::json(a.previous_version)}});
    }
    std::cout << out << "\n";
    return kOk;
  }
  for (const CalendarApplied& a : applied) std::cout << "calendar " << a.name << ": " << change_text(a) << "\n";
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
               "       prescient calendar next NAME [--from TIME] [--in DELAY] [--json]\n"
               "       prescient calendar apply [--config FILE] [--by WHO] [--json]",
      .add_options =
          [](po::options_description& desc) {
            add_read_db_option(desc);
            desc.add_options()
                ("action", po::value<std::string>()->value_name("ACTION"),
                 "list (default), add, set, holiday, show, next or apply (the config file's [calendar NAME] "
                 "sections, each a zone and a file: a next version of each that differs, all or none)")
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
                 "add, set, holiday, apply: recorded with the version (default: the OS user)")
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
            if (action == "apply") return apply_calendar_sections(in);
            if (action != "list") {
              throw InvalidInput("unknown calendar action '" + action + "': use list, add, set, holiday, show, next or apply");
            }
            return list_calendars(in);
          },
  };
}

}  // namespace prescient::cli

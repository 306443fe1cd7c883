#include "config_file.hpp"

#include <sys/stat.h>

#include <boost/program_options/parsers.hpp>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <iterator>
#include <set>
#include <sstream>

#include "command.hpp"
#include "core/text_rules.hpp"
#include "prescient/database.hpp"
#include "prescient/errors.hpp"

namespace prescient::cli {

using namespace prescient::core;
namespace {

constexpr std::size_t kMaxBytes = 1 << 20;

// A line as Boost's parser sees it: from '#' on a comment, then trimmed of blanks.
std::string stripped(std::string line) {
  if (const auto hash = line.find('#'); hash != std::string::npos) line.erase(hash);
  const auto first = line.find_first_not_of(" \t\r\n");
  if (first == std::string::npos) return "";
  return line.substr(first, line.find_last_not_of(" \t\r\n") - first + 1);
}

std::string mode_text(mode_t mode) {
  char text[8];
  std::snprintf(text, sizeof text, "%04o", static_cast<unsigned>(mode & 07777));
  return text;
}

std::string file_text(const std::string& path, const struct stat& status) {
  if (S_ISDIR(status.st_mode)) throw InvalidInput("config file '" + path + "' is a directory");
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InvalidInput("cannot read config file '" + path + "': " + std::strerror(errno));
  std::string text;
  text.resize(kMaxBytes + 1);
  in.read(text.data(), static_cast<std::streamsize>(text.size()));
  text.resize(static_cast<std::size_t>(in.gcount()));
  if (text.size() > kMaxBytes) throw InvalidInput("config file '" + path + "' is larger than 1 MiB");
  return text;
}

const Command* command_named(const std::string& name) {
  for (const Command& c : all_commands()) {
    if (c.name == name) return &c;
  }
  return nullptr;
}

std::string command_names() {
  std::string names;
  for (const Command& c : all_commands()) names += (names.empty() ? "" : ", ") + c.name;
  return names;
}

bool takes_option(const Command& command, const std::string& option) {
  return options_of(command).find_nothrow(option, false) != nullptr;
}

bool some_command_takes(const std::string& option) {
  for (const Command& c : all_commands()) {
    if (takes_option(c, option)) return true;
  }
  return false;
}

// What the file says, line by line: the line of each `name = value` (in order, as Boost's parser hands
// the entries back) and the section it is under. Checked here, before Boost parses, so that a bad line is
// named by its number (Boost's errors carry none).
struct Assignment {
  int line;
  std::string section;
};

std::vector<Assignment> assignments_of(const std::string& path, const std::string& text) {
  std::vector<Assignment> assignments;
  std::istringstream lines(text);
  std::string raw, section;
  for (int number = 1; std::getline(lines, raw); ++number) {
    const std::string line = stripped(raw);
    if (line.empty()) continue;
    const std::string where = path + ":" + std::to_string(number) + ": ";
    if (line.front() == '[' && line.back() == ']') {
      section = line.substr(1, line.size() - 2);  // as Boost takes it: "[ daemon ]" is no command
      if (const auto calendar = calendar_section_name(section); calendar && calendar->empty()) {
        throw InvalidInput(where + "[" + one_line(section) + "]: a calendar's section names it: [calendar NAME]");
      } else if (!calendar && command_named(section) == nullptr) {
        throw InvalidInput(where + "[" + one_line(section) + "]: no command '" + one_line(section) +
                           "' (a section is a command: " + command_names() + ", or [calendar NAME])");
      }
      continue;
    }
    const auto equals = line.find('=');
    if (equals == std::string::npos) {
      throw InvalidInput(where + "'" + one_line(line) + "' is neither `name = value` nor `[command]`");
    }
    if (stripped(line.substr(0, equals)).empty()) throw InvalidInput(where + "no option name before '='");
    assignments.push_back({number, section});
  }
  return assignments;
}

}  // namespace

std::optional<std::string> calendar_section_name(const std::string& section) {
  constexpr std::string_view kWord = "calendar";
  if (section.size() <= kWord.size() || section.compare(0, kWord.size(), kWord) != 0 ||
      (section[kWord.size()] != ' ' && section[kWord.size()] != '\t')) {
    return std::nullopt;
  }
  const auto first = section.find_first_not_of(" \t", kWord.size());
  return first == std::string::npos ? std::string() : section.substr(first);
}

std::string ConfigFile::where(const ConfigEntry& entry) const { return path + ":" + std::to_string(entry.line); }

bool only_on_command_line(const std::string& option) {
  static const std::set<std::string> options{"help", "action", "target", "hash-secret", "config"};
  return options.contains(option);
}

ConfigFile read_config_file(const std::string& path) {
  struct stat status {};
  if (::stat(path.c_str(), &status) != 0) {
    throw InvalidInput("cannot read config file '" + path + "': " + std::strerror(errno));
  }
  const std::string text = file_text(path, status);
  ConfigFile file{.path = path, .entries = {}, .world_readable = (status.st_mode & S_IROTH) != 0};
  if (S_ISREG(status.st_mode) && (status.st_mode & S_IWOTH) != 0) {
    throw InvalidInput("config file '" + path + "' may be written by every user (mode " + mode_text(status.st_mode) +
                       "), so anyone could choose what prescient runs: chmod o-w '" + path + "'");
  }
  const std::vector<Assignment> assignments = assignments_of(path, text);
  std::istringstream in(text);
  const po::parsed_options parsed = po::parse_config_file(in, po::options_description(), true);
  if (parsed.options.size() != assignments.size()) {
    throw InvalidInput("config file '" + path + "': cannot tell its lines apart (" +
                       std::to_string(assignments.size()) + " assignments, " + std::to_string(parsed.options.size()) +
                       " options)");
  }
  for (std::size_t i = 0; i < assignments.size(); ++i) {
    const po::option& option = parsed.options[i];
    const std::string& section = assignments[i].section;
    // Boost names an entry "section.key"; the section is known, so the key is what follows it.
    const std::string key = section.empty() ? option.string_key : option.string_key.substr(section.size() + 1);
    ConfigEntry entry{.section = section, .key = key, .value = option.value.front(), .line = assignments[i].line};
    const std::string where = file.where(entry) + ": ";
    if (only_on_command_line(key)) {
      throw InvalidInput(where + "'" + one_line(key) + "' is given on the command line only, not in a config file");
    }
    if (const auto calendar = calendar_section_name(section)) {
      if (key != "zone" && key != "file") {
        throw InvalidInput(where + "unknown key '" + one_line(key) + "' for [calendar " + one_line(*calendar) +
                           "]: a calendar's section takes zone and file");
      }
    } else if (section.empty() ? !some_command_takes(key) : !takes_option(*command_named(section), key)) {
      throw InvalidInput(where + "unknown option '" + one_line(key) + "'" +
                         (section.empty() ? std::string(": no command takes it")
                                          : " for " + section + " (see prescient " + section + " --help)"));
    }
    if ((key == "db" || key == "read-db" || key == "listen-db") && file.world_readable && has_password(entry.value)) {
      throw InvalidInput(where + key + " holds a password, and '" + path + "' may be read by every user (mode " +
                         mode_text(status.st_mode) + "): chmod o-r '" + path +
                         "', or give the password in db-password-file");
    }
    file.entries.push_back(std::move(entry));
  }
  return file;
}

}  // namespace prescient::cli

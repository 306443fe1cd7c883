#pragma once
// The configuration file (/etc/prescient/prescient.conf, or --config FILE): the flags' options as
// `name = value` lines. Lines before any section are for every command that takes the option (as an
// environment variable is); lines under `[command]` are for that command alone; lines under `[calendar NAME]`
// are a calendar's, not options (calendar_section_name). Read with
// Boost.Program_options' config-file parser; each entry keeps its line, so that every error can name it.
#include <optional>
#include <string>
#include <vector>

namespace prescient::cli {

struct ConfigEntry {
  std::string section;  // a command's name, "calendar NAME" (calendar_section_name), or "" before any section
  std::string key;      // an option's name, without the dashes
  std::string value;
  int line = 0;
};

struct ConfigFile {
  std::string path;
  std::vector<ConfigEntry> entries;  // in the file's order
  bool world_readable = false;
  // "PATH:LINE", for messages.
  std::string where(const ConfigEntry& entry) const;
};

// Reads and checks the file: every section names a command, every key is an option of its section's
// command (of some command, before any section), no option that only a command line can give
// (`help`, `config`, ...), and no password written into a file every user may read. Throws InvalidInput,
// naming the file and the line, when it cannot be read or one of these does not hold. The values
// themselves are judged by the command that reads them.
ConfigFile read_config_file(const std::string& path);

// A section `[calendar NAME]` holds one calendar, its `zone` and its definition's `file`, for `prescient calendar
// apply` (docs/business-time.md): the NAME of such a section, nothing for any other.
std::optional<std::string> calendar_section_name(const std::string& section);

// The options a configuration file cannot set: they say what to do, not how (`help`, the positional
// words of `cron` and `jobs`, `web --hash-secret`), or where the file is.
bool only_on_command_line(const std::string& option);

}  // namespace prescient::cli

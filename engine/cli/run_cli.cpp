#include <soci/soci.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <iostream>
#include <optional>
#include <string_view>
#include <vector>

#include "core/text_rules.hpp"
#include "check_options.hpp"
#include "command.hpp"
#include "db/connection.hpp"
#include "ops/secret_file.hpp"
#include "option_sources.hpp"
#include "prescient/database.hpp"
#include "prescient/errors.hpp"
#include "prescient/log.hpp"
#include "prescient/migrations.hpp"
#include "prescient/version.hpp"

namespace prescient::cli {

using namespace prescient::db;
using namespace prescient::core;
using namespace prescient::ops;
namespace {

const Command* find_command(const std::string& name) {
  for (const Command& c : all_commands()) {
    if (c.name == name) return &c;
  }
  return nullptr;
}

void print_overview(std::ostream& out) {
  out << "prescient " << kVersion << ": deferred checks on PostgreSQL.\n\n"
      << "Usage: prescient [global options] <command> [options]\n"
      << "       prescient help <command>      (as prescient <command> --help)\n"
      << "       prescient --version\n\n"
      << "Commands:\n";
  for (const Command& c : all_commands()) {
    out << "  " << c.name << std::string(c.name.size() < 12 ? 12 - c.name.size() : 1, ' ') << c.summary << "\n";
  }
  out << "\nGlobal options, before or after the command, each with an environment variable that stands in\n"
      << "when the option is not given:\n";
  for (const GlobalOption& g : global_options()) {
    const std::string flag = "--" + std::string(g.name) + " " + g.value_name;
    out << "  " << flag << std::string(flag.size() < 25 ? 25 - flag.size() : 1, ' ') << g.variable << "\n";
  }
  out << "Without --db and PRESCIENT_DATABASE_URL, libpq's defaults apply (PGHOST, PGPORT, PGUSER, ...).\n"
      << "Give passwords in --db-password-file, PGPASSWORD or ~/.pgpass rather than on the command line.\n\n"
      << "Every option may also come from the config file (--config, else PRESCIENT_CONFIG, else\n"
      << PRESCIENT_DEFAULT_CONFIG << " when it exists): `name = value` lines, before any\n"
      << "section for every command that takes the option, under [command] for that command. A flag wins\n"
      << "over its variable, a variable over the file, the file over the default; `prescient config COMMAND`\n"
      << "shows where each value comes from.\n\n"
      << "Exit codes: 0 success, 1 runtime failure (database, I/O), 2 usage or bad input, 3 not found,\n"
      << "4 doctor found something that needs action.\n";
}

const GlobalOption* find_global(std::string_view name) {
  for (const GlobalOption& g : global_options()) {
    if (g.name == name) return &g;
  }
  return nullptr;
}

void configure_logging_of(const Invocation& in) {
  const LogFormat format = in.has("log-format") ? in.parsed("log-format", parse_log_format) : LogFormat::text;
  const std::string level = global_value(in, "log-level");
  try {
    configure_logging(format, level);
  } catch (const InvalidInput& e) {
    in.refuse("log-level", e.what());
  }
}

// How a command's options are used: to run it, or (`prescient config COMMAND ...`) to show them.
struct Use {
  bool show = false;
  bool json = false;  // show them as JSON
};

int run_command(const Command& command, const std::vector<std::string>& args, Use use) {
  const std::optional<Invocation> in = resolve_invocation(command, args);
  if (!in) {
    print_command_help(std::cout, command);
    return kOk;
  }
  configure_logging_of(*in);
  if (use.show) return show_config(*in, use.json || in->json());
  return command.run(*in);
}

int fail(int code, const std::string& message) {
  std::cerr << "prescient: " << message << "\n";
  return code;
}

// A command line split at the command's word. Global options may come before the command, as with git or
// kubectl; they are moved after it.
struct CommandLine {
  std::vector<std::string> globals;    // the global options given before the command, with their values
  std::optional<std::string> command;  // the command's word (or --help, --version); none if none was given
  std::vector<std::string> words;      // the words after it
};

// Throws InvalidInput on an option before the command that is not a global one, or one without its value.
CommandLine split_command_line(int argc, char** argv) {
  CommandLine line;
  int at = 1;
  for (; at < argc && std::string_view(argv[at]).starts_with("--"); ++at) {
    const std::string word = argv[at];
    if (word == "--help" || word == "--version") break;
    const std::string name = word.substr(2, word.find('=') == std::string::npos ? std::string::npos : word.find('=') - 2);
    const GlobalOption* global = name == "json" ? nullptr : find_global(name);
    if (name != "json" && global == nullptr) {
      throw InvalidInput("unknown option '" + word + "' before the command (see prescient --help)");
    }
    line.globals.push_back(word);
    if (global != nullptr && word.find('=') == std::string::npos) {
      if (at + 1 >= argc) throw InvalidInput("the option '" + word + "' requires a value (see prescient --help)");
      line.globals.emplace_back(argv[++at]);
    }
  }
  if (at < argc) {
    line.command = argv[at];
    line.words.assign(argv + at + 1, argv + argc);
  }
  return line;
}

// --help, --version and `help [COMMAND]` are answered here, with the exit status; any other command is not.
std::optional<int> answer_help(const CommandLine& line) {
  const std::string& first = *line.command;
  if (first == "--help" || first == "-h" || (first == "help" && line.words.empty())) {
    print_overview(std::cout);
    return kOk;
  }
  if (first == "--version") {
    std::cout << "prescient " << kVersion << " (schema " << latest_known_migration() << ")\n";
    return kOk;
  }
  if (first != "help") return std::nullopt;
  const std::string& topic = line.words.front();
  if (topic == "--completion") {
    print_bash_completion(std::cout);
    return kOk;
  }
  if (topic == "--man") {
    print_man_page(std::cout);
    return kOk;
  }
  const Command* command = find_command(topic);
  if (command == nullptr) return fail(kUsage, "no command '" + topic + "' to help with (see prescient --help)");
  print_command_help(std::cout, *command);
  return kOk;
}

// `prescient config COMMAND ARGS...` resolves COMMAND's options as running it would, and shows them. The
// command to show is the first word of `args` that is not an option (global options may come before it):
// when there is one, `command` becomes it, its word leaves `args`, and this returns true.
bool take_config_target(const Command*& command, std::vector<std::string>& args) {
  auto word = args.begin();
  while (word != args.end() && word->starts_with("--")) {
    const GlobalOption* global = find_global(word->substr(2));
    word += global != nullptr && word + 1 != args.end() ? 2 : 1;
  }
  if (word == args.end() || *word == "config") return false;
  const Command* shown = find_command(*word);
  if (shown == nullptr) return false;
  command = shown;
  args.erase(word);
  return true;
}

// Takes `word` out of `args`, if it is there (its first occurrence); says whether it was.
bool take_word(std::vector<std::string>& args, const std::string& word) {
  const auto found = std::find(args.begin(), args.end(), word);
  if (found == args.end()) return false;
  args.erase(found);
  return true;
}

}  // namespace

void Invocation::warn_if_password(const char* flag) const {
  if (has(flag) && has_password(get<std::string>(flag))) {
    spdlog::warn("the --{} connection string holds a password, which other users of this host can read (ps, "
                 "shell history): give it in --db-password-file, PGPASSWORD or ~/.pgpass instead",
                 flag);
  }
}

std::unique_ptr<soci::session> Invocation::connect() const {
  warn_if_password("db");
  return prescient::connect(database_url());
}

po::options_description options_of(const Command& command) {
  po::options_description desc("Options");
  command.add_options(desc);
  for (const GlobalOption& g : global_options()) {
    const std::string help = std::string(g.help) + " (default: $" + g.variable +
                             (*g.fallback ? std::string(", else ") + g.fallback : std::string()) + ")";
    desc.add_options()(g.name, po::value<std::string>()->value_name(g.value_name), help.c_str());
  }
  desc.add_options()("help,h", "show this help");
  return desc;
}

void print_command_help(std::ostream& out, const Command& command) {
  out << "Usage: prescient " << command.usage << "\n\n" << command.summary << "\n\n" << options_of(command);
}

const std::vector<GlobalOption>& global_options() {
  static const std::vector<GlobalOption> options{
      {"db", "URL", "PRESCIENT_DATABASE_URL", "database: libpq URI or key=value; without either, libpq's PG* variables", ""},
      {"log-level", "LEVEL", "PRESCIENT_LOG_LEVEL", "trace, debug, info, warn, error, critical or off", "info"},
      {"log-format", "FORMAT", "PRESCIENT_LOG_FORMAT", "text or json (one object per line)", "text"},
      {"config", "FILE", "PRESCIENT_CONFIG",
       "read options from FILE too (a flag and a variable win over it; /dev/null for none)",
       PRESCIENT_DEFAULT_CONFIG " when it exists"},
      {"db-password-file", "FILE", "PRESCIENT_DATABASE_PASSWORD_FILE",
       "the database password, from FILE (not readable by every user), for every connection the command makes",
       ""},
  };
  return options;
}

std::string Invocation::database_url() const { return with_password_file(has("db") ? get<std::string>("db") : ""); }

std::string Invocation::with_password_file(const std::string& url) const {
  if (!has("db-password-file")) return url;
  const std::string password = parsed("db-password-file", read_secret_file);
  try {
    return with_password(url, password);
  } catch (const InvalidInput& e) {
    refuse("db-password-file", e.what());
  }
}

std::unique_ptr<soci::session> Invocation::connect_migrated() const {
  auto db = connect();
  require_current_schema(*db);
  return db;
}

std::string Invocation::read_database_url() const {
  return has("read-db") ? with_password_file(get<std::string>("read-db")) : database_url();
}

bool Invocation::reads_from_replica() const { return has("read-db"); }

std::unique_ptr<soci::session> Invocation::connect_for_reading() const {
  if (!reads_from_replica()) return connect_migrated();
  warn_if_password("read-db");
  auto db = prescient::connect(read_database_url());
  require_current_schema(*db);
  return db;
}

int run_cli(int argc, char** argv) {
  CommandLine line;
  try {
    line = split_command_line(argc, argv);
  } catch (const InvalidInput& e) {
    return fail(kUsage, e.what());
  }
  if (!line.command) {
    print_overview(std::cerr);
    return kUsage;
  }
  if (const std::optional<int> answered = answer_help(line)) return *answered;
  const Command* command = find_command(*line.command);
  if (command == nullptr) {
    return fail(kUsage, (line.command->starts_with("-") ? "unknown option '" : "unknown command '") + *line.command +
                            "' (see prescient --help)");
  }
  std::vector<std::string> args = std::move(line.words);
  Use use;
  if (command->name == "config") use.show = take_config_target(command, args);
  args.insert(args.end(), line.globals.begin(), line.globals.end());
  if (use.show) use.json = take_word(args, "--json");
  try {
    return run_command(*command, args, use);
  } catch (const InvalidInput& e) {
    return fail(kUsage, e.what());
  } catch (const NotFound& e) {
    return fail(kNotFound, e.what());
  } catch (const soci::soci_error& e) {
    return fail(kFailure, "database error: " + one_line(e.what()));
  } catch (const std::exception& e) {
    return fail(kFailure, one_line(e.what()));
  }
}

}  // namespace prescient::cli

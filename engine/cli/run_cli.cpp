#include <soci/soci.h>
#include <spdlog/spdlog.h>

#include <iostream>
#include <string_view>

#include "core/text_rules.hpp"
#include "check_options.hpp"
#include "command.hpp"
#include "db/connection.hpp"
#include "prescient/database.hpp"
#include "prescient/errors.hpp"
#include "prescient/log.hpp"
#include "prescient/migrations.hpp"
#include "prescient/version.hpp"

namespace prescient::cli {
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
    out << "  " << flag << std::string(flag.size() < 20 ? 20 - flag.size() : 1, ' ') << g.variable << "\n";
  }
  out << "Without --db and PRESCIENT_DATABASE_URL, libpq's defaults apply (PGHOST, PGPORT, PGUSER, ...).\n"
      << "Give passwords through PGPASSWORD or ~/.pgpass rather than on the command line.\n\n"
      << "Exit codes: 0 success, 1 runtime failure (database, I/O), 2 usage or bad input, 3 not found.\n";
}

const GlobalOption* find_global(std::string_view name) {
  for (const GlobalOption& g : global_options()) {
    if (g.name == name) return &g;
  }
  return nullptr;
}

// The option's value: the flag's, else its environment variable's (when set and not empty), else the
// fallback.
std::string global_value(const po::variables_map& vm, const GlobalOption& g) {
  if (vm.count(g.name)) return vm[g.name].as<std::string>();
  return environment_value(g.variable).value_or(g.fallback);
}

// --json, or PRESCIENT_JSON for a command that prints JSON.
bool wants_json(const po::options_description& desc, const po::variables_map& vm) {
  if (desc.find_nothrow("json", false) == nullptr) return false;
  if (vm.count("json")) return true;
  const auto text = environment_value("PRESCIENT_JSON");
  if (!text) return false;
  if (*text == "1" || *text == "true" || *text == "yes") return true;
  if (*text == "0" || *text == "false" || *text == "no") return false;
  throw InvalidInput("invalid PRESCIENT_JSON '" + one_line(*text) + "': use 1, true, yes, 0, false or no");
}

int run_command(const Command& command, const std::vector<std::string>& args) {
  const po::options_description desc = options_of(command);
  // A command may take positional words: its action (`cron next`) and then what it acts on (`jobs pause
  // CLASS`); any other word is collected only to be named in the error.
  po::options_description stray;
  stray.add_options()("unexpected", po::value<std::vector<std::string>>());
  po::options_description all;
  all.add(desc).add(stray);
  po::positional_options_description positional;
  if (desc.find_nothrow("action", false) != nullptr) positional.add("action", 1);
  if (desc.find_nothrow("target", false) != nullptr) positional.add("target", 1);
  positional.add("unexpected", -1);
  po::variables_map vm;
  try {
    po::store(po::command_line_parser(args).options(all).positional(positional).run(), vm);
    // --help before notify(): a required option (purge --older-than, retry --id) must not hide the help.
    if (vm.count("help")) {
      print_command_help(std::cout, command);
      return kOk;
    }
    po::notify(vm);
  } catch (const po::error& e) {
    throw InvalidInput(std::string(e.what()) + " (see prescient " + command.name + " --help)");
  }
  if (vm.count("unexpected")) {
    throw InvalidInput("unexpected argument '" + vm["unexpected"].as<std::vector<std::string>>().front() +
                       "' (see prescient " + command.name + " --help)");
  }
  configure_logging(parse_log_format(global_value(vm, *find_global("log-format"))),
                    global_value(vm, *find_global("log-level")));
  const bool json = wants_json(desc, vm);
  return command.run(Invocation(std::move(vm), json));
}

int fail(int code, const std::string& message) {
  std::cerr << "prescient: " << message << "\n";
  return code;
}

}  // namespace

void Invocation::warn_if_password(const char* flag) const {
  if (has(flag) && has_password(get<std::string>(flag))) {
    spdlog::warn("the --{} connection string holds a password, which other users of this host can read (ps, "
                 "shell history): give it in PGPASSWORD or ~/.pgpass instead",
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
  };
  return options;
}

std::string Invocation::database_url() const {
  return resolve_database_url(has("db") ? std::optional(get<std::string>("db")) : std::nullopt);
}

std::unique_ptr<soci::session> Invocation::connect_migrated() const {
  auto db = connect();
  require_current_schema(*db);
  return db;
}

std::string Invocation::read_database_url() const {
  return flag_or_environment(*this, "read-db", "PRESCIENT_READ_DATABASE_URL").value_or(database_url());
}

bool Invocation::reads_from_replica() const {
  return flag_or_environment(*this, "read-db", "PRESCIENT_READ_DATABASE_URL").has_value();
}

std::unique_ptr<soci::session> Invocation::connect_for_reading() const {
  if (!reads_from_replica()) return connect_migrated();
  warn_if_password("read-db");
  auto db = prescient::connect(read_database_url());
  require_current_schema(*db);
  return db;
}

int run_cli(int argc, char** argv) {
  if (argc < 2) {
    print_overview(std::cerr);
    return kUsage;
  }
  // Global options may come before the command, as with git or kubectl: they are moved after it.
  std::vector<std::string> globals;
  int at = 1;
  for (; at < argc && std::string_view(argv[at]).starts_with("--"); ++at) {
    const std::string word = argv[at];
    if (word == "--help" || word == "--version") break;
    const std::string name = word.substr(2, word.find('=') == std::string::npos ? std::string::npos : word.find('=') - 2);
    const GlobalOption* global = name == "json" ? nullptr : find_global(name);
    if (name != "json" && global == nullptr) {
      return fail(kUsage, "unknown option '" + word + "' before the command (see prescient --help)");
    }
    globals.push_back(word);
    if (global != nullptr && word.find('=') == std::string::npos) {
      if (at + 1 >= argc) return fail(kUsage, "the option '" + word + "' requires a value (see prescient --help)");
      globals.emplace_back(argv[++at]);
    }
  }
  if (at >= argc) {
    print_overview(std::cerr);
    return kUsage;
  }
  const std::string first = argv[at];
  if (first == "--help" || first == "-h" || (first == "help" && at + 1 >= argc)) {
    print_overview(std::cout);
    return kOk;
  }
  if (first == "--version") {
    std::cout << "prescient " << kVersion << " (schema " << latest_known_migration() << ")\n";
    return kOk;
  }
  if (first == "help") {
    const std::string topic = argv[at + 1];
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
  const Command* command = find_command(first);
  if (command == nullptr) {
    return fail(kUsage, (first.starts_with("-") ? "unknown option '" : "unknown command '") + first +
                            "' (see prescient --help)");
  }
  std::vector<std::string> args(argv + at + 1, argv + argc);
  args.insert(args.end(), globals.begin(), globals.end());
  try {
    return run_command(*command, args);
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

#include <soci/soci.h>
#include <spdlog/spdlog.h>

#include <iostream>

#include "core/text_rules.hpp"
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
      << "Usage: prescient <command> [options]\n"
      << "       prescient <command> --help\n"
      << "       prescient --version\n\n"
      << "Commands:\n";
  for (const Command& c : all_commands()) {
    out << "  " << c.name << std::string(c.name.size() < 12 ? 12 - c.name.size() : 1, ' ') << c.summary << "\n";
  }
  out << "\nEvery command takes --db URL (a libpq URI or key=value string); without it\n"
      << "PRESCIENT_DATABASE_URL, and without that libpq's defaults (PGHOST, PGPORT, PGUSER, ...).\n"
      << "Give passwords through PGPASSWORD or ~/.pgpass rather than on the command line.\n\n"
      << "Exit codes: 0 success, 1 runtime failure (database, I/O), 2 usage or bad input, 3 not found.\n";
}

po::options_description options_of(const Command& command) {
  po::options_description desc("Options");
  command.add_options(desc);
  desc.add_options()
      ("db", po::value<std::string>()->value_name("URL"),
       "database: libpq URI or key=value (default: PRESCIENT_DATABASE_URL, then libpq's PG* variables)")
      ("log-level", po::value<std::string>()->value_name("LEVEL")->default_value("info"),
       "trace, debug, info, warn, error, critical or off")
      ("log-format", po::value<std::string>()->value_name("FORMAT")->default_value("text"),
       "text or json (one object per line)")
      ("help,h", "show this help");
  return desc;
}

int run_command(const Command& command, int argc, char** argv) {
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
    po::store(po::command_line_parser(argc, argv).options(all).positional(positional).run(), vm);
    // --help before notify(): a required option (purge --older-than, retry --id) must not hide the help.
    if (vm.count("help")) {
      std::cout << "Usage: prescient " << command.usage << "\n\n" << command.summary << "\n\n" << desc;
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
  configure_logging(parse_log_format(vm["log-format"].as<std::string>()), vm["log-level"].as<std::string>());
  return command.run(Invocation(std::move(vm)));
}

int fail(int code, const std::string& message) {
  std::cerr << "prescient: " << message << "\n";
  return code;
}

}  // namespace

std::unique_ptr<soci::session> Invocation::connect() const {
  if (has("db") && has_password(get<std::string>("db"))) {
    spdlog::warn("the --db connection string holds a password, which other users of this host can read (ps, "
                 "shell history): give it in PGPASSWORD or ~/.pgpass instead");
  }
  return prescient::connect(database_url());
}

std::string Invocation::database_url() const {
  return resolve_database_url(has("db") ? std::optional(get<std::string>("db")) : std::nullopt);
}

std::unique_ptr<soci::session> Invocation::connect_migrated() const {
  auto db = connect();
  require_current_schema(*db);
  return db;
}

int run_cli(int argc, char** argv) {
  if (argc < 2) {
    print_overview(std::cerr);
    return kUsage;
  }
  const std::string first = argv[1];
  if (first == "--help" || first == "-h" || first == "help") {
    print_overview(std::cout);
    return kOk;
  }
  if (first == "--version") {
    std::cout << "prescient " << kVersion << " (schema " << latest_known_migration() << ")\n";
    return kOk;
  }
  const Command* command = find_command(first);
  if (command == nullptr) {
    return fail(kUsage, (first.starts_with("-") ? "unknown option '" : "unknown command '") + first +
                            "' (see prescient --help)");
  }
  try {
    // argv[1] (the command) stands in for the program name, so options start at argv[2].
    return run_command(*command, argc - 1, argv + 1);
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

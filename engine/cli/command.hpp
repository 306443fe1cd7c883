#pragma once
// The CLI's building blocks: a command is a name, a one-line summary, its options and a run function.
#include <boost/program_options.hpp>

#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace soci {
class session;
}

namespace prescient::cli {

namespace po = boost::program_options;

enum ExitCode : int { kOk = 0, kFailure = 1, kUsage = 2, kNotFound = 3 };

// One parsed command line.
class Invocation {
 public:
  explicit Invocation(po::variables_map vm) : vm_(std::move(vm)) {}
  const po::variables_map& options() const { return vm_; }
  bool has(const char* name) const { return vm_.count(name) > 0; }
  template <class T>
  const T& get(const char* name) const { return vm_[name].as<T>(); }
  bool json() const { return has("json"); }
  // The database named by --db / PRESCIENT_DATABASE_URL / libpq defaults.
  std::string database_url() const;
  // Connects to database_url().
  std::unique_ptr<soci::session> connect() const;
  // connect(), then refuse a database whose schema does not match this binary.
  std::unique_ptr<soci::session> connect_migrated() const;

 private:
  po::variables_map vm_;
};

struct Command {
  std::string name;
  std::string summary;  // one line, for `prescient --help`
  std::string usage;    // the synopsis after "prescient "
  std::function<void(po::options_description&)> add_options;
  std::function<int(const Invocation&)> run;
};

// Every command, in the order `prescient --help` lists them.
const std::vector<Command>& all_commands();

Command migrate_command();
Command settings_command();
Command schedule_command();
Command cancel_command();
Command reschedule_command();
Command list_command();
Command show_command();
Command history_command();
Command run_slot_command();
Command sweep_command();
Command retry_command();
Command jobs_command();
Command daemon_command();
Command cron_command();
Command events_command();
Command purge_command();
Command stats_command();
Command web_command();

// Parses argv, runs the command, maps errors to exit codes with a one-line message on stderr.
int run_cli(int argc, char** argv);

}  // namespace prescient::cli

#pragma once
// The CLI's building blocks: a command is a name, a one-line summary, its options and a run function.
#include <boost/program_options.hpp>

#include <functional>
#include <iosfwd>
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
  Invocation(po::variables_map vm, bool json) : vm_(std::move(vm)), json_(json) {}
  const po::variables_map& options() const { return vm_; }
  bool has(const char* name) const { return vm_.count(name) > 0; }
  template <class T>
  const T& get(const char* name) const { return vm_[name].as<T>(); }
  // --json, or PRESCIENT_JSON set true, for a command that prints JSON.
  bool json() const { return json_; }
  // The database named by --db / PRESCIENT_DATABASE_URL / libpq defaults.
  std::string database_url() const;
  // Warns when the connection string given as --<flag> holds a password (readable by others: ps, history).
  void warn_if_password(const char* flag) const;
  // Connects to database_url().
  std::unique_ptr<soci::session> connect() const;
  // connect(), then refuse a database whose schema does not match this binary.
  std::unique_ptr<soci::session> connect_migrated() const;
  // For a command that only reads: --read-db, else PRESCIENT_READ_DATABASE_URL, else database_url().
  std::string read_database_url() const;
  bool reads_from_replica() const;
  // connect_migrated() on read_database_url().
  std::unique_ptr<soci::session> connect_for_reading() const;

 private:
  po::variables_map vm_;
  bool json_;
};

struct Command {
  std::string name;
  std::string summary;  // one line, for `prescient --help`
  std::string usage;    // the synopsis after "prescient "
  std::function<void(po::options_description&)> add_options;
  std::function<int(const Invocation&)> run;
};

// An option every command takes, before or after the command word, with the environment variable that
// stands in for it. (--json too moves from before the command; it is the command's own option, and
// PRESCIENT_JSON stands in for it.)
struct GlobalOption {
  const char* name;        // without the dashes
  const char* value_name;  // every global option takes a value
  const char* variable;
  const char* help;
  const char* fallback;  // "" for none
};
const std::vector<GlobalOption>& global_options();

// A command's options, the global ones included, as its --help shows them.
po::options_description options_of(const Command& command);
void print_command_help(std::ostream& out, const Command& command);
// The CLI described for other tools, from the same tables (cli_reference.cpp): a bash completion script
// and a man page in roff.
void print_bash_completion(std::ostream& out);
void print_man_page(std::ostream& out);

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
Command limits_command();
Command daemon_command();
Command cron_command();
Command events_command();
Command purge_command();
Command stats_command();
Command web_command();

// Parses argv, runs the command, maps errors to exit codes with a one-line message on stderr.
int run_cli(int argc, char** argv);

}  // namespace prescient::cli

#pragma once
// The CLI's building blocks: a command is a name, a one-line summary, its options and a run function.
#include <boost/program_options.hpp>

#include <functional>
#include <iosfwd>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "prescient/errors.hpp"

namespace soci {
class session;
}

namespace prescient::cli {

namespace po = boost::program_options;

// kNeedsAction: `doctor` found a problem (the database answered; nothing failed).
enum ExitCode : int { kOk = 0, kFailure = 1, kUsage = 2, kNotFound = 3, kNeedsAction = 4 };

struct Command;

// Where an option's value came from: the sources in order of precedence.
struct OptionOrigin {
  enum class Kind { flag, variable, file, fallback };
  Kind kind = Kind::fallback;
  std::string where;  // the variable's name, or FILE:LINE
  // "flag", "PRESCIENT_...", "FILE:LINE" or "default".
  std::string describe() const;
};

// One invocation's options: its flags, then the environment variables that stand in for some of them,
// then the configuration file, then the defaults (option_sources.cpp).
class Invocation {
 public:
  Invocation(const Command& command, std::vector<std::string> args, po::variables_map vm,
             std::map<std::string, OptionOrigin> origins, std::optional<std::string> config_path, bool json);
  const Command& command() const { return *command_; }
  const po::variables_map& options() const { return vm_; }
  bool has(const char* name) const { return vm_.count(name) > 0; }
  template <class T>
  const T& get(const char* name) const { return vm_[name].as<T>(); }
  // Where the option's value came from ("default" when nothing set it).
  OptionOrigin origin(const std::string& name) const;
  // The configuration file read, if any.
  const std::optional<std::string>& config_path() const { return config_path_; }
  // The options as they would be resolved now: the same flags, the variables and the file read again
  // (for a reload on SIGHUP). Throws InvalidInput as the first resolution does.
  Invocation reread() const;

  // Refuses the option's value: throws InvalidInput with the message, put after where the value came from
  // when it was not a flag ("FILE:LINE: name = value: ", "PRESCIENT_...=value: ").
  [[noreturn]] void refuse(const std::string& name, const std::string& message) const;
  // parse(the option's text), a refusal of it (InvalidInput) named as refuse() names it.
  template <class Parse>
  auto parsed(const char* name, Parse parse) const -> decltype(parse(std::string())) {
    try {
      return parse(get<std::string>(name));
    } catch (const InvalidInput& e) {
      refuse(name, e.what());
    }
  }

  // --json, or PRESCIENT_JSON set true, for a command that prints JSON.
  bool json() const { return json_; }
  // The database named by --db / PRESCIENT_DATABASE_URL / libpq defaults, with the password of
  // --db-password-file when one is given.
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
  // A connection string of this invocation's (--read-db, --listen-db) with the password of
  // --db-password-file when one is given and the string holds none.
  std::string with_password_file(const std::string& url) const;

 private:
  const Command* command_;
  std::vector<std::string> args_;
  po::variables_map vm_;
  std::map<std::string, OptionOrigin> origins_;
  std::optional<std::string> config_path_;
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
Command calendar_command();
Command daemon_command();
Command cron_command();
Command doctor_command();
Command events_command();
Command purge_command();
Command stats_command();
Command web_command();
Command config_command();
// `prescient config COMMAND ...`: the options COMMAND would run with, and where each came from.
int show_config(const Invocation& in, bool json);

// Parses argv, runs the command, maps errors to exit codes with a one-line message on stderr.
int run_cli(int argc, char** argv);

}  // namespace prescient::cli

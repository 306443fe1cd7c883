#pragma once
// Runs the real prescient binary (or another program, such as a worker client) as a child process and
// captures what it prints.
#include <sys/types.h>

#include <map>
#include <string>
#include <vector>

namespace prescient::testing {

struct ProcessResult {
  int exit_code = -1;  // or 128 + signal
  std::string out;
  std::string err;
};

// env: variables to set (an empty value unsets); the rest of the environment is inherited.
ProcessResult run_prescient(const std::vector<std::string>& args, const std::map<std::string, std::string>& env = {},
                            const std::string& stdin_text = "");

// The environment of a command run with no database named: PRESCIENT_DATABASE_URL unset.
inline std::map<std::string, std::string> no_database_env() { return {{"PRESCIENT_DATABASE_URL", ""}}; }

// A new directory (under /tmp) holding one executable `name` with the shell script `script`, for the
// command class's --commands-dir. Returns the directory.
std::string commands_dir_with(const std::string& name, const std::string& script);

// Starts `command` (its first element the program's path) in the background, with `env` set over this
// process's environment (an empty value unsets), its standard output to `stdout_path`, its standard error
// to `stderr_path`. Returns its pid.
pid_t start_process(const std::vector<std::string>& command, const std::map<std::string, std::string>& env = {},
                    const std::string& stdout_path = "/dev/null", const std::string& stderr_path = "/dev/null");
// Starts the prescient binary in the background, its standard output to `stdout_path`, its standard
// error to `stderr_path`. Returns its pid.
pid_t start_prescient(const std::vector<std::string>& args, const std::string& stdout_path = "/dev/null",
                      const std::string& stderr_path = "/dev/null");
// Waits for it; returns its exit code, or 128 + the signal that ended it.
int wait_for(pid_t pid);

// args followed by --db url.
std::vector<std::string> with_db(std::vector<std::string> args, const std::string& url);

// The lines of a text, without their newlines.
std::vector<std::string> lines_of(const std::string& text);

// A command line the CLI must refuse as bad input: exit 2 and one line on stderr holding `names`.
struct Refused {
  std::vector<std::string> args;
  const char* names;
};
// Runs each with --db url and checks that refusal (Catch checks, one per case).
void check_refused(std::initializer_list<Refused> cases, const std::string& url);

}  // namespace prescient::testing

#include "process.hpp"

#include <catch2/catch.hpp>

#include <fcntl.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <stdexcept>

extern char** environ;

namespace prescient::testing {
namespace {

std::string temp_path(const char* tag) {
  std::string path = std::string("/tmp/prescient-test-") + tag + "-XXXXXX";
  const int fd = ::mkstemp(path.data());
  if (fd < 0) throw std::runtime_error("mkstemp failed");
  ::close(fd);
  return path;
}

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  ::unlink(path.c_str());
  return text.str();
}

// This process's environment with `env` set over it (an empty value unsets), as NAME=value lines.
std::vector<std::string> environment_with(const std::map<std::string, std::string>& env) {
  std::map<std::string, std::string> merged;
  for (char** e = environ; *e != nullptr; ++e) {
    const char* eq = std::strchr(*e, '=');
    if (eq != nullptr) merged[std::string(*e, static_cast<std::size_t>(eq - *e))] = eq + 1;
  }
  for (const auto& [key, value] : env) {
    if (value.empty()) merged.erase(key);
    else merged[key] = value;
  }
  std::vector<std::string> env_text;
  for (const auto& [key, value] : merged) env_text.push_back(key + "=" + value);
  return env_text;
}

}  // namespace

ProcessResult run_prescient(const std::vector<std::string>& args, const std::map<std::string, std::string>& env,
                            const std::string& stdin_text) {
  const std::string in_path = temp_path("in"), out_path = temp_path("out"), err_path = temp_path("err");
  std::ofstream(in_path, std::ios::binary) << stdin_text;

  std::vector<std::string> argv_text{PRESCIENT_BIN};
  argv_text.insert(argv_text.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& a : argv_text) argv.push_back(a.data());
  argv.push_back(nullptr);

  std::vector<std::string> env_text = environment_with(env);
  std::vector<char*> envp;
  for (auto& e : env_text) envp.push_back(e.data());
  envp.push_back(nullptr);

  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, in_path.c_str(), O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&actions, 1, out_path.c_str(), O_WRONLY | O_TRUNC, 0);
  posix_spawn_file_actions_addopen(&actions, 2, err_path.c_str(), O_WRONLY | O_TRUNC, 0);
  pid_t pid = 0;
  const int rc = posix_spawn(&pid, argv[0], &actions, nullptr, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0) throw std::runtime_error(std::string("cannot start ") + PRESCIENT_BIN + ": " + std::strerror(rc));
  int status = 0;
  ::waitpid(pid, &status, 0);
  ::unlink(in_path.c_str());

  ProcessResult result;
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  result.out = slurp(out_path);
  result.err = slurp(err_path);
  return result;
}

pid_t start_process(const std::vector<std::string>& command, const std::map<std::string, std::string>& env,
                    const std::string& stdout_path, const std::string& stderr_path) {
  std::vector<std::string> argv_text = command;
  std::vector<char*> argv;
  for (auto& a : argv_text) argv.push_back(a.data());
  argv.push_back(nullptr);
  std::vector<std::string> env_text = environment_with(env);
  std::vector<char*> envp;
  for (auto& e : env_text) envp.push_back(e.data());
  envp.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 1, stdout_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_addopen(&actions, 2, stderr_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  pid_t pid = 0;
  const int rc = posix_spawn(&pid, argv[0], &actions, nullptr, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0) throw std::runtime_error("cannot start " + command.at(0) + ": " + std::strerror(rc));
  return pid;
}

pid_t start_prescient(const std::vector<std::string>& args, const std::string& stdout_path,
                      const std::string& stderr_path) {
  std::vector<std::string> command{PRESCIENT_BIN};
  command.insert(command.end(), args.begin(), args.end());
  return start_process(command, {}, stdout_path, stderr_path);
}

int wait_for(pid_t pid) {
  int status = 0;
  ::waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

std::vector<std::string> with_db(std::vector<std::string> args, const std::string& url) {
  args.push_back("--db");
  args.push_back(url);
  return args;
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

std::string commands_dir_with(const std::string& name, const std::string& script) {
  std::string dir = "/tmp/prescient-commands-XXXXXX";
  if (::mkdtemp(dir.data()) == nullptr) throw std::runtime_error("mkdtemp failed: " + std::string(std::strerror(errno)));
  const std::string path = dir + "/" + name;
  std::ofstream(path) << script;
  if (::chmod(path.c_str(), 0755) != 0) throw std::runtime_error("chmod " + path + " failed");
  return dir;
}

void check_refused(std::initializer_list<Refused> cases, const std::string& url) {
  for (const Refused& c : cases) {
    INFO(Catch::rangeToString(c.args));
    const ProcessResult r = run_prescient(with_db(c.args, url));
    CHECK(r.exit_code == 2);
    CHECK_THAT(r.err, Catch::Contains(c.names));
    CHECK(lines_of(r.err).size() == 1);
  }
}

}  // namespace prescient::testing

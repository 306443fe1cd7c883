#include "command_job.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <algorithm>
#include <cstring>
#include <stdexcept>
#include <thread>
#include <vector>

#include "prescient/time_text.hpp"

namespace prescient {
namespace {

using Steady = std::chrono::steady_clock;

bool plain_file_name(const std::string& name) {
  if (name.empty() || name.size() > 255 || name.front() == '.') return false;
  for (const char c : name) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
                    c == '-' || c == '.';
    if (!ok) return false;
  }
  return true;
}

std::string trimmed(std::string text) {
  const auto first = text.find_first_not_of(" \t\r\n");
  if (first == std::string::npos) return "";
  const auto last = text.find_last_not_of(" \t\r\n");
  return text.substr(first, last - first + 1);
}

std::string last_line(const std::string& text) {
  const std::string t = trimmed(text);
  const auto newline = t.find_last_of('\n');
  return newline == std::string::npos ? t : t.substr(newline + 1);
}

// Waits until the child has exited (without reaping it) or the deadline passes; true when it exited.
bool exits_by(pid_t pid, Steady::time_point deadline) {
  auto pause = std::chrono::milliseconds{1};
  while (true) {
    siginfo_t info{};
    if (::waitid(P_PID, static_cast<id_t>(pid), &info, WEXITED | WNOHANG | WNOWAIT) == 0 && info.si_pid == pid) {
      return true;
    }
    if (Steady::now() >= deadline) return false;
    std::this_thread::sleep_for(std::min(pause, std::chrono::duration_cast<std::chrono::milliseconds>(
                                                    deadline - Steady::now() + std::chrono::milliseconds{1})));
    pause = std::min(pause * 2, std::chrono::milliseconds{50});
  }
}

class Pipe {
 public:
  Pipe() {
    if (::pipe2(fds_, O_CLOEXEC) != 0) throw std::runtime_error(std::string("pipe: ") + std::strerror(errno));
  }
  ~Pipe() {
    close_read();
    close_write();
  }
  int read_end() const { return fds_[0]; }
  int write_end() const { return fds_[1]; }
  void close_read() { close(0); }
  void close_write() { close(1); }

 private:
  void close(int i) {
    if (fds_[i] >= 0) ::close(fds_[i]);
    fds_[i] = -1;
  }
  int fds_[2] = {-1, -1};
};

}  // namespace

JobResult CommandJob::run(const Check& check, JobContext& ctx) {
  if (!allowed_dir_) {
    throw std::runtime_error("the command class is disabled: start the runner with --commands DIR");
  }
  const auto command = check.payload.find("command");
  if (command == check.payload.end() || !command->is_string() || !plain_file_name(command->get<std::string>())) {
    throw std::runtime_error("payload.command must be a plain file name in the commands directory");
  }
  const std::string path = *allowed_dir_ + "/" + command->get<std::string>();
  struct stat info{};
  if (::stat(path.c_str(), &info) != 0 || !S_ISREG(info.st_mode) || ::access(path.c_str(), X_OK) != 0) {
    throw std::runtime_error("no executable " + command->get<std::string>() + " in the commands directory");
  }
  std::vector<std::string> args{path};
  if (const auto extra = check.payload.find("args"); extra != check.payload.end()) {
    if (!extra->is_array()) throw std::runtime_error("payload.args must be an array of strings");
    for (const auto& a : *extra) {
      if (!a.is_string()) throw std::runtime_error("payload.args must be an array of strings");
      args.push_back(a.get<std::string>());
    }
  }
  std::vector<std::string> env{"PATH=/usr/local/bin:/usr/bin:/bin",
                               "PRESCIENT_CHECK_ID=" + std::to_string(check.id),
                               "PRESCIENT_JOB=" + check.job,
                               "PRESCIENT_ENTITY=" + check.entity_name,
                               "PRESCIENT_ENTITY_KEY=" + check.entity_key,
                               "PRESCIENT_JOB_KEY=" + check.job_key.value_or(""),
                               "PRESCIENT_PAYLOAD=" + check.payload.dump(),
                               "PRESCIENT_CHECK_COUNT=" + std::to_string(check.check_count),
                               "PRESCIENT_SLOT=" + format_time(check.slot)};
  std::vector<char*> argv, envp;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  for (auto& e : env) envp.push_back(e.data());
  envp.push_back(nullptr);

  Pipe out, err;
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&actions, out.write_end(), 1);
  posix_spawn_file_actions_adddup2(&actions, err.write_end(), 2);
  posix_spawnattr_t attributes;
  posix_spawnattr_init(&attributes);
  posix_spawnattr_setflags(&attributes, POSIX_SPAWN_SETPGROUP);  // its own group: a timeout kills its children too
  posix_spawnattr_setpgroup(&attributes, 0);
  pid_t pid = 0;
  const int rc = posix_spawn(&pid, path.c_str(), &actions, &attributes, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attributes);
  if (rc != 0) throw std::runtime_error("cannot start " + command->get<std::string>() + ": " + std::strerror(rc));
  out.close_write();
  err.close_write();

  std::string stdout_text, stderr_text;
  const auto deadline = Steady::now() + ctx.timeout();
  bool timed_out = false;
  pollfd fds[2] = {{out.read_end(), POLLIN, 0}, {err.read_end(), POLLIN, 0}};
  while (fds[0].fd >= 0 || fds[1].fd >= 0) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Steady::now()).count();
    if (left <= 0) {
      timed_out = true;
      break;
    }
    if (::poll(fds, 2, static_cast<int>(left)) < 0 && errno != EINTR) break;
    for (int i = 0; i < 2; ++i) {
      if (fds[i].fd < 0 || fds[i].revents == 0) continue;
      char buffer[4096];
      const ssize_t n = ::read(fds[i].fd, buffer, sizeof buffer);
      if (n <= 0) {
        fds[i].fd = -1;
        continue;
      }
      std::string& sink = i == 0 ? stdout_text : stderr_text;
      if (sink.size() < 65536) sink.append(buffer, static_cast<std::size_t>(n));
    }
  }
  // The pipes close when the child and all it started have closed them, but a child may close them and
  // keep running: its exit is awaited within the same deadline. It is not reaped yet: while the leader is
  // a zombie its process group id cannot be taken by another group, so the kill below reaches only this
  // command's group: everything at the timeout, and otherwise whatever it left running behind it.
  if (!timed_out) timed_out = !exits_by(pid, deadline);
  ::kill(-pid, SIGKILL);
  int status = 0;
  ::waitpid(pid, &status, 0);
  const std::string name = command->get<std::string>();
  if (timed_out) throw std::runtime_error(name + " was killed at the timeout");
  if (WIFSIGNALED(status)) throw std::runtime_error(name + " was killed by signal " + std::to_string(WTERMSIG(status)));
  if (WEXITSTATUS(status) != 0) {
    throw std::runtime_error(name + " exited with " + std::to_string(WEXITSTATUS(status)) +
                             (trimmed(stderr_text).empty() ? "" : ": " + last_line(stderr_text)));
  }
  const std::string answer = trimmed(stdout_text);
  if (answer.empty()) return {};
  try {
    return {.next = parse_time(answer)};
  } catch (const std::exception&) {
    throw std::runtime_error(name + " printed '" + answer.substr(0, 100) + "', not a time (or nothing)");
  }
}

}  // namespace prescient

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

namespace prescient::jobs {
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

// What to start: the program, its arguments and its whole environment (nothing of the runner's).
struct Invocation {
  std::string name;  // as the payload names it
  std::string path;
  std::vector<std::string> args;  // args[0] is the path
  std::vector<std::string> env;
};

// The check's payload made an invocation of a program in `dir`; throws (the check's failure) on a name
// that is not a plain file name, a program that is not there or not executable, or arguments not strings.
Invocation invocation_of(const Check& check, const std::string& dir) {
  const auto command = check.payload.find("command");
  if (command == check.payload.end() || !command->is_string() || !plain_file_name(command->get<std::string>())) {
    throw std::runtime_error("payload.command must be a plain file name in the commands directory");
  }
  Invocation call{.name = command->get<std::string>()};
  call.path = dir + "/" + call.name;
  struct stat info{};
  if (::stat(call.path.c_str(), &info) != 0 || !S_ISREG(info.st_mode) || ::access(call.path.c_str(), X_OK) != 0) {
    throw std::runtime_error("no executable " + call.name + " in the commands directory");
  }
  call.args.push_back(call.path);
  if (const auto extra = check.payload.find("args"); extra != check.payload.end()) {
    if (!extra->is_array()) throw std::runtime_error("payload.args must be an array of strings");
    for (const auto& a : *extra) {
      if (!a.is_string()) throw std::runtime_error("payload.args must be an array of strings");
      call.args.push_back(a.get<std::string>());
    }
  }
  call.env = {"PATH=/usr/local/bin:/usr/bin:/bin",
              "PRESCIENT_CHECK_ID=" + std::to_string(check.id),
              "PRESCIENT_JOB=" + check.job,
              "PRESCIENT_ENTITY=" + check.entity_name,
              "PRESCIENT_ENTITY_KEY=" + check.entity_key,
              "PRESCIENT_JOB_KEY=" + check.job_key.value_or(""),
              "PRESCIENT_PAYLOAD=" + check.payload.dump(),
              "PRESCIENT_CHECK_COUNT=" + std::to_string(check.check_count),
              "PRESCIENT_SLOT=" + format_time(check.slot)};
  // The run's trace context, as OpenTelemetry's environment carriers name it (docs/design.md, "Trace
  // context"): a traced program continues the trace under this run's span.
  if (check.traceparent) call.env.push_back("TRACEPARENT=" + *check.traceparent);
  if (check.traceparent && check.tracestate) call.env.push_back("TRACESTATE=" + *check.tracestate);
  return call;
}

// Starts the program in a process group of its own (so a timeout kills its children too), stdin from
// /dev/null, stdout and stderr into the pipes.
pid_t spawn(Invocation& call, Pipe& out, Pipe& err) {
  std::vector<char*> argv, envp;
  for (auto& a : call.args) argv.push_back(a.data());
  argv.push_back(nullptr);
  for (auto& e : call.env) envp.push_back(e.data());
  envp.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&actions, out.write_end(), 1);
  posix_spawn_file_actions_adddup2(&actions, err.write_end(), 2);
  posix_spawnattr_t attributes;
  posix_spawnattr_init(&attributes);
  posix_spawnattr_setflags(&attributes, POSIX_SPAWN_SETPGROUP);
  posix_spawnattr_setpgroup(&attributes, 0);
  pid_t pid = 0;
  const int rc = posix_spawn(&pid, call.path.c_str(), &actions, &attributes, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attributes);
  if (rc != 0) throw std::runtime_error("cannot start " + call.name + ": " + std::strerror(rc));
  out.close_write();
  err.close_write();
  return pid;
}

// What the program printed (the first 64 KiB of each stream), and whether the deadline came first.
struct Output {
  std::string out, err;
  bool timed_out = false;
};

// Reads both pipes until they close or the deadline passes.
Output pump(Pipe& out, Pipe& err, Steady::time_point deadline) {
  Output printed;
  pollfd fds[2] = {{out.read_end(), POLLIN, 0}, {err.read_end(), POLLIN, 0}};
  while (fds[0].fd >= 0 || fds[1].fd >= 0) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Steady::now()).count();
    if (left <= 0) {
      printed.timed_out = true;
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
      std::string& sink = i == 0 ? printed.out : printed.err;
      if (sink.size() < 65536) sink.append(buffer, static_cast<std::size_t>(n));
    }
  }
  return printed;
}

// Waits for the program's exit within the deadline, kills what is left of its group, and reaps it;
// answers its wait status. The pipes close when the child and all it started have closed them, but a
// child may close them and keep running: its exit is awaited within the same deadline. It is not reaped
// before the kill: while the leader is a zombie its process group id cannot be taken by another group,
// so the kill reaches only this command's group: everything at the timeout, and otherwise whatever it
// left running behind it.
int reap(pid_t pid, Steady::time_point deadline, Output& printed) {
  if (!printed.timed_out) printed.timed_out = !exits_by(pid, deadline);
  ::kill(-pid, SIGKILL);
  int status = 0;
  ::waitpid(pid, &status, 0);
  return status;
}

// A JSON object printed as the answer: {"next": TIME or null, "result": any JSON}, a result kept with the run
// (docs/design.md, "Results"). A time is never an object, so the old answers read as before.
JobResult json_answer_of(const std::string& name, const std::string& answer) {
  const auto refused = [&](const std::string& why) {
    return std::runtime_error(name + " printed a JSON answer that " + why);
  };
  nlohmann::json doc;
  try {
    doc = nlohmann::json::parse(answer);
  } catch (const nlohmann::json::exception&) {
    throw refused("is not JSON (or is cut at 64 KiB): '" + answer.substr(0, 100) + "'");
  }
  JobResult result;
  for (const auto& [key, value] : doc.items()) {
    if (key == "result") {
      result.result = value;
    } else if (key == "next") {
      if (value.is_null()) continue;
      if (!value.is_string()) throw refused("has a next that is neither a time nor null");
      try {
        result.next = parse_time(value.get<std::string>());
      } catch (const std::exception& e) {
        throw refused(std::string("has a next that is not a time: ") + e.what());
      }
    } else {
      throw refused("has an unknown key '" + key.substr(0, 100) + "' (next, result)");
    }
  }
  return result;
}

// The program's answer: a time printed on stdout, nothing (done), or a JSON object (json_answer_of). A
// timeout, a signal, an exit other than 0 (with stderr's last line) or other printed text is the check's
// failure.
JobResult answer_of(const std::string& name, int status, const Output& printed) {
  if (printed.timed_out) throw std::runtime_error(name + " was killed at the timeout");
  if (WIFSIGNALED(status)) throw std::runtime_error(name + " was killed by signal " + std::to_string(WTERMSIG(status)));
  if (WEXITSTATUS(status) != 0) {
    throw std::runtime_error(name + " exited with " + std::to_string(WEXITSTATUS(status)) +
                             (trimmed(printed.err).empty() ? "" : ": " + last_line(printed.err)));
  }
  const std::string answer = trimmed(printed.out);
  if (answer.empty()) return {};
  if (answer.front() == '{') return json_answer_of(name, answer);
  try {
    return {.next = parse_time(answer)};
  } catch (const std::exception&) {
    throw std::runtime_error(name + " printed '" + answer.substr(0, 100) + "', not a time (or nothing)");
  }
}

}  // namespace

JobResult CommandJob::run(const Check& check, JobContext& ctx) {
  if (!allowed_dir_) {
    throw std::runtime_error("the command class is disabled: start the runner with --commands DIR");
  }
  Invocation call = invocation_of(check, *allowed_dir_);
  Pipe out, err;
  const pid_t pid = spawn(call, out, err);
  const auto deadline = Steady::now() + ctx.timeout();
  Output printed = pump(out, err, deadline);
  const int status = reap(pid, deadline, printed);
  return answer_of(call.name, status, printed);
}

}  // namespace prescient::jobs

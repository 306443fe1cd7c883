#include "chromium.hpp"

#include <signal.h>
#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <thread>
#include <vector>

#include "web/web_auth.hpp"

extern char** environ;

namespace prescient::testing {
Chromium::Chromium(int width, int height) {
  const char* binary = std::getenv("PRESCIENT_CHROMIUM");
  const std::string program = binary ? binary : "/usr/bin/chromium";
  char dir[] = "/tmp/prescient-chromium-XXXXXX";
  if (!::mkdtemp(dir)) throw std::runtime_error("cannot make a profile directory for Chromium");
  profile_dir_ = dir;
  int commands[2], answers[2];
  if (::pipe(commands) != 0 || ::pipe(answers) != 0) throw std::runtime_error("cannot make pipes for Chromium");
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, commands[0], 3);  // Chromium reads commands from fd 3
  posix_spawn_file_actions_adddup2(&actions, answers[1], 4);   // and writes answers to fd 4
  posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0);
  posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0);
  std::vector<std::string> args{program, "--headless", "--remote-debugging-pipe", "--disable-gpu", "--no-first-run",
                                "--no-default-browser-check", "--disable-extensions", "--disable-dev-shm-usage",
                                "--user-data-dir=" + profile_dir_,
                                "--window-size=" + std::to_string(width) + "," + std::to_string(height)};
  if (::geteuid() == 0) args.push_back("--no-sandbox");  // Chromium's sandbox refuses to run as root
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  const int spawned = posix_spawn(&pid_, program.c_str(), &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  ::close(commands[0]);
  ::close(answers[1]);
  to_browser_ = commands[1];
  from_browser_ = answers[0];
  if (spawned != 0) throw std::runtime_error("cannot start " + program + " (apt-get install chromium)");
  const nlohmann::json target = call("Target.createTarget", {{"url", "about:blank"}}, false);
  const nlohmann::json attached =
      call("Target.attachToTarget", {{"targetId", target["targetId"]}, {"flatten", true}}, false);
  session_id_ = attached["sessionId"].get<std::string>();
  call("Page.enable");
  call("Runtime.enable");
}

Chromium::~Chromium() {
  ::close(to_browser_);
  ::close(from_browser_);
  if (pid_ > 0) {
    ::kill(pid_, SIGTERM);
    int status = 0;
    ::waitpid(pid_, &status, 0);
  }
  std::error_code ignored;
  std::filesystem::remove_all(profile_dir_, ignored);
}

nlohmann::json Chromium::read_message() {
  while (true) {
    const auto end = buffer_.find('\0');
    if (end != std::string::npos) {
      nlohmann::json message = nlohmann::json::parse(buffer_.substr(0, end));
      buffer_.erase(0, end + 1);
      return message;
    }
    char chunk[65536];
    const ssize_t n = ::read(from_browser_, chunk, sizeof chunk);
    if (n <= 0) throw std::runtime_error("Chromium closed its DevTools pipe");
    buffer_.append(chunk, static_cast<std::size_t>(n));
  }
}

nlohmann::json Chromium::call(const std::string& method, nlohmann::json params, bool in_page) {
  const int id = next_id_++;
  nlohmann::json message{{"id", id}, {"method", method}, {"params", std::move(params)}};
  if (in_page) message["sessionId"] = session_id_;
  const std::string text = message.dump() + '\0';
  for (std::size_t sent = 0; sent < text.size();) {
    const ssize_t n = ::write(to_browser_, text.data() + sent, text.size() - sent);
    if (n <= 0) throw std::runtime_error("cannot write to Chromium's DevTools pipe");
    sent += static_cast<std::size_t>(n);
  }
  while (true) {
    nlohmann::json answer = read_message();
    if (!answer.contains("id") || answer["id"] != id) continue;  // an event, or another call's answer
    if (answer.contains("error")) throw std::runtime_error(method + ": " + answer["error"].dump());
    return answer["result"];
  }
}

nlohmann::json Chromium::eval(const std::string& expression) {
  const nlohmann::json result =
      call("Runtime.evaluate", {{"expression", expression}, {"awaitPromise", true}, {"returnByValue", true}});
  if (result.contains("exceptionDetails")) {
    throw std::runtime_error("in the page: " + result["exceptionDetails"].dump());
  }
  return result["result"].value("value", nlohmann::json());
}

void Chromium::wait_until(const std::string& expression) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds{15};
  while (eval("Boolean(" + expression + ")") != true) {
    if (std::chrono::steady_clock::now() > deadline) throw std::runtime_error("timed out waiting for " + expression);
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
}

void Chromium::open(const std::string& url) {
  // The page being left is marked, so that its own readiness is not taken for the new one's.
  eval("window.prescientLeaving = true");
  call("Page.navigate", {{"url", url}});
  wait_until("!window.prescientLeaving && document.readyState === 'complete' && document.body && "
             "document.body.dataset.ready === 'true'");
}

void Chromium::set_time_zone(const std::string& zone) { call("Emulation.setTimezoneOverride", {{"timezoneId", zone}}); }

void Chromium::screenshot(const std::string& path) {
  const nlohmann::json shot = call("Page.captureScreenshot", {{"format", "png"}, {"captureBeyondViewport", true}});
  std::filesystem::create_directories(std::filesystem::path(path).parent_path());
  const auto png = web::base64_decode(shot["data"].get<std::string>());
  if (!png) throw std::runtime_error("Chromium's screenshot is not base64");
  std::ofstream(path, std::ios::binary) << *png;
}

}  // namespace prescient::testing

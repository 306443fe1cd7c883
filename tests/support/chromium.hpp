#pragma once
// A real browser for the dashboard's tests: Debian's headless Chromium, driven through its DevTools
// protocol over a pipe (--remote-debugging-pipe: JSON messages separated by NUL bytes on fds 3 and 4),
// so no WebSocket client and no Node are needed. One page (tab), attached with a flat session.
#include <sys/types.h>

#include <nlohmann/json.hpp>

#include <string>

namespace prescient::testing {

class Chromium {
 public:
  // Starts /usr/bin/chromium (or $PRESCIENT_CHROMIUM) headless with a fresh profile and opens one tab.
  // Throws std::runtime_error when it cannot.
  Chromium(int width = 1280, int height = 1000);
  ~Chromium();
  Chromium(const Chromium&) = delete;
  Chromium& operator=(const Chromium&) = delete;

  // Loads the URL and waits (at most 15 s) until the dashboard says it is drawn: body[data-ready].
  void open(const std::string& url);
  // Evaluates a JavaScript expression in the page (a promise is awaited); its value as JSON. Throws
  // std::runtime_error with the exception's text when it throws.
  nlohmann::json eval(const std::string& expression);
  // Waits (at most 15 s) until the expression is true.
  void wait_until(const std::string& expression);
  // Runs the page in this IANA time zone ("Australia/Adelaide") instead of the machine's, from the next
  // page loaded on (DevTools' Emulation.setTimezoneOverride: Date and Intl follow it).
  void set_time_zone(const std::string& zone);
  // The page as a PNG file.
  void screenshot(const std::string& path);

 private:
  nlohmann::json call(const std::string& method, nlohmann::json params = nlohmann::json::object(),
                      bool in_page = true);
  nlohmann::json read_message();

  pid_t pid_ = -1;
  int to_browser_ = -1, from_browser_ = -1;
  int next_id_ = 1;
  std::string session_id_;
  std::string profile_dir_;
  std::string buffer_;
};

}  // namespace prescient::testing

#pragma once
// A thread that does one piece of upkeep over and over on a database connection of its own, apart from
// the thread that fires slots: the daemon's figures and its retention. A failed turn is logged and drops
// the connection (the next turn connects again). Stops, between turns, when destroyed.
#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <string>
#include <thread>

namespace soci {
class session;
}

namespace prescient::ops {

class Turns {
 public:
  // Calls `turn` at once and then every `every`; a failure is logged as "`what`, trying again in ...".
  Turns(std::string database_url, std::chrono::milliseconds every, std::string what,
        std::function<void(soci::session&)> turn);
  ~Turns();
  Turns(const Turns&) = delete;
  Turns& operator=(const Turns&) = delete;

 private:
  void run();

  const std::string database_url_;
  const std::chrono::milliseconds every_;
  const std::string what_;
  const std::function<void(soci::session&)> turn_;
  std::mutex mutex_;
  std::condition_variable wake_;
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace prescient::ops

#pragma once
// SIGTERM, SIGINT and SIGHUP for a long-running command (daemon, web, events --follow): taken by one thread
// that calls a handler, and blocked in every other thread. The watching thread is stopped and joined when
// the watch goes out of scope, however the scope is left (an exception included).
#include <signal.h>

#include <atomic>
#include <functional>
#include <thread>

namespace prescient::cli {

class SignalWatch {
 public:
  // Blocks the signals in the calling thread and so in every thread it starts afterwards: create it
  // before any other thread.
  SignalWatch();
  ~SignalWatch();
  SignalWatch(const SignalWatch&) = delete;
  SignalWatch& operator=(const SignalWatch&) = delete;

  // Starts the thread that waits for signals. SIGTERM and SIGINT call on_stop with the signal, once, and end
  // the watch. SIGHUP calls on_reload, as often as it comes; without one, SIGHUP stops too (a terminal
  // that hangs up ends what runs in it).
  void start(std::function<void(int signal)> on_stop, std::function<void()> on_reload = {});

 private:
  sigset_t signals_;
  std::thread thread_;
  std::atomic<bool> closing_{false};
};

}  // namespace prescient::cli

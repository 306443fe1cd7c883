#pragma once
// SIGTERM and SIGINT for a long-running command (daemon, events --follow): taken by one thread that
// calls a handler, and blocked in every other thread. The watching thread is stopped and joined when
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

  // Starts the thread that waits for a signal and calls on_signal with it (once).
  void start(std::function<void(int signal)> on_signal);

 private:
  sigset_t signals_;
  std::thread thread_;
  std::atomic<bool> closing_{false};
};

}  // namespace prescient::cli

#include "signal_watch.hpp"

namespace prescient::cli {

SignalWatch::SignalWatch() {
  sigemptyset(&signals_);
  sigaddset(&signals_, SIGTERM);
  sigaddset(&signals_, SIGINT);
  sigaddset(&signals_, SIGHUP);
  pthread_sigmask(SIG_BLOCK, &signals_, nullptr);
}

void SignalWatch::start(std::function<void(int)> on_stop, std::function<void()> on_reload) {
  thread_ = std::thread([this, on_stop = std::move(on_stop), on_reload = std::move(on_reload)] {
    int received = 0;
    while (sigwait(&signals_, &received) == 0 && !closing_) {
      if (received == SIGHUP && on_reload) {
        on_reload();
        continue;
      }
      on_stop(received);
      return;
    }
  });
}

SignalWatch::~SignalWatch() {
  if (!thread_.joinable()) return;
  // Wake the waiting thread (the signal is blocked everywhere, so it reaches only its sigwait); it
  // returns without calling the handler.
  closing_ = true;
  pthread_kill(thread_.native_handle(), SIGTERM);
  thread_.join();
}

}  // namespace prescient::cli

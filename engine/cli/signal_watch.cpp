#include "signal_watch.hpp"

namespace prescient::cli {

SignalWatch::SignalWatch() {
  sigemptyset(&signals_);
  sigaddset(&signals_, SIGTERM);
  sigaddset(&signals_, SIGINT);
  pthread_sigmask(SIG_BLOCK, &signals_, nullptr);
}

void SignalWatch::start(std::function<void(int)> on_signal) {
  thread_ = std::thread([this, on_signal = std::move(on_signal)] {
    int received = 0;
    sigwait(&signals_, &received);
    if (!closing_) on_signal(received);
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

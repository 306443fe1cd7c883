#pragma once
// The process's HTTP sender for the http class: one thread driving one libcurl multi handle, so every
// worker's requests share one connection cache (libcurl does not share connections across threads) and
// each target's max_concurrent is counted in one place. Workers hand it a batch and wait for the batch.
#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "http_exchange.hpp"
#include "http_targets.hpp"

namespace prescient::jobs {

struct HttpCall {
  const HttpTarget* target = nullptr;
  std::string url, body;
  std::vector<std::string> headers;
  // Afterwards, one of: an answer (any status), a transport error, or not sent (the target's
  // max_concurrent held it back until the batch's budget left no room for its timeout).
  std::optional<HttpAnswer> answer;
  std::optional<std::string> error;
  bool not_sent = false;
};

class HttpEngine {
 public:
  // Started on first use; never destroyed: a job thread the runner abandoned may still be waiting on it.
  static HttpEngine& process();
  // Sends the calls, each once its target has room and only while `budget_end` leaves room for its timeout,
  // and returns when every call is settled one way or the other. `calls` (and their targets) must live
  // until it returns. Thread-safe.
  void send(std::vector<HttpCall>& calls, std::chrono::steady_clock::time_point budget_end);

  struct Impl;

 private:
  HttpEngine();
  std::shared_ptr<Impl> impl_;
};

}  // namespace prescient::jobs

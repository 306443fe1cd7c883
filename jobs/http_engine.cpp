#include "http_engine.hpp"

#include <curl/curl.h>

#include <algorithm>
#include <condition_variable>
#include <deque>
#include <map>
#include <mutex>
#include <stdexcept>
#include <thread>

#include "prescient/duration.hpp"

namespace prescient::jobs {
namespace {
using Steady = std::chrono::steady_clock;
}  // namespace

// HttpBatch and HttpTransfer are not in the anonymous namespace: HttpEngine::Impl, a class with linkage,
// holds them (in a unity build GCC warns of that, -Wsubobject-linkage).
// The calls of one send(): how many are still open, and how long the batch may take.
struct HttpBatch {
  std::size_t open = 0;
  Steady::time_point budget_end;
};

// One call inside the engine, from its hand-over to its settlement.
struct HttpTransfer {
  HttpCall* call = nullptr;
  HttpBatch* batch = nullptr;
  curl_slist* headers = nullptr;
  CURL* easy = nullptr;
  HttpAnswer answer;
  char error[CURL_ERROR_SIZE] = {};
};

namespace {

size_t on_body(char* data, size_t size, size_t count, void* user) {
  HttpAnswer& answer = static_cast<HttpTransfer*>(user)->answer;
  const std::size_t bytes = size * count;
  const std::size_t room = kMaxHttpAnswerBytes - std::min(kMaxHttpAnswerBytes, answer.body.size());
  if (bytes > room) {
    answer.body.append(data, room);
    answer.body_cut = true;
    return 0;  // stops the transfer: the rest is never read
  }
  answer.body.append(data, bytes);
  return bytes;
}

// Keeps Retry-After and Location of the final response (a new status line starts afresh).
size_t on_header(char* data, size_t size, size_t count, void* user) {
  HttpAnswer& answer = static_cast<HttpTransfer*>(user)->answer;
  const std::size_t bytes = size * count;
  std::string line(data, bytes);
  while (!line.empty() && (line.back() == '\n' || line.back() == '\r')) line.pop_back();
  if (line.rfind("HTTP/", 0) == 0) {
    answer.retry_after.reset();
    answer.location.reset();
    return bytes;
  }
  const auto colon = line.find(':');
  if (colon == std::string::npos) return bytes;
  std::string name = line.substr(0, colon);
  std::transform(name.begin(), name.end(), name.begin(), [](unsigned char c) { return std::tolower(c); });
  std::string value = line.substr(colon + 1);
  value.erase(0, value.find_first_not_of(" \t"));
  if (name == "retry-after") answer.retry_after = value.substr(0, 200);
  if (name == "location") answer.location = value.substr(0, 500);
  return bytes;
}

}  // namespace

struct HttpEngine::Impl {
  std::mutex mutex;
  std::condition_variable settled;
  std::deque<std::unique_ptr<HttpTransfer>> waiting;  // under `mutex`
  // The engine thread's own:
  CURLM* multi = nullptr;
  std::map<CURL*, std::unique_ptr<HttpTransfer>> running;
  std::vector<CURL*> idle;
  std::map<std::string, int> in_flight;  // per target

  Impl() {
    if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) throw std::runtime_error("libcurl could not be initialised");
    multi = curl_multi_init();
    if (multi == nullptr) throw std::runtime_error("libcurl could not make a multi handle");
  }

  void settle(HttpTransfer& transfer) {
    const std::lock_guard lock(mutex);
    --transfer.batch->open;
    settled.notify_all();
  }

  void start(std::unique_ptr<HttpTransfer> transfer) {
    HttpCall& call = *transfer->call;
    CURL* easy = nullptr;
    if (idle.empty()) {
      easy = curl_easy_init();
    } else {
      easy = idle.back();
      idle.pop_back();
      curl_easy_reset(easy);
    }
    if (easy == nullptr) {
      call.error = "libcurl could not make a handle";
      --in_flight[call.target->name];
      settle(*transfer);
      return;
    }
    transfer->easy = easy;
    for (const std::string& header : call.headers) transfer->headers = curl_slist_append(transfer->headers, header.c_str());
    curl_easy_setopt(easy, CURLOPT_URL, call.url.c_str());
    curl_easy_setopt(easy, CURLOPT_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(easy, CURLOPT_FOLLOWLOCATION, 0L);
    curl_easy_setopt(easy, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(easy, CURLOPT_POST, 1L);
    curl_easy_setopt(easy, CURLOPT_POSTFIELDS, call.body.data());
    curl_easy_setopt(easy, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(call.body.size()));
    curl_easy_setopt(easy, CURLOPT_HTTPHEADER, transfer->headers);
    curl_easy_setopt(easy, CURLOPT_TIMEOUT_MS, static_cast<long>(call.target->timeout.count() * 1000));
    curl_easy_setopt(easy, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(easy, CURLOPT_WRITEDATA, transfer.get());
    curl_easy_setopt(easy, CURLOPT_HEADERFUNCTION, on_header);
    curl_easy_setopt(easy, CURLOPT_HEADERDATA, transfer.get());
    curl_easy_setopt(easy, CURLOPT_ERRORBUFFER, transfer->error);
    if (call.target->ca_file) curl_easy_setopt(easy, CURLOPT_CAINFO, call.target->ca_file->c_str());
    if (curl_multi_add_handle(multi, easy) != CURLM_OK) {
      finish(*transfer, CURLE_FAILED_INIT);
      return;
    }
    running.emplace(easy, std::move(transfer));
  }

  void finish(HttpTransfer& transfer, CURLcode code) {
    HttpCall& call = *transfer.call;
    if (code == CURLE_OK || (code == CURLE_WRITE_ERROR && transfer.answer.body_cut)) {
      curl_easy_getinfo(transfer.easy, CURLINFO_RESPONSE_CODE, &transfer.answer.status);
      call.answer = std::move(transfer.answer);
    } else if (code == CURLE_OPERATION_TIMEDOUT) {
      call.error = "no answer from " + call.url + " within " + format_duration(call.target->timeout);
    } else {
      call.error = call.url + ": " + (transfer.error[0] != '\0' ? transfer.error : curl_easy_strerror(code));
    }
    curl_multi_remove_handle(multi, transfer.easy);
    idle.push_back(transfer.easy);
    curl_slist_free_all(transfer.headers);
    --in_flight[call.target->name];
    settle(transfer);
  }

  // The engine thread: start what may start, move the transfers on, settle what ended.
  void loop() {
    while (true) {
      std::vector<std::unique_ptr<HttpTransfer>> startable;
      {
        const std::lock_guard lock(mutex);
        const auto now = Steady::now();
        for (auto it = waiting.begin(); it != waiting.end();) {
          HttpTransfer& t = **it;
          if (now + t.call->target->timeout > t.batch->budget_end) {
            t.call->not_sent = true;
            --t.batch->open;
            settled.notify_all();
            it = waiting.erase(it);
          } else if (int& used = in_flight[t.call->target->name]; used < t.call->target->max_concurrent) {
            ++used;  // counted from here: given back in finish(), or below when it cannot start
            startable.push_back(std::move(*it));
            it = waiting.erase(it);
          } else {
            ++it;
          }
        }
      }
      for (auto& transfer : startable) start(std::move(transfer));
      int still_running = 0;
      curl_multi_perform(multi, &still_running);
      int queued = 0;
      bool finished_any = false;
      while (CURLMsg* message = curl_multi_info_read(multi, &queued)) {
        if (message->msg != CURLMSG_DONE) continue;
        const auto found = running.find(message->easy_handle);
        if (found == running.end()) continue;
        std::unique_ptr<HttpTransfer> transfer = std::move(found->second);
        running.erase(found);
        finish(*transfer, message->data.result);
        finished_any = true;
      }
      // A finished transfer made room: start the next ones at once. Otherwise wait, woken by the sockets,
      // by a new batch (curl_multi_wakeup), or in time to expire waiting calls.
      if (!finished_any) curl_multi_poll(multi, nullptr, 0, 100, nullptr);
    }
  }
};

HttpEngine& HttpEngine::process() {
  static HttpEngine* const engine = new HttpEngine;
  return *engine;
}

HttpEngine::HttpEngine() : impl_(std::make_shared<Impl>()) {
  std::thread([impl = impl_] { impl->loop(); }).detach();
}

void HttpEngine::send(std::vector<HttpCall>& calls, std::chrono::steady_clock::time_point budget_end) {
  if (calls.empty()) return;
  HttpBatch batch{.open = calls.size(), .budget_end = budget_end};
  {
    const std::lock_guard lock(impl_->mutex);
    for (HttpCall& call : calls) {
      auto transfer = std::make_unique<HttpTransfer>();
      transfer->call = &call;
      transfer->batch = &batch;
      impl_->waiting.push_back(std::move(transfer));
    }
  }
  curl_multi_wakeup(impl_->multi);
  std::unique_lock lock(impl_->mutex);
  impl_->settled.wait(lock, [&] { return batch.open == 0; });
}

}  // namespace prescient::jobs

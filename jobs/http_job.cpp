#include "http_job.hpp"

#include <curl/curl.h>

#include <algorithm>
#include <cstring>
#include <deque>
#include <map>
#include <mutex>
#include <stdexcept>

#include "http_exchange.hpp"
#include "prescient/duration.hpp"
#include "prescient/version.hpp"

namespace prescient {
namespace {

using Steady = std::chrono::steady_clock;

// Requests in flight per target, across every worker of the process: a target's max_concurrent is what
// the receiver sees from this process, however many workers send.
class TargetSlots {
 public:
  static TargetSlots& process() {
    static TargetSlots* const slots = new TargetSlots;  // never destroyed: abandoned job threads may outlive main
    return *slots;
  }
  bool try_take(const HttpTarget& target) {
    const std::lock_guard lock(mutex_);
    int& used = in_flight_[target.name];
    if (used >= target.max_concurrent) return false;
    ++used;
    return true;
  }
  void give_back(const HttpTarget& target) {
    const std::lock_guard lock(mutex_);
    --in_flight_[target.name];
  }

 private:
  std::mutex mutex_;
  std::map<std::string, int> in_flight_;
};

void init_curl_once() {
  static std::once_flag once;
  std::call_once(once, [] {
    if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) throw std::runtime_error("libcurl could not be initialised");
  });
}

// One check's request, from its validation to its answer.
struct Request {
  std::size_t index = 0;
  const HttpTarget* target = nullptr;
  std::string url, body;
  curl_slist* headers = nullptr;
  CURL* easy = nullptr;
  HttpAnswer answer;
  char error[CURL_ERROR_SIZE] = {};
};

size_t on_body(char* data, size_t size, size_t count, void* user) {
  auto& request = *static_cast<Request*>(user);
  const std::size_t bytes = size * count;
  const std::size_t room = kMaxHttpAnswerBytes - std::min(kMaxHttpAnswerBytes, request.answer.body.size());
  if (bytes > room) {
    request.answer.body.append(data, room);
    request.answer.body_cut = true;
    return 0;  // stops the transfer: the rest is never read
  }
  request.answer.body.append(data, bytes);
  return bytes;
}

// Keeps Retry-After and Location of the final response (a new status line starts afresh).
size_t on_header(char* data, size_t size, size_t count, void* user) {
  auto& request = *static_cast<Request*>(user);
  const std::size_t bytes = size * count;
  std::string line(data, bytes);
  while (!line.empty() && (line.back() == '\n' || line.back() == '\r')) line.pop_back();
  if (line.rfind("HTTP/", 0) == 0) {
    request.answer.retry_after.reset();
    request.answer.location.reset();
    return bytes;
  }
  const auto colon = line.find(':');
  if (colon == std::string::npos) return bytes;
  std::string name = line.substr(0, colon);
  std::transform(name.begin(), name.end(), name.begin(), [](unsigned char c) { return std::tolower(c); });
  std::string value = line.substr(colon + 1);
  value.erase(0, value.find_first_not_of(" \t"));
  if (name == "retry-after") request.answer.retry_after = value.substr(0, 200);
  if (name == "location") request.answer.location = value.substr(0, 500);
  return bytes;
}

}  // namespace

// This instance's multi handle (its connection cache) and the easy handles it keeps for reuse.
struct HttpJob::Transfers {
  CURLM* multi = nullptr;
  std::vector<CURL*> idle;
  Transfers() : multi(curl_multi_init()) {
    if (multi == nullptr) throw std::runtime_error("libcurl could not make a multi handle");
  }
  ~Transfers() {
    for (CURL* easy : idle) curl_easy_cleanup(easy);
    curl_multi_cleanup(multi);
  }
  CURL* take() {
    if (idle.empty()) {
      CURL* easy = curl_easy_init();
      if (easy == nullptr) throw std::runtime_error("libcurl could not make a handle");
      return easy;
    }
    CURL* easy = idle.back();
    idle.pop_back();
    curl_easy_reset(easy);
    return easy;
  }
};

HttpJob::HttpJob(std::shared_ptr<const HttpTargets> targets) : targets_(std::move(targets)) {
  init_curl_once();
  transfers_ = std::make_unique<Transfers>();
}

HttpJob::~HttpJob() = default;

JobPolicy HttpJob::policy() const {
  // The batch's budget: room for a few rounds of the slowest target's requests when its max_concurrent
  // holds the rest back; what cannot start in time looks again at the next slot.
  std::chrono::seconds longest{10};
  if (targets_) {
    for (const auto& [name, target] : *targets_) longest = std::max(longest, target.timeout);
  }
  return {.max_checks = std::nullopt, .max_attempts = std::nullopt, .timeout = 4 * longest, .long_running = true,
          .batch = true};
}

JobResult HttpJob::run(const Check& check, JobContext& ctx) {
  std::vector<BatchAnswer> answers = run_batch(std::span<const Check>(&check, 1), ctx);
  if (answers.front().failure) throw std::runtime_error(*answers.front().failure);
  return std::move(answers.front().result);
}

std::vector<BatchAnswer> HttpJob::run_batch(std::span<const Check> checks, JobContext& ctx) {
  std::vector<BatchAnswer> answers(checks.size());
  std::vector<std::unique_ptr<Request>> requests;
  std::deque<Request*> waiting;
  const std::int64_t timestamp = to_unix_micros(ctx.now()) / 1000000;
  for (std::size_t i = 0; i < checks.size(); ++i) {
    const Check& check = checks[i];
    try {
      if (!targets_ || targets_->empty()) throw std::runtime_error("no http targets are configured (--http-targets FILE)");
      const auto& payload = check.payload;
      if (!payload.is_object() || !payload.contains("target") || !payload["target"].is_string()) {
        throw std::runtime_error("the payload names no target: {\"target\": NAME, \"path\": \"/...\"}");
      }
      const std::string name = payload["target"].get<std::string>();
      const auto target = targets_->find(name);
      if (target == targets_->end()) {
        std::string known;
        for (const auto& [n, t] : *targets_) known += (known.empty() ? "" : ", ") + n;
        throw std::runtime_error("unknown http target '" + name + "' (configured: " + known + ")");
      }
      if (!payload.contains("path") || !payload["path"].is_string()) {
        throw std::runtime_error("the payload names no path below target '" + name + "' (\"path\": \"/...\")");
      }
      auto request = std::make_unique<Request>();
      request->index = i;
      request->target = &target->second;
      request->url = url_below(target->second, payload["path"].get<std::string>());
      request->body = http_request_body(check);
      const std::string headers[] = {
          "Content-Type: application/json",
          "Expect:",  // no 100-continue round trip before the body
          "User-Agent: prescient/" + std::string(kVersion),
          "Prescient-Timestamp: " + std::to_string(timestamp),
          "Prescient-Signature: " + http_signature(target->second.secret, timestamp, request->body),
          "Idempotency-Key: " + http_idempotency_key(check)};
      for (const std::string& header : headers) request->headers = curl_slist_append(request->headers, header.c_str());
      waiting.push_back(request.get());
      requests.push_back(std::move(request));
    } catch (const std::exception& e) {
      answers[i].failure = e.what();  // refused before any request
    }
  }

  const auto budget_end = Steady::now() + ctx.timeout();
  int running = 0;
  const auto finish = [&](Request& request, CURLcode code) {
    BatchAnswer& answer = answers[request.index];
    const HttpTarget& target = *request.target;
    if (code == CURLE_OK || (code == CURLE_WRITE_ERROR && request.answer.body_cut)) {
      curl_easy_getinfo(request.easy, CURLINFO_RESPONSE_CODE, &request.answer.status);
      try {
        answer.result = http_result_of(request.answer, target.name, ctx.now());
      } catch (const std::exception& e) {
        answer.failure = e.what();
      }
    } else if (code == CURLE_OPERATION_TIMEDOUT) {
      answer.failure = "http target '" + target.name + "': no answer from " + request.url + " within " +
                       format_duration(target.timeout);
    } else {
      answer.failure = "http target '" + target.name + "': " + request.url + ": " +
                       (request.error[0] != '\0' ? request.error : curl_easy_strerror(code));
    }
    curl_multi_remove_handle(transfers_->multi, request.easy);
    transfers_->idle.push_back(request.easy);
    request.easy = nullptr;
    curl_slist_free_all(request.headers);
    request.headers = nullptr;
    TargetSlots::process().give_back(target);
    --running;
  };
  const auto start = [&](Request& request) {
    const HttpTarget& target = *request.target;
    CURL* easy = request.easy = transfers_->take();
    curl_easy_setopt(easy, CURLOPT_URL, request.url.c_str());
    curl_easy_setopt(easy, CURLOPT_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(easy, CURLOPT_FOLLOWLOCATION, 0L);
    curl_easy_setopt(easy, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(easy, CURLOPT_POST, 1L);
    curl_easy_setopt(easy, CURLOPT_POSTFIELDS, request.body.data());
    curl_easy_setopt(easy, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(request.body.size()));
    curl_easy_setopt(easy, CURLOPT_HTTPHEADER, request.headers);
    curl_easy_setopt(easy, CURLOPT_TIMEOUT_MS, static_cast<long>(target.timeout.count() * 1000));
    curl_easy_setopt(easy, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(easy, CURLOPT_WRITEDATA, &request);
    curl_easy_setopt(easy, CURLOPT_HEADERFUNCTION, on_header);
    curl_easy_setopt(easy, CURLOPT_HEADERDATA, &request);
    curl_easy_setopt(easy, CURLOPT_ERRORBUFFER, request.error);
    curl_easy_setopt(easy, CURLOPT_PRIVATE, &request);
    if (target.ca_file) curl_easy_setopt(easy, CURLOPT_CAINFO, target.ca_file->c_str());
    if (curl_multi_add_handle(transfers_->multi, easy) != CURLM_OK) {
      finish(request, CURLE_FAILED_INIT);
      return;
    }
    ++running;
  };

  while (!waiting.empty() || running > 0) {
    for (auto it = waiting.begin(); it != waiting.end();) {
      Request& request = **it;
      if (Steady::now() + request.target->timeout > budget_end) {
        // Held back by max_concurrent until too late to start within the batch's budget: no attempt is
        // counted, it looks again at the next slot.
        answers[request.index].result = JobResult{.next = ctx.now(), .events = {}, .payload_update = std::nullopt};
        curl_slist_free_all(request.headers);
        request.headers = nullptr;
        it = waiting.erase(it);
      } else if (TargetSlots::process().try_take(*request.target)) {
        it = waiting.erase(it);
        start(request);
      } else {
        ++it;
      }
    }
    int still_running = 0;
    curl_multi_perform(transfers_->multi, &still_running);
    int queued = 0;
    while (CURLMsg* message = curl_multi_info_read(transfers_->multi, &queued)) {
      if (message->msg != CURLMSG_DONE) continue;
      Request* request = nullptr;
      curl_easy_getinfo(message->easy_handle, CURLINFO_PRIVATE, &request);
      finish(*request, message->data.result);
    }
    if (running > 0 || !waiting.empty()) {
      // Woken by the sockets; when only other workers' requests hold the targets, look again soon.
      curl_multi_poll(transfers_->multi, nullptr, 0, running > 0 ? 100 : 2, nullptr);
    }
  }
  return answers;
}

}  // namespace prescient

#include "http_job.hpp"

#include <algorithm>
#include <stdexcept>

#include "http_engine.hpp"
#include "http_exchange.hpp"
#include "prescient/version.hpp"

namespace prescient::jobs {

HttpJob::HttpJob(std::shared_ptr<const HttpTargets> targets) : targets_(std::move(targets)) {}

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

// The call for one check: its target and URL from the payload (refused with the reason), signed.
HttpCall HttpJob::call_for(const Check& check, std::int64_t timestamp) const {
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
  HttpCall call;
  call.target = &target->second;
  call.url = url_below(target->second, payload["path"].get<std::string>());
  call.body = http_request_body(check);
  call.headers = {"Content-Type: application/json",
                  "Expect:",  // no 100-continue round trip before the body
                  "User-Agent: prescient/" + std::string(kVersion),
                  "Prescient-Timestamp: " + std::to_string(timestamp),
                  "Prescient-Signature: " + http_signature(target->second.secret, timestamp, call.body),
                  "Idempotency-Key: " + http_idempotency_key(check)};
  // The run's trace context (docs/design.md, "Trace context"): the check's trace, this run's span as the
  // parent. A tracestate another writer stored with bytes no header may carry is left out, never sent raw.
  if (check.traceparent) {
    call.headers.push_back("traceparent: " + *check.traceparent);
    const auto printable = [](char ch) { return ch >= 0x20 && ch <= 0x7e; };
    if (check.tracestate && std::all_of(check.tracestate->begin(), check.tracestate->end(), printable)) {
      call.headers.push_back("tracestate: " + *check.tracestate);
    }
  }
  return call;
}

std::vector<BatchAnswer> HttpJob::run_batch(std::span<const Check> checks, JobContext& ctx) {
  std::vector<BatchAnswer> answers(checks.size());
  std::vector<HttpCall> calls;
  std::vector<std::size_t> asked;  // the check of each call
  const std::int64_t timestamp = to_unix_micros(ctx.now()) / 1000000;
  for (std::size_t i = 0; i < checks.size(); ++i) {
    try {
      calls.push_back(call_for(checks[i], timestamp));
      asked.push_back(i);
    } catch (const std::exception& e) {
      answers[i].failure = e.what();  // refused: no request is made
    }
  }
  HttpEngine::process().send(calls, std::chrono::steady_clock::now() + ctx.timeout());
  for (std::size_t c = 0; c < calls.size(); ++c) {
    const HttpCall& call = calls[c];
    BatchAnswer& answer = answers[asked[c]];
    if (call.not_sent) {
      // Held back by the target's max_concurrent until too late to start within the batch's budget: no
      // attempt is counted, it looks again at the next slot.
      answer.result.next = ctx.now();
    } else if (call.error) {
      answer.failure = "http target '" + call.target->name + "': " + *call.error;
    } else {
      try {
        answer.result = http_result_of(*call.answer, call.target->name, ctx.now());
      } catch (const std::exception& e) {
        answer.failure = e.what();
      }
    }
  }
  return answers;
}

}  // namespace prescient::jobs

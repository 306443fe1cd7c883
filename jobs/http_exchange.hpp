#pragma once
// The http class's exchange with a receiver, without the network: the request it sends for a check (body,
// signature, idempotency key) and what it makes of the answer. docs/http.md describes both for receivers.
#include <cstdint>
#include <optional>
#include <string>

#include "prescient/job.hpp"

namespace prescient::jobs {

// The JSON body: the check as the receiver needs it (payload as stored, times in UTC, ISO 8601).
std::string http_request_body(const Check& check);
// "<check id>-<check count>": the same for every attempt of one run, so a receiver can drop a repeat.
std::string http_idempotency_key(const Check& check);
// The Prescient-Signature header's value: "v1=" and the hex HMAC-SHA256, keyed with the target's secret,
// of "<unix seconds>.<body>" (the Prescient-Timestamp header and the body, as Stripe's webhooks do).
std::string http_signature(const std::string& secret, std::int64_t unix_seconds, const std::string& body);

// What came back, as far as the class reads it.
struct HttpAnswer {
  long status = 0;
  std::string body;        // at most kMaxHttpAnswerBytes
  bool body_cut = false;   // the receiver sent more than that
  std::optional<std::string> retry_after;  // the Retry-After header
  std::optional<std::string> location;     // the Location header (a redirect is never followed)
};
inline constexpr std::size_t kMaxHttpAnswerBytes = 256 * 1024;

// The check's result from the answer: 204 or an empty 200 → done; 200 {"next": TIME, "events": [...]} →
// look again then (TIME: ISO 8601 text, or a number of Unix seconds), with those events (and "result": any
// JSON, kept with the run); 429 or 503 with Retry-After → look again after it (no attempt
// counted). Anything else throws std::runtime_error naming the target, the status and the answer's first
// bytes: a failed attempt, retried with backoff.
JobResult http_result_of(const HttpAnswer& answer, const std::string& target, TimePoint now);

}  // namespace prescient::jobs

#include "http_exchange.hpp"

#include <openssl/evp.h>
#include <openssl/hmac.h>

#include <cmath>
#include <cstdio>
#include <set>
#include <stdexcept>

#include "core/text_rules.hpp"
#include "prescient/time_text.hpp"

namespace prescient::jobs {

using namespace prescient::core;
namespace {

// How much of an answer an error quotes, and the furthest a Retry-After may send a check.
constexpr std::size_t kQuotedBytes = 300;
constexpr std::chrono::hours kMaxRetryAfter{24};

std::runtime_error failure(const std::string& target, const std::string& what) {
  return std::runtime_error(storable_text("http target '" + target + "': " + what, kMaxErrorBytes));
}

std::string quoted(const HttpAnswer& answer) {
  if (answer.body.empty()) return "(empty body)";
  std::string first = answer.body.substr(0, kQuotedBytes);
  return one_line(storable_text(first, kQuotedBytes)) + (answer.body.size() > kQuotedBytes || answer.body_cut ? "…" : "");
}

// Seconds ("120") or an HTTP date in its one current form, IMF-fixdate ("Wed, 21 Oct 2026 07:28:00 GMT");
// nullopt when it is neither. The date is read by hand and checked by parse_time: date::parse draws a
// false -Wmaybe-uninitialized from GCC 12 inside date.h.
std::optional<TimePoint> retry_time(const std::string& value, TimePoint now) {
  if (!value.empty() && value.size() <= 9 && value.find_first_not_of("0123456789") == std::string::npos) {
    return now + std::chrono::seconds{std::stoll(value)};
  }
  static const std::string months = "JanFebMarAprMayJunJulAugSepOctNovDec";
  char weekday[4] = {}, month[4] = {};
  int day = 0, year = 0, hour = 0, minute = 0, second = 0, consumed = 0;
  if (value.size() != 29 || std::sscanf(value.c_str(), "%3s, %2d %3s %4d %2d:%2d:%2d GMT%n", weekday, &day, month, &year,
                                        &hour, &minute, &second, &consumed) != 7 ||
      consumed != 29) {
    return std::nullopt;
  }
  const auto m = months.find(month);
  if (m == std::string::npos || m % 3 != 0) return std::nullopt;
  char iso[32];
  std::snprintf(iso, sizeof iso, "%04d-%02d-%02dT%02d:%02d:%02dZ", year, static_cast<int>(m / 3 + 1), day, hour, minute,
                second);
  try {
    return std::max(now, parse_time(iso));
  } catch (const std::exception&) {
    return std::nullopt;  // 31 Feb and the like
  }
}

// A number as the answer's next: Unix seconds, read as the CLI's "@<unix seconds>" (parse_time decides the
// range: 0 to the last second of the year 9999). A fraction (Python's time.time() and JavaScript's
// Date.now() / 1000 send one) is kept to the nearest microsecond: a JSON number is read as a double, which is
// off by up to a quarter of a microsecond at today's times, so rounding up as an ISO time's digits are would
// make 1795593600.7 a microsecond late. The slot grid then rounds the time up as any next.
constexpr std::int64_t kLastUnixSecond = 253402300799;  // 9999-12-31T23:59:59Z, for the message

TimePoint unix_seconds_of(const nlohmann::json& next, const std::string& target, const std::string& status) {
  const auto out_of_range = [&] {
    return failure(target, status + ": next " + next.dump() + " is out of range: Unix seconds from 0 to " +
                               std::to_string(kLastUnixSecond) + " (9999-12-31T23:59:59Z)");
  };
  std::string whole;
  Micros fraction{0};
  if (next.is_number_integer()) {
    whole = next.dump();  // digits, a '-' before a negative one
  } else {
    const double seconds = next.get<double>();
    // The parser refuses what a double cannot hold (1e400); this keeps the cast below defined.
    if (!std::isfinite(seconds) || seconds < 0 || seconds >= 1e15) throw out_of_range();
    const double floor = std::floor(seconds);
    whole = std::to_string(static_cast<std::int64_t>(floor));
    fraction = Micros{std::llround((seconds - floor) * 1e6)};
  }
  TimePoint at;
  try {
    at = parse_time("@" + whole);
  } catch (const std::exception&) {
    throw out_of_range();
  }
  if (fraction > Micros{0} && to_unix_micros(at) == kLastUnixSecond * 1'000'000) throw out_of_range();
  return at + fraction;
}

Event event_of(const nlohmann::json& item, std::size_t n, const std::string& target) {
  const std::string where = "the answer's events[" + std::to_string(n) + "]";
  if (!item.is_object()) throw failure(target, where + " is not an object");
  static const std::set<std::string> known{"type", "payload", "id", "occurred_at"};
  for (const auto& [key, value] : item.items()) {
    if (!known.contains(key)) throw failure(target, where + " has an unknown key '" + one_line(key.substr(0, 100)) + "'");
  }
  Event event;
  if (!item.contains("type") || !item["type"].is_string()) throw failure(target, where + " has no type (a string)");
  event.type = item["type"].get<std::string>();
  if (item.contains("payload")) event.payload = item["payload"];
  if (item.contains("id")) {
    if (!item["id"].is_string()) throw failure(target, where + ".id is not a string");
    event.id = item["id"].get<std::string>();
  }
  if (item.contains("occurred_at")) {
    if (!item["occurred_at"].is_string()) throw failure(target, where + ".occurred_at is not a time");
    try {
      event.occurred_at = parse_time(item["occurred_at"].get<std::string>());
    } catch (const std::exception& e) {
      throw failure(target, where + ".occurred_at: " + e.what());
    }
  }
  return event;
}

}  // namespace

std::string http_request_body(const Check& check) {
  return nlohmann::json{{"id", check.id},
                        {"job", check.job},
                        {"entity_name", check.entity_name},
                        {"entity_key", check.entity_key},
                        {"job_key", check.job_key ? nlohmann::json(*check.job_key) : nlohmann::json(nullptr)},
                        {"group_key", check.group_key ? nlohmann::json(*check.group_key) : nlohmann::json(nullptr)},
                        {"payload", check.payload},
                        {"check_count", check.check_count},
                        {"attempts", check.attempts},
                        {"slot", format_time(check.slot)},
                        {"first_check_at", format_time(check.first_check_at)}}
      .dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

std::string http_idempotency_key(const Check& check) {
  return std::to_string(check.id) + "-" + std::to_string(check.check_count);
}

std::string http_signature(const std::string& secret, std::int64_t unix_seconds, const std::string& body) {
  const std::string signed_text = std::to_string(unix_seconds) + "." + body;
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int size = 0;
  if (HMAC(EVP_sha256(), secret.data(), static_cast<int>(secret.size()),
           reinterpret_cast<const unsigned char*>(signed_text.data()), signed_text.size(), digest, &size) == nullptr) {
    throw std::runtime_error("cannot compute the request's HMAC-SHA256");
  }
  static const char* const hex = "0123456789abcdef";
  std::string out = "v1=";
  for (unsigned int i = 0; i < size; ++i) {
    out += hex[digest[i] >> 4];
    out += hex[digest[i] & 0xf];
  }
  return out;
}

JobResult http_result_of(const HttpAnswer& answer, const std::string& target, TimePoint now) {
  const std::string status = "HTTP " + std::to_string(answer.status);
  if (answer.status == 429 || answer.status == 503) {
    if (!answer.retry_after) throw failure(target, status + " without Retry-After: " + quoted(answer));
    const auto at = retry_time(*answer.retry_after, now);
    if (!at) throw failure(target, status + " with an unreadable Retry-After '" + one_line(answer.retry_after->substr(0, 100)) + "'");
    if (*at - now > kMaxRetryAfter) throw failure(target, status + " asks to wait longer than a day (Retry-After " + *answer.retry_after + ")");
    return JobResult{.next = *at, .events = {}, .payload_update = std::nullopt};
  }
  if (answer.status >= 300 && answer.status < 400) {
    throw failure(target, status + ": redirects are not followed" +
                              (answer.location ? " (to " + one_line(answer.location->substr(0, 200)) + ")" : std::string()));
  }
  if (answer.status == 204) return {};
  if (answer.status != 200) throw failure(target, status + ": " + quoted(answer));
  if (answer.body_cut) {
    throw failure(target, status + ": the answer is longer than " + std::to_string(kMaxHttpAnswerBytes / 1024) + " KiB");
  }
  if (answer.body.find_first_not_of(" \t\r\n") == std::string::npos) return {};
  nlohmann::json doc;
  try {
    doc = nlohmann::json::parse(answer.body);
  } catch (const nlohmann::json::exception&) {  // a parse error, or a number beyond a double (out_of_range)
    throw failure(target, status + " with a body that is not JSON: " + quoted(answer));
  }
  if (!doc.is_object()) throw failure(target, status + ": the answer must be a JSON object, not " + quoted(answer));
  for (const auto& [key, value] : doc.items()) {
    if (key != "next" && key != "events" && key != "result") {
      throw failure(target, status + ": the answer has an unknown key '" + one_line(key.substr(0, 100)) +
                                "' (next, events, result)");
    }
  }
  JobResult result;
  if (doc.contains("next") && !doc["next"].is_null()) {
    const nlohmann::json& next = doc["next"];
    if (next.is_number()) {
      result.next = unix_seconds_of(next, target, status);
    } else {
      if (!next.is_string()) throw failure(target, status + ": next must be a time (ISO 8601 or Unix seconds) or null");
      try {
        result.next = parse_time(next.get<std::string>());
      } catch (const std::exception& e) {
        throw failure(target, status + ": next: " + e.what());
      }
    }
  }
  if (doc.contains("events")) {
    if (!doc["events"].is_array()) throw failure(target, status + ": events must be an array");
    for (std::size_t n = 0; n < doc["events"].size(); ++n) result.events.push_back(event_of(doc["events"][n], n, target));
  }
  // Any JSON, kept with the run; its bound is the runner's, as for every class (runner/settlements.hpp).
  if (doc.contains("result")) result.result = std::move(doc["result"]);
  return result;
}

}  // namespace prescient::jobs

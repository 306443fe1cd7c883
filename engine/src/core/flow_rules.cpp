// The pure rules of flow control (prescient/flow_limits.hpp): a rate's text, and the key value a limit
// computes from a check. The runner computes keys here and hands them to the database's admission
// (sql/functions/085_flow_control.sql), so they are defined once.
#include <charconv>
#include <climits>
#include <set>

#include "prescient/duration.hpp"
#include "prescient/errors.hpp"
#include "prescient/flow_limits.hpp"
#include "prescient/job.hpp"

namespace prescient {
namespace {

[[noreturn]] void refuse_rate(std::string_view text, const std::string& why) {
  throw InvalidInput("invalid rate '" + std::string(text) + "': " + why + " (write it like 200/s, 30/m or 5/10s)");
}

}  // namespace

FlowRate parse_flow_rate(std::string_view text) {
  const std::size_t slash = text.find('/');
  if (slash == std::string_view::npos) refuse_rate(text, "expected COUNT/PERIOD");
  const std::string_view count_text = text.substr(0, slash);
  std::string_view period = text.substr(slash + 1);
  if (!count_text.empty() && count_text.front() == '-') refuse_rate(text, "the count must be at least 1");
  long long count = 0;
  const auto [end, error] = std::from_chars(count_text.data(), count_text.data() + count_text.size(), count);
  if (count_text.empty() || error != std::errc() || end != count_text.data() + count_text.size()) {
    refuse_rate(text, "the count is not a whole number");
  }
  if (count < 1) refuse_rate(text, "the count must be at least 1");
  if (count > 1000000000) refuse_rate(text, "the count is over 1000000000");
  // A bare unit is one of it: "/s" is "/1s".
  const std::string period_text =
      period.size() == 1 ? "1" + std::string(period) : std::string(period);
  std::chrono::seconds seconds{0};
  try {
    seconds = parse_duration(period_text);
  } catch (const InvalidInput&) {
    refuse_rate(text, "the period '" + std::string(period) + "' is not a duration");
  }
  if (seconds < std::chrono::seconds{1} || seconds > std::chrono::seconds{86400}) {
    refuse_rate(text, "the period must be 1s to 1d");
  }
  return {.count = static_cast<int>(count), .per_seconds = static_cast<int>(seconds.count())};
}

std::string format_flow_rate(int count, int per_seconds) {
  switch (per_seconds) {
    case 1: return std::to_string(count) + "/s";
    case 60: return std::to_string(count) + "/m";
    case 3600: return std::to_string(count) + "/h";
    case 86400: return std::to_string(count) + "/d";
    default: return std::to_string(count) + "/" + format_duration(std::chrono::seconds{per_seconds});
  }
}

std::optional<std::string> flow_payload_field(const FlowLimit& limit) {
  constexpr std::string_view kPrefix = "payload.";
  if (!limit.key.starts_with(kPrefix)) return std::nullopt;
  return limit.key.substr(kPrefix.size());
}

std::optional<std::string> flow_key_of(const FlowLimit& limit, const Check& check) {
  if (limit.job && *limit.job != check.job) return std::nullopt;
  std::optional<std::string> key;
  const auto payload_field = [&](const std::string& field) -> std::optional<std::string> {
    if (!check.payload.is_object()) return std::nullopt;
    const auto it = check.payload.find(field);
    if (it == check.payload.end() || it->is_null()) return std::nullopt;
    if (it->is_string()) return it->get<std::string>();
    return it->dump();
  };
  if (limit.key == "job") key = check.job;
  else if (limit.key == "entity_name") key = check.entity_name;
  else if (limit.key == "http_target") key = check.job == "http" ? payload_field("target") : std::nullopt;
  else if (const auto field = flow_payload_field(limit)) key = payload_field(*field);
  if (!key || key->empty()) return std::nullopt;
  if (limit.key_value && *limit.key_value != *key) return std::nullopt;
  return key;
}

FlowLimit flow_limit_from_json(const nlohmann::json& body) {
  if (!body.is_object()) throw InvalidInput("a limit must be a JSON object");
  const auto text = [&](const char* field, bool required) -> std::optional<std::string> {
    const auto it = body.find(field);
    if (it == body.end() || it->is_null()) {
      if (required) throw InvalidInput(std::string("\"") + field + "\" is missing");
      return std::nullopt;
    }
    if (!it->is_string()) throw InvalidInput(std::string("\"") + field + "\" must be a string");
    return it->get<std::string>();
  };
  const auto whole = [&](const char* field) -> std::optional<int> {
    const auto it = body.find(field);
    if (it == body.end() || it->is_null()) return std::nullopt;
    if (!it->is_number_integer() || it->get<std::int64_t>() < INT32_MIN || it->get<std::int64_t>() > INT32_MAX) {
      throw InvalidInput(std::string("\"") + field + "\" must be a whole number, not " + it->dump());
    }
    return static_cast<int>(it->get<std::int64_t>());
  };
  for (const auto& [field, value] : body.items()) {
    static const std::set<std::string> kFields = {"name", "key", "job", "key_value", "rate", "burst",
                                                  "concurrency", "fair_share", "weights"};
    if (!kFields.contains(field)) {
      throw InvalidInput("unknown field \"" + field +
                         "\" (fields: name, key, job, key_value, rate, burst, concurrency, fair_share, weights)");
    }
  }
  FlowLimit limit{.name = *text("name", true), .key = *text("key", true), .job = text("job", false),
                  .key_value = text("key_value", false)};
  if (const auto rate = text("rate", false)) {
    const FlowRate parsed = parse_flow_rate(*rate);
    limit.rate = parsed.count;
    limit.per_seconds = parsed.per_seconds;
  }
  limit.burst = whole("burst").value_or(1);
  limit.concurrency = whole("concurrency");
  if (const auto it = body.find("fair_share"); it != body.end() && !it->is_null()) {
    if (!it->is_boolean()) throw InvalidInput("\"fair_share\" must be true or false");
    limit.fair_share = it->get<bool>();
  }
  if (const auto it = body.find("weights"); it != body.end() && !it->is_null()) {
    if (!it->is_object()) throw InvalidInput("\"weights\" must be a JSON object of key values and weights");
    // Only what FlowLimit cannot hold is refused here (a weight that is not a whole number of int's range),
    // in prescient.weights_problem's words; the range and the rest are that function's, which limit_set runs.
    for (const auto& [value, weight] : it->items()) {
      if (!weight.is_number_integer() || weight.get<std::int64_t>() < INT32_MIN || weight.get<std::int64_t>() > INT32_MAX) {
        throw InvalidInput("the weight of '" + value + "' must be a whole number from 1 to 1000, not " + weight.dump());
      }
      limit.weights[value] = static_cast<int>(weight.get<std::int64_t>());
    }
  }
  return limit;
}

}  // namespace prescient

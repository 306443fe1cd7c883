#include "prescient/log.hpp"

#include <nlohmann/json.hpp>
#include <spdlog/pattern_formatter.h>
#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>

#include <string>

#include "core/log_trace.hpp"
#include "prescient/errors.hpp"
#include "prescient/time_text.hpp"

namespace prescient {
namespace {

// One JSON object per line, with the message escaped properly (a pattern cannot escape).
class JsonFormatter final : public spdlog::formatter {
 public:
  void format(const spdlog::details::log_msg& msg, spdlog::memory_buf_t& dest) override {
    nlohmann::json line{
        {"time", format_time(std::chrono::time_point_cast<Micros>(msg.time))},
        {"level", std::string(spdlog::level::to_string_view(msg.level).data(),
                              spdlog::level::to_string_view(msg.level).size())},
        {"msg", std::string(msg.payload.data(), msg.payload.size())},
    };
    // Formatted on the logging thread (the sink is synchronous), so the thread's scope is the line's.
    if (const std::string* traceparent = core::log_traceparent()) {
      line["trace_id"] = traceparent->substr(3, 32);
      line["span_id"] = traceparent->substr(36, 16);
    }
    const std::string text = line.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
    dest.append(text.data(), text.data() + text.size());
  }
  std::unique_ptr<spdlog::formatter> clone() const override { return std::make_unique<JsonFormatter>(); }
};

spdlog::level::level_enum parse_log_level(std::string_view level) {
  const spdlog::level::level_enum parsed = spdlog::level::from_str(std::string(level));
  if (parsed == spdlog::level::off && level != "off") {
    throw InvalidInput("invalid --log-level '" + std::string(level) +
                       "': use trace, debug, info, warn, error, critical or off");
  }
  return parsed;
}

}  // namespace

LogFormat parse_log_format(std::string_view name) {
  if (name == "text") return LogFormat::text;
  if (name == "json") return LogFormat::json;
  throw InvalidInput("invalid --log-format '" + std::string(name) + "': use text or json");
}

void set_log_level(std::string_view level) { spdlog::set_level(parse_log_level(level)); }

void configure_logging(LogFormat format, std::string_view level) {
  const spdlog::level::level_enum parsed = parse_log_level(level);
  auto logger = std::make_shared<spdlog::logger>("prescient", std::make_shared<spdlog::sinks::stderr_sink_mt>());
  if (format == LogFormat::json) {
    logger->set_formatter(std::make_unique<JsonFormatter>());
  } else {
    logger->set_formatter(std::make_unique<spdlog::pattern_formatter>("%Y-%m-%dT%H:%M:%S.%fZ %l %v",
                                                                      spdlog::pattern_time_type::utc));
  }
  logger->set_level(parsed);
  spdlog::set_default_logger(std::move(logger));
}

}  // namespace prescient

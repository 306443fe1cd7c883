#pragma once
// Logging setup: one line per event on stderr, as text or as JSON objects for machines.
#include <optional>
#include <string>
#include <string_view>

namespace prescient {

enum class LogFormat { text, json };

// Throws InvalidInput for an unknown format or level name.
LogFormat parse_log_format(std::string_view name);
void configure_logging(LogFormat format, std::string_view level);
// Changes the level of the running logger (a reload: the format stays). Throws InvalidInput for an unknown
// level name.
void set_log_level(std::string_view level);

// Within its scope, this thread's log lines belong to one run's trace (docs/operations.md, "Traces in the
// logs"): the JSON format writes the W3C traceparent's trace id and span id as trace_id and span_id, so a
// collector joins them to the trace. None, or one that does not read as a traceparent, adds nothing. The
// traceparent must outlive the scope; scopes nest, the innermost counts.
class LogTrace {
 public:
  explicit LogTrace(const std::optional<std::string>& traceparent) noexcept;
  ~LogTrace();
  LogTrace(const LogTrace&) = delete;
  LogTrace& operator=(const LogTrace&) = delete;

 private:
  const std::string* outer_;
};

}  // namespace prescient

#pragma once
// Internal: the trace a thread's log lines belong to (prescient::LogTrace sets it), for the log formatter.
#include <string>

namespace prescient::core {

// The traceparent of the run this thread logs for, or null outside a LogTrace.
const std::string* log_traceparent() noexcept;

}  // namespace prescient::core

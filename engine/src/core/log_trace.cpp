// LogTrace (prescient/log.hpp): a thread's current run's traceparent, in core/ so that the runner, which may
// use only core/, sets it, and ops/log.cpp's JSON formatter reads it.
#include "core/log_trace.hpp"

#include "prescient/log.hpp"

namespace prescient {
namespace {

thread_local const std::string* current_traceparent = nullptr;

// 00-<32 hex trace id>-<16 hex span id>-<2 hex flags>: the shape prescient.run_traceparent gives.
bool reads_as_traceparent(const std::string& t) {
  return t.size() == 55 && t.compare(0, 3, "00-") == 0 && t[35] == '-' && t[52] == '-';
}

}  // namespace

LogTrace::LogTrace(const std::optional<std::string>& traceparent) noexcept : outer_(current_traceparent) {
  if (traceparent && reads_as_traceparent(*traceparent)) current_traceparent = &*traceparent;
}

LogTrace::~LogTrace() { current_traceparent = outer_; }

const std::string* core::log_traceparent() noexcept { return current_traceparent; }

}  // namespace prescient

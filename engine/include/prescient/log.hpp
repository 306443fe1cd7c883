#pragma once
// Logging setup: one line per event on stderr, as text or as JSON objects for machines.
#include <string_view>

namespace prescient {

enum class LogFormat { text, json };

// Throws InvalidInput for an unknown format or level name.
LogFormat parse_log_format(std::string_view name);
void configure_logging(LogFormat format, std::string_view level);
// Changes the level of the running logger (a reload: the format stays). Throws InvalidInput for an unknown
// level name.
void set_log_level(std::string_view level);

}  // namespace prescient

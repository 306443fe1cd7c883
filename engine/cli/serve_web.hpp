#pragma once
// The HTTP server of `web`, `daemon --web-addr` and `daemon --metrics-addr`, its address and credentials
// judged first as options, so that a bad one is named where it was given (a flag, a variable, a line of
// the config file).
#include <memory>

#include "command.hpp"
#include "prescient/clock.hpp"
#include "web/web_server.hpp"

namespace prescient::cli {

// Serves with `options`, whose address is the value of `address_option` and whose credentials (if any)
// the value of `auth_option` ("" when it has none).
std::unique_ptr<web::WebServer> serve_web(const Invocation& in, const char* address_option, const char* auth_option,
                                          web::WebOptions options, const Clock& clock);

}  // namespace prescient::cli

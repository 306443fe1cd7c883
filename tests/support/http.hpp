#pragma once
// A minimal HTTP/1.0 client for tests that scrape a server of prescient's (the metrics endpoint).
#include <optional>
#include <string>

namespace prescient::testing {

// GET http://127.0.0.1:port/path; the response body, or nothing when the connection is refused or the
// status is not 200.
std::optional<std::string> http_get(int port, const std::string& path);

// A loopback port nobody listens on right now (the kernel's pick for port 0).
int free_loopback_port();

}  // namespace prescient::testing

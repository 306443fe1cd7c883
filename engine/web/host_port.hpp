#pragma once
// HOST:PORT flags (--addr, --web-addr, --metrics-addr): the host an IPv4 address or a name, the port 1 to
// 65535.
#include <string>

namespace prescient::web {

struct HostPort {
  std::string host;
  int port = 0;
};

// Throws InvalidInput naming the flag and the value.
HostPort parse_host_port(const std::string& address, const std::string& flag, const std::string& example);

}  // namespace prescient::web

#include "host_port.hpp"

#include "prescient/errors.hpp"

namespace prescient::web {

HostPort parse_host_port(const std::string& address, const std::string& flag, const std::string& example) {
  const auto refuse = [&] {
    throw InvalidInput("invalid " + flag + " '" + address + "': use HOST:PORT, e.g. " + example);
  };
  const auto colon = address.rfind(':');
  if (colon == std::string::npos || colon == 0) refuse();
  const std::string host = address.substr(0, colon), port = address.substr(colon + 1);
  if (host.find_first_not_of("0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ.-") != std::string::npos) {
    refuse();
  }
  if (port.empty() || port.size() > 5 || port.find_first_not_of("0123456789") != std::string::npos) refuse();
  const int number = std::stoi(port);
  if (number < 1 || number > 65535) refuse();
  return {host, number};
}

}  // namespace prescient::web

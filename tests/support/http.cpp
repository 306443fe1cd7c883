#include "http.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <stdexcept>

namespace prescient::testing {
namespace {

sockaddr_in loopback(int port) {
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(static_cast<std::uint16_t>(port));
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  return address;
}

class Socket {
 public:
  Socket() : fd_(::socket(AF_INET, SOCK_STREAM, 0)) {
    if (fd_ < 0) throw std::runtime_error("cannot create a socket");
  }
  ~Socket() { ::close(fd_); }
  Socket(const Socket&) = delete;
  Socket& operator=(const Socket&) = delete;
  int fd() const { return fd_; }

 private:
  int fd_;
};

}  // namespace

std::optional<std::string> http_get(int port, const std::string& path) {
  Socket socket;
  const sockaddr_in address = loopback(port);
  if (::connect(socket.fd(), reinterpret_cast<const sockaddr*>(&address), sizeof address) != 0) return std::nullopt;
  const std::string request = "GET " + path + " HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n";
  if (::send(socket.fd(), request.data(), request.size(), 0) != static_cast<ssize_t>(request.size())) return std::nullopt;
  std::string response;
  char buffer[4096];
  for (ssize_t n; (n = ::recv(socket.fd(), buffer, sizeof buffer, 0)) > 0;) response.append(buffer, n);
  const auto body = response.find("\r\n\r\n");
  if (response.rfind("HTTP/1.1 200", 0) != 0 && response.rfind("HTTP/1.0 200", 0) != 0) return std::nullopt;
  if (body == std::string::npos) return std::nullopt;
  return response.substr(body + 4);
}

int free_loopback_port() {
  Socket socket;
  sockaddr_in address = loopback(0);
  if (::bind(socket.fd(), reinterpret_cast<const sockaddr*>(&address), sizeof address) != 0) {
    throw std::runtime_error("cannot bind a loopback port");
  }
  socklen_t length = sizeof address;
  ::getsockname(socket.fd(), reinterpret_cast<sockaddr*>(&address), &length);
  return ntohs(address.sin_port);
}

}  // namespace prescient::testing

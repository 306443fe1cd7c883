#pragma once
// The dashboard: pages and a JSON API over HTTP (cpp-httplib), served by `prescient web` and by
// `prescient daemon --web-addr`. docs/web.md documents the API; docs/design.md says why this library.
//
// Security, whatever the routes: it listens on loopback unless given credentials (an --auth-file); with
// credentials every request must authenticate; without, the Host header must name loopback (no DNS
// rebinding). Every action is a POST carrying the page's anti-CSRF token in X-CSRF-Token, from the same
// origin; read-only mode serves no action. Every response forbids inline script (Content-Security-Policy)
// and framing; pages render database text with textContent only.
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <thread>

#include "prescient/clock.hpp"

namespace httplib {
class Server;
}

namespace prescient::web {

class Credentials;
class SessionPool;

struct WebOptions {
  std::string address = "127.0.0.1:8080";  // HOST:PORT
  std::string address_flag = "--addr";    // named in errors about the address
  // false: /metrics only (daemon --metrics-addr), served as Prometheus scrapes it: any address, no
  // authentication, no database.
  bool dashboard = true;
  bool read_only = false;
  std::optional<std::string> auth_file;
  std::string database_url;
  // Where pages and reads go, e.g. a streaming replica ("": database_url).
  std::string read_database_url;
  // Where the event stream's LISTEN goes: a direct connection when database_url is a pooler in
  // transaction mode ("": database_url).
  std::string listen_database_url;
  // When set, served at /metrics (the daemon's).
  std::function<std::string()> metrics;
};

// True for 127.0.0.0/8, ::1 and "localhost".
// (No IPv6 address is accepted as HOST: parse_host_port takes names and IPv4 addresses.)
bool is_loopback_host(const std::string& host);

class WebServer {
 public:
  // Binds at once and serves on a thread of its own. Throws InvalidInput for a bad address, a public
  // address without an auth file (for the dashboard), or a bad auth file; std::runtime_error when it
  // cannot listen.
  // REQUIRES: clock outlives the server.
  WebServer(WebOptions options, const Clock& clock);
  ~WebServer();  // stops serving and joins
  WebServer(const WebServer&) = delete;
  WebServer& operator=(const WebServer&) = delete;

  int port() const { return port_; }
  std::string url() const;

 private:
  // The dashboard, in steps: the credentials (refusing a public address without them), the sessions,
  // then each request's guard, the headers of every answer, the pages, the event stream and the API.
  void add_dashboard(const Clock& clock);
  void require_credentials_off_loopback();
  // Authentication (or a loopback Host), and for an action: not read-only, the CSRF token, the origin.
  void guard_requests(const std::string& csrf_token);
  void add_security_headers();
  void add_pages(const std::string& csrf_token);

  WebOptions options_;
  std::string host_;
  int port_ = 0;
  std::unique_ptr<Credentials> credentials_;
  std::unique_ptr<SessionPool> pool_;
  std::unique_ptr<SessionPool> read_pool_;  // when reads go elsewhere
  std::unique_ptr<httplib::Server> server_;
  std::thread thread_;
};

}  // namespace prescient::web

#include "web_server.hpp"

#include <httplib.h>
#include <openssl/crypto.h>
#include <spdlog/spdlog.h>

#include "event_stream.hpp"
#include "host_port.hpp"
#include "json_answer.hpp"
#include "prescient/errors.hpp"
#include "session_pool.hpp"
#include "web_api.hpp"
#include "web_assets.hpp"
#include "web_auth.hpp"
#include "web_pages.hpp"

namespace prescient::web {
namespace {

// A page's scripts, styles and data come from this server only; nothing inline, no frames.
constexpr const char* kContentSecurityPolicy =
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; "
    "base-uri 'none'; form-action 'self'; frame-ancestors 'none'";
constexpr int kDatabaseSessions = 4;

bool same_secret(const std::string& a, const std::string& b) {
  return a.size() == b.size() && CRYPTO_memcmp(a.data(), b.data(), a.size()) == 0;
}

// "127.0.0.1:8080" -> "127.0.0.1", "[::1]:8080" -> "::1", "localhost" -> "localhost".
std::string host_without_port(const std::string& host) {
  if (!host.empty() && host.front() == '[') {
    const auto end = host.find(']');
    return end == std::string::npos ? host : host.substr(1, end - 1);
  }
  return host.substr(0, host.rfind(':'));
}

bool is_action(const httplib::Request& request) { return request.method != "GET" && request.method != "HEAD"; }

}  // namespace

bool is_loopback_host(const std::string& host) {
  if (host == "localhost" || host == "::1") return true;
  int a = 0, b = 0, c = 0, d = 0;
  char end = 0;
  return std::sscanf(host.c_str(), "%d.%d.%d.%d%c", &a, &b, &c, &d, &end) == 4 && a == 127 && b >= 0 && b <= 255 &&
         c >= 0 && c <= 255 && d >= 0 && d <= 255;
}

WebServer::WebServer(WebOptions options, const Clock& clock) : options_(std::move(options)) {
  const HostPort where = parse_host_port(options_.address, options_.address_flag, "127.0.0.1:8080");
  host_ = where.host;
  server_ = std::make_unique<httplib::Server>();
  if (options_.dashboard) add_dashboard(clock);
  if (options_.metrics) {
    server_->Get("/metrics", [metrics = options_.metrics](const httplib::Request&, httplib::Response& response) {
      response.set_content(metrics(), "text/plain; version=0.0.4");
    });
  }
  if (!server_->bind_to_port(host_, where.port)) {
    throw std::runtime_error("cannot serve on " + options_.address + " (is the port taken?)");
  }
  port_ = where.port;
  thread_ = std::thread([this] { server_->listen_after_bind(); });
  if (options_.dashboard) {
    spdlog::info("serving the dashboard at {}{}{}", url(), options_.read_only ? " (read-only)" : "",
                 credentials_ ? " (with authentication)" : "");
  }
  if (options_.metrics) spdlog::info("serving metrics at http://{}/metrics", options_.address);
}

void WebServer::add_dashboard(const Clock& clock) {
  require_credentials_off_loopback();
  pool_ = std::make_unique<SessionPool>(options_.database_url, kDatabaseSessions);
  if (!options_.read_database_url.empty()) {
    read_pool_ = std::make_unique<SessionPool>(options_.read_database_url, kDatabaseSessions);
  }
  const std::string csrf_token = random_token();
  guard_requests(csrf_token);
  add_security_headers();
  add_pages(csrf_token);
  add_event_stream(*server_,
                   options_.listen_database_url.empty() ? options_.database_url : options_.listen_database_url);
  const auto who = [this](const httplib::Request& request) -> std::string {
    if (!credentials_) return "web";
    const auto name = credentials_->authenticate(request.get_header_value("Authorization"));
    return "web:" + name.value_or("?");
  };
  add_api_routes(*server_, ApiContext{.pool = *pool_,
                                      .reading = read_pool_ ? *read_pool_ : *pool_,
                                      .clock = clock, .read_only = options_.read_only, .who = who});
}

void WebServer::require_credentials_off_loopback() {
  if (options_.auth_file) credentials_ = std::make_unique<Credentials>(Credentials::load(*options_.auth_file));
  if (!credentials_ && !is_loopback_host(host_)) {
    throw InvalidInput("refusing to serve the dashboard on " + options_.address +
                       " without an auth file (--auth-file; the daemon's --web-auth-file): only loopback addresses"
                       " (127.0.0.1, localhost) may go without one");
  }
}

void WebServer::guard_requests(const std::string& csrf_token) {
  server_->set_pre_routing_handler([this, csrf_token](const httplib::Request& request, httplib::Response& response) {
    using Result = httplib::Server::HandlerResponse;
    if (credentials_) {
      if (!credentials_->authenticate(request.get_header_value("Authorization"))) {
        response.set_header("WWW-Authenticate", "Basic realm=\"prescient\", charset=\"UTF-8\"");
        send_error(response, 401, "authentication required");
        return Result::Handled;
      }
    } else if (!is_loopback_host(host_without_port(request.get_header_value("Host")))) {
      // A page elsewhere could point a name of its own at 127.0.0.1 (DNS rebinding) and read this
      // server as same-origin; such a request names that host, not loopback.
      send_error(response, 403, "the Host header must name this loopback server");
      return Result::Handled;
    }
    if (is_action(request)) {
      if (options_.read_only) {
        send_error(response, 403, "read-only: this dashboard serves no action");
        return Result::Handled;
      }
      if (!same_secret(request.get_header_value("X-CSRF-Token"), csrf_token)) {
        send_error(response, 403, "missing or wrong X-CSRF-Token: take it from the page's csrf-token meta tag");
        return Result::Handled;
      }
      const std::string origin = request.get_header_value("Origin");
      if (!origin.empty() && origin != "http://" + request.get_header_value("Host")) {
        send_error(response, 403, "cross-origin request refused");
        return Result::Handled;
      }
    }
    return Result::Unhandled;
  });
}

void WebServer::add_security_headers() {
  server_->set_post_routing_handler([](const httplib::Request& request, httplib::Response& response) {
    response.set_header("Content-Security-Policy", kContentSecurityPolicy);
    response.set_header("X-Content-Type-Options", "nosniff");
    response.set_header("X-Frame-Options", "DENY");
    response.set_header("Referrer-Policy", "no-referrer");
    if (request.path.rfind("/api/", 0) == 0) response.set_header("Cache-Control", "no-store");
  });
  server_->set_error_handler([](const httplib::Request& request, httplib::Response& response) {
    if (response.status == 404 && response.body.empty()) send_error(response, 404, "no such page: " + request.path);
  });
}

void WebServer::add_pages(const std::string& csrf_token) {
  // Every page is the one document, its navigation and its name filled in from the list of pages; its
  // script draws the page of that name (so each page has a link of its own).
  std::string_view index_html;
  for (const Asset& asset : web_assets()) {
    if (asset.path == "/index.html") index_html = asset.text;
  }
  for (const Page& page : web_pages()) {
    server_->Get(std::string(page.address),
                 [document = page_document(index_html, page, options_.read_only ? "" : csrf_token)](
                     const httplib::Request&, httplib::Response& response) {
                   response.set_content(document, "text/html; charset=utf-8");
                 });
  }
  for (const Asset& asset : web_assets()) {
    if (asset.path == "/index.html") continue;
    server_->Get("/assets" + std::string(asset.path), [&asset](const httplib::Request&, httplib::Response& response) {
      response.set_content(std::string(asset.text), std::string(asset.content_type));
    });
  }
}

WebServer::~WebServer() {
  server_->stop();
  if (thread_.joinable()) thread_.join();
}

std::string WebServer::url() const { return "http://" + options_.address + "/"; }

}  // namespace prescient::web

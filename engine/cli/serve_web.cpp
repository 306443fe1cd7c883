#include "serve_web.hpp"

#include "web/host_port.hpp"
#include "web/web_auth.hpp"

namespace prescient::cli {

std::unique_ptr<web::WebServer> serve_web(const Invocation& in, const char* address_option, const char* auth_option,
                                          web::WebOptions options, const Clock& clock) {
  options.address = in.get<std::string>(address_option);
  options.address_flag = std::string("--") + address_option;
  in.parsed(address_option, [&](const std::string& address) {
    return web::parse_host_port(address, options.address_flag, "127.0.0.1:8080");
  });
  if (*auth_option && in.has(auth_option)) {
    options.auth_file = in.get<std::string>(auth_option);
    in.parsed(auth_option, web::Credentials::load);
  }
  // What is left to refuse is the address: a public one without credentials.
  try {
    return std::make_unique<web::WebServer>(std::move(options), clock);
  } catch (const InvalidInput& e) {
    in.refuse(address_option, e.what());
  }
}

}  // namespace prescient::cli

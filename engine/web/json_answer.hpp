#pragma once
// The JSON answers of the dashboard's server, for its API, its checks before routing and its event
// stream alike: a body, or {"error": "..."} with the status that says what kind of failure it is.
#include <httplib.h>

#include <nlohmann/json.hpp>

#include <string>

namespace prescient::web {

inline void send_json(httplib::Response& response, const nlohmann::json& body, int status = 200) {
  response.status = status;
  response.set_content(body.dump(), "application/json");
}

inline void send_error(httplib::Response& response, int status, const std::string& why) {
  send_json(response, {{"error", why}}, status);
}

}  // namespace prescient::web

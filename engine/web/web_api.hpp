#pragma once
// The dashboard's JSON API (/api/...): the shapes of the CLI's --json, documented in docs/web.md. Reads
// are GETs; actions are POSTs (registered only when not read-only; the server checks their anti-CSRF
// token before they get here).
#include <functional>
#include <string>

#include "prescient/clock.hpp"

namespace httplib {
class Server;
struct Request;
}  // namespace httplib

namespace prescient::web {

class SessionPool;

struct ApiContext {
  SessionPool& pool;     // the primary's: actions
  SessionPool& reading;  // pages and reads: a replica's (WebOptions::read_database_url), or `pool`
  const Clock& clock;
  bool read_only = false;
  // Who asks, for the history's cancelled_by and a schedule's paused_by: "web" or "web:<credential>".
  std::function<std::string(const httplib::Request&)> who;
};

void add_api_routes(httplib::Server& server, const ApiContext& context);

}  // namespace prescient::web

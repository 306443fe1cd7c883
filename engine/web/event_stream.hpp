#pragma once
// The Events page's live tail: GET /api/events/stream[?type=T] answers with Server-Sent Events, one per
// outbox event as it commits, fed by LISTEN on a connection of its own (one per open stream, at most
// kMaxEventStreams at once). It starts with the last 100 events of the outbox, or after the event a
// reconnecting browser names in Last-Event-ID, so a dropped connection loses nothing.
#include <string>

namespace httplib {
class Server;
}

namespace prescient::web {

constexpr int kMaxEventStreams = 4;

void add_event_stream(httplib::Server& server, const std::string& database_url);

}  // namespace prescient::web

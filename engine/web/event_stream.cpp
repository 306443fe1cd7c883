#include "event_stream.hpp"

#include <httplib.h>
#include <soci/soci.h>
#include <spdlog/spdlog.h>

#include <atomic>
#include <charconv>
#include <chrono>
#include <memory>
#include <optional>

#include "json_answer.hpp"
#include "prescient/database.hpp"
#include "prescient/errors.hpp"
#include "prescient/events.hpp"

namespace prescient::web {
namespace {

constexpr int kBacklog = 100;
constexpr int kReadBatch = 500;
// A notification wakes the stream at once; without one it looks again this often anyway (an event
// becomes readable only when older concurrent transactions have finished, and that sends no NOTIFY).
// It is also how soon a stream notices the server stopping.
constexpr std::chrono::milliseconds kPoll{250};
// A comment line this often keeps proxies from closing an idle stream, and finds a browser gone (the
// second write after it left fails), so that its place among kMaxEventStreams is free again in seconds.
constexpr std::chrono::seconds kKeepAlive{2};

// "TX:SEQ", the id each event is sent with, and which a reconnecting EventSource sends back.
EventCursor event_cursor_of(const std::string& text) {
  const auto colon = text.find(':');
  const auto digits = [](std::string_view part) {
    return !part.empty() && part.size() <= 20 && part.find_first_not_of("0123456789") == std::string_view::npos;
  };
  if (colon == std::string::npos || !digits(std::string_view(text).substr(0, colon)) ||
      !digits(std::string_view(text).substr(colon + 1))) {
    throw InvalidInput("invalid event cursor '" + text + "': use TX:SEQ, as the stream's event ids are");
  }
  EventCursor cursor{text.substr(0, colon), 0};
  std::from_chars(text.data() + colon + 1, text.data() + text.size(), cursor.seq);
  return cursor;
}

// One open stream, counted among the open ones (by the handler) until it goes with its response.
struct Stream {
  explicit Stream(std::shared_ptr<std::atomic<int>> open) : open_streams(std::move(open)) {}
  ~Stream() { --*open_streams; }
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;

  std::shared_ptr<std::atomic<int>> open_streams;
  std::unique_ptr<soci::session> db;
  std::optional<EventReader> reader;
  EventCursor cursor;
  std::optional<std::string> type;
  std::chrono::steady_clock::time_point last_write = std::chrono::steady_clock::now();
};

// Sends what is new after the stream's cursor, then waits a little for more; false ends the stream.
bool pump(Stream& stream, httplib::DataSink& sink) {
  try {
    const std::vector<EventRow> events = stream.reader->read(stream.cursor, stream.type, kReadBatch);
    std::string out;
    for (const EventRow& e : events) {
      out += "id: " + e.tx + ":" + std::to_string(e.seq) + "\ndata: " +
             to_json(e).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n\n";
      stream.cursor = {e.tx, e.seq};
    }
    const auto now = std::chrono::steady_clock::now();
    if (out.empty() && now - stream.last_write >= kKeepAlive) out = ": keep-alive\n\n";
    if (!out.empty()) {
      if (!sink.write(out.data(), out.size())) return false;  // the browser went away
      stream.last_write = now;
    }
    if (events.size() < static_cast<std::size_t>(kReadBatch)) stream.reader->wait(kPoll);
    return true;
  } catch (const std::exception& e) {
    // The database failed: say so and end; the browser's EventSource reconnects from its last id.
    spdlog::warn("web: event stream ended: {}", e.what());
    const std::string out = "event: failure\ndata: " +
                            nlohmann::json{{"error", e.what()}}.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) +
                            "\n\n";
    sink.write(out.data(), out.size());
    sink.done();
    return true;
  }
}

}  // namespace

void add_event_stream(httplib::Server& server, const std::string& database_url) {
  const auto open_streams = std::make_shared<std::atomic<int>>(0);
  server.Get("/api/events/stream", [database_url, open_streams](const httplib::Request& request,
                                                                 httplib::Response& response) {
    if (open_streams->fetch_add(1) >= kMaxEventStreams) {
      open_streams->fetch_sub(1);
      send_error(response, 503, "too many live event streams (" + std::to_string(kMaxEventStreams) +
                                "): close another Events page, or read with `prescient events --follow`");
      return;
    }
    auto stream = std::make_shared<Stream>(open_streams);
    try {
      if (request.has_param("type") && !request.get_param_value("type").empty()) {
        stream->type = request.get_param_value("type");
      }
      std::optional<EventCursor> resume;
      if (request.has_header("Last-Event-ID")) resume = event_cursor_of(request.get_header_value("Last-Event-ID"));
      else if (request.has_param("after")) resume = event_cursor_of(request.get_param_value("after"));
      stream->db = connect(database_url);
      stream->reader.emplace(*stream->db);
      stream->reader->listen();  // before the first read: nothing committed in between is missed
      stream->cursor = resume ? *resume : stream->reader->before_last(kBacklog);
    } catch (const InvalidInput& e) {
      send_error(response, 400, e.what());
      return;
    } catch (const std::exception& e) {
      spdlog::warn("web: cannot open an event stream: {}", e.what());
      send_error(response, 503, e.what());
      return;
    }
    response.set_header("X-Accel-Buffering", "no");  // a proxy in front must not hold events back
    response.set_chunked_content_provider(
        "text/event-stream", [stream](std::size_t, httplib::DataSink& sink) { return pump(*stream, sink); });
  });
}

}  // namespace prescient::web

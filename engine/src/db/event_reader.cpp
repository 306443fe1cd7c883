#include "prescient/events.hpp"

#include <sys/select.h>

#include "db/pq.hpp"
#include "db/connection.hpp"
#include "prescient/database.hpp"
#include "prescient/errors.hpp"
#include "core/text_rules.hpp"
#include "prescient/time_text.hpp"

namespace prescient {

using namespace prescient::db;
using namespace prescient::core;

nlohmann::json to_json(const EventRow& e) {
  return {{"id", e.id},
          {"type", e.type},
          {"source", e.source},
          {"occurred_at", format_time(e.occurred_at)},
          {"emitted_at", format_time(e.emitted_at)},
          {"payload", e.payload},
          {"seq", e.seq},
          {"traceparent", e.traceparent ? nlohmann::json(*e.traceparent) : nlohmann::json(nullptr)}};
}

EventCursor EventReader::after_id(const std::string& id) {
  const pq::Result row = pq::exec(native_connection(db_), "cannot find the event",
                                  "SELECT tx::text, seq FROM prescient.event WHERE id = $1", {id});
  if (row.rows() == 0) throw NotFound("no event with id '" + id + "'");
  return {row.text(0, 0), row.integer(0, 1)};
}

EventCursor EventReader::before_last(int n) {
  if (n < 1) throw InvalidInput("invalid count " + std::to_string(n) + " of events: at least 1");
  const pq::Result row = pq::exec(native_connection(db_), "cannot find events",
                                  "SELECT tx::text, seq FROM prescient.event ORDER BY event.tx DESC, seq DESC OFFSET $1 LIMIT 1",
                                  {std::to_string(n)});
  if (row.rows() == 0) return {};
  return {row.text(0, 0), row.integer(0, 1)};
}

EventCursor EventReader::from_time(TimePoint t) {
  const pq::Result row = pq::exec(
      native_connection(db_), "cannot find events",
      "SELECT tx::text, seq FROM prescient.event WHERE emitted_at >= prescient.at_us($1) ORDER BY event.tx, seq LIMIT 1",
      {std::to_string(to_unix_micros(t))});
  if (row.rows() == 0) {
    // Nothing that late yet: start after everything there is.
    const pq::Result last = pq::exec(native_connection(db_), "cannot find events",
                                     "SELECT tx::text, seq FROM prescient.event ORDER BY event.tx DESC, seq DESC LIMIT 1");
    return last.rows() == 0 ? EventCursor{} : EventCursor{last.text(0, 0), last.integer(0, 1)};
  }
  // Just before it: same transaction, the sequence number one lower.
  return {row.text(0, 0), row.integer(0, 1) - 1};
}

// Every ORDER BY names event.tx: a bare `tx` would be the output column `tx::text`, ordered as text
// (transaction 999 after 1000), which delivered events out of order and again.
std::vector<EventRow> EventReader::read(const EventCursor& cursor, const std::optional<std::string>& type, int limit) {
  const pq::Result rows = pq::exec(
      native_connection(db_), "cannot read events",
      "SELECT id, type, source, prescient.us(occurred_at), prescient.us(emitted_at), payload::text, seq, tx::text,"
      "       traceparent"
      "  FROM prescient.event"
      " WHERE (tx, seq) > ($1::xid8, $2::bigint) AND tx < pg_snapshot_xmin(pg_current_snapshot())"
      "   AND ($3::text IS NULL OR type = $3)"
      " ORDER BY event.tx, seq LIMIT $4",
      {cursor.tx, std::to_string(cursor.seq), type, std::to_string(limit)});
  std::vector<EventRow> out(rows.rows());
  for (int r = 0; r < rows.rows(); ++r) {
    out[r] = {.id = rows.text(r, 0),
              .type = rows.text(r, 1),
              .source = rows.text(r, 2),
              .occurred_at = rows.time(r, 3),
              .emitted_at = rows.time(r, 4),
              .payload = readable_payload(rows.text(r, 5)),
              .seq = rows.integer(r, 6),
              .tx = rows.text(r, 7),
              .traceparent = rows.optional_text(r, 8)};
  }
  return out;
}

void EventReader::listen() {
  pq::exec(native_connection(db_), "cannot listen for events", "LISTEN prescient_event");
}

void EventReader::wait(std::chrono::milliseconds timeout) {
  PGconn* conn = native_connection(db_);
  const int socket = PQsocket(conn);
  if (socket < 0) throw DatabaseError("the connection is closed");
  fd_set readable;
  FD_ZERO(&readable);
  FD_SET(socket, &readable);
  timeval tv{.tv_sec = static_cast<time_t>(timeout.count() / 1000),
             .tv_usec = static_cast<suseconds_t>(timeout.count() % 1000 * 1000)};
  ::select(socket + 1, &readable, nullptr, nullptr, &tv);
  if (PQconsumeInput(conn) == 0 || PQstatus(conn) != CONNECTION_OK) {
    throw DatabaseError("lost the connection: " + one_line(PQerrorMessage(conn)));
  }
  while (PGnotify* n = PQnotifies(conn)) PQfreemem(n);
}

}  // namespace prescient

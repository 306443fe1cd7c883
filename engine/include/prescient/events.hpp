#pragma once
// Reading the outbox: events in commit-safe order, from a cursor, once each.
#include <nlohmann/json.hpp>

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "prescient/time.hpp"

namespace soci {
class session;
}

namespace prescient {

struct EventRow {
  std::string id;
  std::string type;
  std::string source;
  TimePoint occurred_at;
  TimePoint emitted_at;
  nlohmann::json payload;
  std::int64_t seq = 0;
  std::string tx;  // the cursor's first half (xid8 as text)
  // The trace context of the run that published it (docs/design.md, "Trace context"), or none.
  std::optional<std::string> traceparent;
};

// A position in the outbox: after (tx, seq). The default is the beginning.
struct EventCursor {
  std::string tx = "0";
  std::int64_t seq = 0;
};

nlohmann::json to_json(const EventRow& event);

class EventReader {
 public:
  explicit EventReader(soci::session& db) : db_(db) {}

  // The cursor right after the event with this id. Throws NotFound for an unknown id.
  EventCursor after_id(const std::string& id);
  // The cursor before the first event emitted at or after `t`.
  EventCursor from_time(TimePoint t);
  // The cursor before the last `n` events of the outbox (its beginning when there are fewer): a read
  // of the newest index entries only, however long the outbox.
  EventCursor before_last(int n);

  // Up to `limit` events after `cursor` whose transactions have all finished, in (tx, seq) order.
  std::vector<EventRow> read(const EventCursor& cursor, const std::optional<std::string>& type, int limit);

  // For following the outbox: listen() asks the server to announce new events on this session (LISTEN;
  // it needs a session of its own, not one behind a transaction pooler); wait() then returns as soon as
  // one is announced, or after `timeout`. Throws DatabaseError when the connection is gone.
  void listen();
  void wait(std::chrono::milliseconds timeout);

 private:
  soci::session& db_;
};

}  // namespace prescient

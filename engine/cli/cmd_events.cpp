#include <nlohmann/json.hpp>
#include <soci/soci.h>
#include <spdlog/spdlog.h>

#include <atomic>
#include <iostream>
#include <thread>

#include "core/text_rules.hpp"
#include "check_options.hpp"
#include "db/connection.hpp"
#include "prescient/database.hpp"
#include "prescient/duration.hpp"
#include "prescient/errors.hpp"
#include "prescient/events.hpp"
#include "prescient/migrations.hpp"
#include "prescient/clock.hpp"
#include "prescient/time_text.hpp"
#include "signal_watch.hpp"

namespace prescient::cli {

using namespace prescient::db;
using namespace prescient::core;
namespace {

constexpr int kFollowBatch = 1000;

void print_event(const EventRow& e, bool json) {
  if (json) std::cout << to_json(e) << "\n";
  else std::cout << format_time(e.emitted_at) << "  " << e.id << "  " << e.type << "  " << e.payload.dump() << "\n";
}

EventCursor start_of(const Invocation& in, EventReader& reader) {
  if (!in.has("since")) return {};
  const std::string since = in.get<std::string>("since");
  // A time (ISO-8601 or @unix) or an event id.
  try {
    return reader.from_time(parse_time(since));
  } catch (const InvalidInput&) {
    return reader.after_id(since);
  }
}

// Connects (again after any failure), resolves --since on the first connection, then prints events as
// they commit until SIGTERM/SIGINT. Bad input (an unparsable --db, an unknown --since id) ends it at once.
int follow(const Invocation& in, const std::optional<std::string>& type) {
  std::atomic<bool> stop{false};
  SignalWatch signals;
  signals.start([&](int) { stop = true; });
  std::optional<EventCursor> cursor;
  std::chrono::seconds backoff{1};
  std::optional<std::string> listen_url;  // found on the first connection
  while (!stop) {
    try {
      std::unique_ptr<soci::session> db;
      if (!listen_url) {
        db = in.connect_migrated();
        listen_url = listen_database_url(in, *db);
      }
      if (!db || *listen_url != in.database_url()) {
        db = connect(*listen_url);
        require_current_schema(*db);
      }
      EventReader reader(*db);
      reader.listen();
      if (!cursor) cursor = start_of(in, reader);
      backoff = std::chrono::seconds{1};
      while (!stop) {
        const auto events = reader.read(*cursor, type, kFollowBatch);
        for (const EventRow& e : events) {
          print_event(e, in.json());
          cursor = {e.tx, e.seq};
        }
        std::cout << std::flush;
        if (events.size() == kFollowBatch) continue;
        // A notification wakes us at once; without one we look again shortly anyway: an event becomes
        // readable only when older concurrent transactions have finished, and that sends no NOTIFY.
        reader.wait(std::chrono::milliseconds{250});
      }
    } catch (const InvalidInput&) {
      throw;
    } catch (const NotFound&) {
      throw;
    } catch (const std::exception& e) {
      spdlog::warn("events: {}; reconnecting in {}{}", one_line(e.what()), format_duration(backoff),
                   cursor ? " and resuming after seq " + std::to_string(cursor->seq) : "");
      for (auto waited = std::chrono::milliseconds{0}; waited < backoff && !stop; waited += std::chrono::milliseconds{100}) {
        std::this_thread::sleep_for(std::chrono::milliseconds{100});
      }
      backoff = std::min(backoff * 2, std::chrono::seconds{30});
    }
  }
  return kOk;
}

}  // namespace

Command events_command() {
  return {
      .name = "events",
      .summary = "Read the outbox: events in commit order, once each; --follow waits for new ones (LISTEN).",
      .usage = "events [--since ID|TIME] [--type TYPE] [--limit N] [--follow [--listen-db URL]] [--json]",
      .add_options =
          [](po::options_description& desc) {
            add_listen_db_option(desc);
            desc.add_options()
                ("since", po::value<std::string>()->value_name("ID|TIME"),
                 "start after the event with this id, or with the first emitted at or after this time")
                ("type", po::value<std::string>()->value_name("TYPE"), "only events of this type")
                ("limit", po::value<int>()->value_name("N")->default_value(100), "at most N events (not with --follow)")
                ("follow", "keep printing new events as they commit; waits for the database and survives a dropped connection; SIGTERM stops")
                ("json", "print JSON: an array, or one object per line with --follow");
          },
      .run =
          [](const Invocation& in) -> int {
            const int limit = in.get<int>("limit");
            if (limit < 1) in.refuse("limit", "invalid --limit " + std::to_string(limit) + ": it must be at least 1");
            const auto type = optional_flag(in, "type");
            if (in.has("follow")) return follow(in, type);
            auto db = in.connect_migrated();
            EventReader reader(*db);
            const auto events = reader.read(start_of(in, reader), type, limit);
            if (in.json()) {
              print_json_array(events);
            } else {
              for (const auto& e : events) print_event(e, false);
            }
            return kOk;
          },
  };
}

}  // namespace prescient::cli

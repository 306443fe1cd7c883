// The dashboard at scale: the pending table and the history grown to `rows` each, then every API call the
// pages make timed through a real server (the median of 5; each should answer in under 200 ms), and the
// background count of the figures timed (what one daemon of all pays once a minute).
// Pending checks are spread over a year of 1-minute slots in 3 classes; settlements over the last 30
// days, one in a thousand failed (the dead letters).
#include <httplib.h>

#include <cstdio>
#include <iostream>
#include <thread>

#include "bench_support.hpp"
#include "prescient/clock.hpp"
#include "prescient/queue_stats.hpp"
#include "prescient/time_text.hpp"
#include "web/web_server.hpp"

namespace prescient::bench {
namespace {

void grow_pending(soci::session& db, long rows) {
  in_chunks(0, rows, [&](long first, long last) {
    db << "INSERT INTO prescient.future_job (job, entity_name, entity_key, group_key, payload, first_check_at,"
          "    next_check_at, enqueued_on, enqueued_by)"
          " SELECT (ARRAY['noop', 'emit', 'reminder'])[i % 3 + 1], 'user', i::text, 'g' || (i % 1000), '{}', t, t,"
          "        now(), 'bench'"
          "   FROM generate_series(:from_row::bigint, :to_row::bigint) i,"
          "        LATERAL (SELECT date_trunc('minute', now()) + ((i * 7919) % 525600 + 1) * interval '1 minute' AS t) x",
        soci::use(first), soci::use(last);
  });
}

void grow_history(soci::session& db, long rows) {
  in_chunks(0, rows, [&](long first, long last) {
    db << "INSERT INTO prescient.job_history (id, job, entity_name, entity_key, payload, first_check_at,"
          "    last_check_at, check_count, attempts, last_error, enqueued_on, enqueued_by, finished_at, finished_by,"
          "    outcome)"
          " SELECT 100000000 + i, 'noop', 'user', i::text, '{}', t, t, 1, 1,"
          "        CASE WHEN i % 1000 = 0 THEN 'boom' END, t, 'bench', t + interval '1 second', 'bench',"
          "        CASE WHEN i % 1000 = 0 THEN 'failed' ELSE 'done' END"
          "   FROM generate_series(:from_row::bigint, :to_row::bigint) i,"
          "        LATERAL (SELECT now() - (i % 2592000) * interval '1 second' AS t) x",
        soci::use(first), soci::use(last);
  });
}

// Schedules firing every 1 to 60 minutes (each with its pending cron check), through the SQL API.
void grow_schedules(soci::session& db, long count) {
  for (long first = 0; first < count; first += 10000) {
    const long last = std::min(count, first + 10000) - 1;
    db << "SELECT prescient.cron_add_many((SELECT jsonb_agg(jsonb_build_object('id', 's' || i, 'spec',"
          "   '@every ' || (i % 60 + 1) || 'm')) FROM generate_series(:from_row::bigint, :to_row::bigint) i))",
        soci::use(first), soci::use(last);
  }
}

void grow_events(soci::session& db, long count) {
  in_chunks(0, count, [&](long first, long last) {
    db << "INSERT INTO prescient.event (id, type, source, occurred_at, emitted_at, payload)"
          " SELECT 'ev-' || i, (ARRAY['order.shipped', 'reminder.sent', 'cron'])[i % 3 + 1], 'bench', t, t, '{}'"
          "   FROM generate_series(:from_row::bigint, :to_row::bigint) i,"
          "        LATERAL (SELECT now() - (i % 2592000) * interval '1 second' AS t) x",
        soci::use(first), soci::use(last);
  });
}

// The seconds to the first bytes of a response that does not end (the Events page's stream); throws
// unless it answers 200.
double first_bytes_seconds(httplib::Client& client, const std::string& path) {
  const auto started = Steady::now();
  double seconds = -1;
  int status = 0;
  client.Get(
      path.c_str(), [&](const httplib::Response& response) { return (status = response.status) == 200; },
      [&](const char*, std::size_t) {
        seconds = seconds_since(started);
        return false;  // enough: close it
      });
  if (status != 200 || seconds < 0) throw std::runtime_error("dashboard: " + path + " answered " + std::to_string(status));
  return seconds;
}

}  // namespace

void dashboard(const std::string& url, soci::session& db, long rows) {
  reset(db);
  const auto grow_start = Steady::now();
  grow_pending(db, rows);
  grow_history(db, rows);
  grow_schedules(db, rows / 100);
  grow_events(db, rows / 10);
  for (int i = 0; i < 8; ++i) {
    db << "SELECT prescient.record_runner_seen('bench-' || :i, :i || '/8', date_bin('1 minute', now(), 'epoch'), 100)",
        soci::use(i), soci::use(i);
  }
  db << "VACUUM ANALYZE prescient.future_job";
  db << "VACUUM ANALYZE prescient.job_history";
  db << "VACUUM ANALYZE prescient.event";
  db << "CHECKPOINT";
  std::cerr << "dashboard: grew " << rows << " pending and " << rows << " history rows, " << rows / 100
            << " schedules and " << rows / 10 << " events in " << seconds_since(grow_start) << " s\n";

  // The background count: in full (the whole pending table, the last day of history), then as it goes
  // once a minute: the day ahead of pending checks and the last hour or two of history (the checks due
  // later are counted one time in ten, the hours before are final).
  const TimePoint now = SystemClock().now();
  const auto count = [&](const char* which, TimePoint at, Micros max_age) {
    const auto started = Steady::now();
    if (!refresh_queue_figures(db, at, max_age)) throw std::runtime_error("dashboard: the figures were not counted");
    report(std::string("dashboard figures, ") + which, rows, seconds_since(started),
           {{"milliseconds", seconds_since(started) * 1000}});
  };
  count("full count", now, Micros{0});
  count("count a minute later", now + std::chrono::seconds{61}, kFiguresMaxAge);

  const SystemClock clock;
  const int port = 18000 + static_cast<int>(::getpid() % 1000);
  const web::WebServer server({.address = "127.0.0.1:" + std::to_string(port), .database_url = url}, clock);
  httplib::Client client("127.0.0.1", port);
  long some_id = 0;
  db << "SELECT min(id) FROM prescient.future_job", soci::into(some_id);
  const std::vector<std::string> calls{
      "/api/stats",
      "/api/future?zoom=slot",
      "/api/future?zoom=hour",
      "/api/future?zoom=day",
      "/api/past",
      "/api/checks",
      "/api/checks?job=reminder",
      "/api/checks?entity_name=user&entity_key=123457",
      "/api/checks?group_key=g7",
      "/api/checks?job=absent",
      "/api/checks/" + std::to_string(some_id),
      "/api/dead-letters",
      "/api/dead-letters?job=noop",
      "/api/dead-letters/count",
      "/api/schedules",
      "/api/schedules?job=emit&after=s5000",
      "/api/schedules?state=paused",
      "/api/schedules/s4242",
      "/api/runners",
      "/",
      "/assets/app.js",
  };
  for (const std::string& call : calls) {
    std::vector<Run> runs;
    int status = 0;
    for (int rep = 0; rep < 5; ++rep) {
      const auto started = Steady::now();
      const auto response = client.Get(call);
      runs.push_back({.seconds = seconds_since(started)});
      status = response ? response->status : -1;
    }
    const Run& median = median_of(runs);
    report("dashboard GET " + call, rows, median.seconds,
           {{"milliseconds", median.seconds * 1000}, {"status", status}, {"under_200_ms", median.seconds < 0.2}});
  }
  for (const std::string stream : {"/api/events/stream", "/api/events/stream?type=cron"}) {
    std::vector<Run> runs;
    for (int rep = 0; rep < 5; ++rep) {
      runs.push_back({.seconds = first_bytes_seconds(client, stream)});
      // A closed stream holds its place (one of kMaxEventStreams) until a keep-alive write finds it gone.
      std::this_thread::sleep_for(std::chrono::seconds{5});
    }
    const Run& median = median_of(runs);
    report("dashboard GET " + stream + " (first events)", rows, median.seconds,
           {{"milliseconds", median.seconds * 1000}, {"under_200_ms", median.seconds >= 0 && median.seconds < 0.2}});
  }
  // One request of "retry all": its bounded step (250 dead letters put back), then the rest of them.
  const auto page = client.Get("/");
  const std::string marker = "name=\"csrf-token\" content=\"";
  const std::string token = page->body.substr(page->body.find(marker) + marker.size(), 64);
  std::vector<Run> runs;
  for (int rep = 0; rep < 5; ++rep) {
    const auto started = Steady::now();
    const auto response = client.Post("/api/dead-letters/retry", {{"X-CSRF-Token", token}}, "{}", "application/json");
    runs.push_back({.seconds = seconds_since(started)});
    if (!response || response->status != 200) throw std::runtime_error("dashboard: retry of dead letters failed");
  }
  const Run& median = median_of(runs);
  report("dashboard POST /api/dead-letters/retry (250 a request)", rows, median.seconds,
         {{"milliseconds", median.seconds * 1000}, {"under_200_ms", median.seconds < 0.2}});
}

}  // namespace prescient::bench

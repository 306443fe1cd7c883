// The figures of the whole queue, counted in the background (sql/functions/075_queue_figures.sql) and
// read by stats, metrics and the dashboard.
#include <catch2/catch.hpp>
#include <soci/soci.h>

#include <thread>

#include "prescient/clock.hpp"
#include "prescient/queue_stats.hpp"
#include "prescient/time_text.hpp"
#include "test_database.hpp"

using namespace prescient;
using prescient::testing::connect_to;
using prescient::testing::count_of;
using prescient::testing::create_migrated_database;

namespace {

void schedule(soci::session& db, const std::string& job, const std::string& key, const std::string& at,
              const std::string& now) {
  db << "SELECT prescient.schedule(:job, 'e', :key, :at::timestamptz, p_now => :now::timestamptz)", soci::use(job),
      soci::use(key), soci::use(at), soci::use(now);
}

void finished(soci::session& db, long long id, const std::string& outcome, const std::string& due,
              const std::string& at) {
  db << "INSERT INTO prescient.job_history (id, job, entity_name, entity_key, payload, first_check_at, last_check_at,"
        "    check_count, attempts, last_error, enqueued_on, enqueued_by, finished_at, finished_by, outcome)"
        " VALUES (:id, 'noop', 'e', 'h' || :id, '{}', :due::timestamptz, :due::timestamptz, 1, 1, NULL,"
        "         :due::timestamptz, 'app', :at::timestamptz, 'r', :outcome)",
      soci::use(id), soci::use(id), soci::use(due), soci::use(due), soci::use(due), soci::use(at), soci::use(outcome);
}

long long figure(soci::session& db, const std::string& query) { return count_of(db, query); }

}  // namespace

TEST_CASE("queue figures: pending by bucket, horizon and class; the history by hour with lateness; dead letters") {
  auto db = connect_to(create_migrated_database(60));
  const TimePoint t = parse_time("2030-01-01T10:00:20Z");  // slot 10:00
  const std::string before = "2030-01-01T09:50:00Z";
  *db << "UPDATE prescient.settings SET max_horizon_seconds = 2 * 31536000";
  *db << "SELECT prescient.job_class_add('a'), prescient.job_class_add('b')";  // declared ahead of their runner
  schedule(*db, "noop", "overdue1", "2030-01-01T09:58:00Z", before);
  schedule(*db, "noop", "overdue2", "2030-01-01T09:59:00Z", before);
  schedule(*db, "noop", "due", "2030-01-01T10:00:00Z", before);
  for (const char* key : {"a1", "a2", "a3"}) schedule(*db, "a", key, "2030-01-01T10:05:00Z", before);
  schedule(*db, "b", "b1", "2030-01-01T10:05:00Z", before);
  schedule(*db, "noop", "tomorrow", "2030-01-02T05:30:00Z", before);   // past the 1 000 slots: by hour
  schedule(*db, "noop", "in3days", "2030-01-04T12:00:00Z", before);    // by day
  schedule(*db, "noop", "next_year", "2031-02-10T00:00:00Z", before);  // later
  finished(*db, 9001, "done", "2030-01-01T07:10:00Z", "2030-01-01T07:10:02Z");
  finished(*db, 9002, "done", "2030-01-01T07:20:00Z", "2030-01-01T07:20:04Z");
  finished(*db, 9003, "failed", "2030-01-01T09:30:00Z", "2030-01-01T09:30:01Z");
  finished(*db, 9004, "cancelled", "2030-01-01T11:00:00Z", "2030-01-01T09:50:00Z");
  finished(*db, 9005, "done", "2029-12-01T07:10:00Z", "2029-12-01T07:10:02Z");  // a month ago: not in the day

  REQUIRE(refresh_queue_figures(*db, t, Micros{0}));
  const auto horizon = pending_by_horizon(*db);
  REQUIRE(horizon);
  CHECK(horizon->counted_at == t);
  CHECK(horizon->overdue == 2);
  CHECK(horizon->due == 1);
  CHECK(horizon->next_hour == 4);
  CHECK(horizon->next_day == 1);
  CHECK(horizon->next_week == 1);
  CHECK(figure(*db, "SELECT pending FROM prescient.queue_figures") == 10);
  // The buckets, by class: the chart of the future reads these rows, not the pending table.
  CHECK(figure(*db, "SELECT checks FROM prescient.pending_figure WHERE bucket = 'slot' AND job = 'a'"
                    " AND starts_at = '2030-01-01T10:05:00Z'") == 3);
  CHECK(figure(*db, "SELECT checks FROM prescient.pending_figure WHERE bucket = 'slot' AND job = 'b'") == 1);
  CHECK(figure(*db, "SELECT checks FROM prescient.pending_figure WHERE bucket = 'hour'"
                    " AND starts_at = '2030-01-02T05:00:00Z'") == 1);
  CHECK(figure(*db, "SELECT checks FROM prescient.pending_figure WHERE bucket = 'day'"
                    " AND starts_at = '2030-01-04T00:00:00Z'") == 1);
  CHECK(figure(*db, "SELECT checks FROM prescient.pending_figure WHERE bucket = 'later' AND starts_at IS NULL") == 1);
  CHECK(figure(*db, "SELECT checks FROM prescient.pending_figure WHERE bucket = 'overdue'") == 2);
  // History: per hour and outcome, lateness from the slot to the settlement (2 s and 4 s: p50 3 s).
  CHECK(figure(*db, "SELECT checks FROM prescient.finished_figure WHERE hour = '2030-01-01T07:00:00Z'") == 2);
  CHECK(figure(*db, "SELECT round(lateness_p50_seconds * 1000) FROM prescient.finished_figure"
                    " WHERE hour = '2030-01-01T07:00:00Z'") == 3000);
  CHECK(figure(*db, "SELECT count(*) FROM prescient.finished_figure WHERE outcome = 'cancelled'"
                    " AND lateness_p50_seconds IS NULL") == 1);
  CHECK(figure(*db, "SELECT count(*) FROM prescient.finished_figure WHERE hour < '2030-01-01T00:00:00Z'") == 0);
  CHECK(figure(*db, "SELECT dead_letters FROM prescient.queue_figures") == 1);

  const QueueStats stats = queue_stats(*db, t, 5);
  CHECK(stats.pending == 10);
  CHECK(stats.due_now == 3);
  CHECK(stats.overdue == 2);
  CHECK(stats.next_slots.at(4).slot == parse_time("2030-01-01T10:05:00Z"));
  CHECK(stats.next_slots.at(4).checks == 4);
  CHECK(stats.finished_last_hour == std::map<Outcome, long long>{{Outcome::failed, 1}, {Outcome::cancelled, 1}});
  CHECK(stats.finished_last_day ==
        std::map<Outcome, long long>{{Outcome::done, 2}, {Outcome::failed, 1}, {Outcome::cancelled, 1}});
  REQUIRE(stats.oldest_overdue);
  CHECK(stats.oldest_overdue->next_check_at == parse_time("2030-01-01T09:58:00Z"));
}

TEST_CASE("queue figures are counted once per period by one session; readers in between read, never count") {
  const std::string url = create_migrated_database(60);
  auto db = connect_to(url);
  const TimePoint t = parse_time("2030-01-01T10:00:20Z");
  schedule(*db, "noop", "k1", "2030-01-01T10:05:00Z", "2030-01-01T09:50:00Z");
  schedule(*db, "noop", "k2", "2030-01-01T10:05:00Z", "2030-01-01T09:50:00Z");
  REQUIRE(refresh_queue_figures(*db, t, Micros{0}));
  *db << "SELECT prescient.cancel(max(id)) FROM prescient.future_job";  // a change, not an enqueue

  // Younger than the period: nobody counts; stats shows the figures as of their time.
  CHECK_FALSE(refresh_queue_figures(*db, t + std::chrono::seconds{59}));
  const QueueStats read = queue_stats(*db, t + std::chrono::seconds{30}, 5);
  CHECK(read.counted_at == t);
  CHECK(read.pending == 2);

  // Another session counting holds the lock: this one leaves it to it and counts nothing.
  auto other = connect_to(url);
  *other << "BEGIN";
  *other << "SELECT pg_advisory_xact_lock(7375828459127746562)";
  CHECK_FALSE(refresh_queue_figures(*db, t + std::chrono::minutes{5}, Micros{0}));
  *other << "ROLLBACK";

  // Older than the period: counted again.
  const QueueStats later = queue_stats(*db, t + std::chrono::seconds{61}, 5);
  CHECK(later.counted_at == t + std::chrono::seconds{61});
  CHECK(later.pending == 1);

  // A check enqueued since the count (a higher id than it saw): stats counts again, however young the
  // figures; the daemons' refresher goes by their age alone.
  schedule(*db, "noop", "k3", "2030-01-01T10:05:00Z", "2030-01-01T10:01:00Z");
  CHECK_FALSE(refresh_queue_figures(*db, t + std::chrono::seconds{62}));
  const QueueStats enqueued = queue_stats(*db, t + std::chrono::seconds{63}, 5);
  CHECK(enqueued.counted_at == t + std::chrono::seconds{63});
  CHECK(enqueued.pending == 2);
  CHECK(queue_stats(*db, t + std::chrono::seconds{64}, 5).counted_at == t + std::chrono::seconds{63});

  // A daemon's refresher keeps them young: it counts within a quarter of the period of its start.
  ManualClock clock(t + std::chrono::hours{1});
  {
    const FiguresRefresher refresher(url, clock, std::chrono::seconds{2});
    for (int i = 0; i < 50 && pending_by_horizon(*db)->counted_at != clock.now(); ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
  }
  CHECK(pending_by_horizon(*db)->counted_at == t + std::chrono::hours{1});
}

TEST_CASE("queue figures: hours of history that are over are counted once, the hour before the current one again") {
  auto db = connect_to(create_migrated_database(60));
  const TimePoint t = parse_time("2030-01-01T10:00:20Z");
  finished(*db, 9001, "done", "2030-01-01T07:10:00Z", "2030-01-01T07:10:02Z");
  finished(*db, 9002, "done", "2030-01-01T09:10:00Z", "2030-01-01T09:10:02Z");
  REQUIRE(refresh_queue_figures(*db, t, Micros{0}));
  // The history is purged and rows arrive late: the hour of 07:00 is final and stays as counted (it is
  // not read again); 09:00 is the hour before the current one, read again; 08:00 was final already.
  *db << "DELETE FROM prescient.job_history";
  finished(*db, 9003, "done", "2030-01-01T08:30:00Z", "2030-01-01T08:30:01Z");
  finished(*db, 9004, "done", "2030-01-01T09:20:00Z", "2030-01-01T09:20:01Z");
  REQUIRE(refresh_queue_figures(*db, t + std::chrono::minutes{2}, Micros{0}));
  CHECK(figure(*db, "SELECT checks FROM prescient.finished_figure WHERE hour = '2030-01-01T07:00:00Z'") == 1);
  CHECK(figure(*db, "SELECT count(*) FROM prescient.finished_figure WHERE hour = '2030-01-01T08:00:00Z'") == 0);
  CHECK(figure(*db, "SELECT checks FROM prescient.finished_figure WHERE hour = '2030-01-01T09:00:00Z'") == 1);
  // A day later the hours of the day before are gone.
  REQUIRE(refresh_queue_figures(*db, t + std::chrono::hours{25}, Micros{0}));
  CHECK(figure(*db, "SELECT count(*) FROM prescient.finished_figure") == 0);
}

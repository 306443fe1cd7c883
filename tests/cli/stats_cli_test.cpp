#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>
#include <soci/soci.h>

#include "process.hpp"
#include "test_database.hpp"

using namespace prescient::testing;
using nlohmann::json;

TEST_CASE("stats counts pending, due, overdue, the next slots, recent outcomes and dead letters") {
  const std::string url = create_migrated_database(60);
  auto db = connect_to(url);
  // Relative to the server's clock, which is the CLI's: three checks ten minutes ahead (one slot), two
  // scheduled an hour ago for half an hour ago (overdue now), one cancelled, two failed in history:
  // one of them is pending again (retried: the retry marked it), the other is a dead letter.
  *db << "SELECT prescient.schedule('noop', 'o', 'ahead' || i, now() + interval '10 minutes')"
         " FROM generate_series(1, 3) i";
  *db << "SELECT prescient.schedule('noop', 'o', 'late' || i, now() - interval '30 minutes',"
         "                          p_now => now() - interval '1 hour') FROM generate_series(1, 2) i";
  *db << "SELECT prescient.schedule('noop', 'o', 'c', now() + interval '1 hour', p_job_key => 'c')";
  *db << "SELECT prescient.cancel(p_job_key => 'c')";
  long long oldest = 0, retried = 0;
  *db << "SELECT min(id) FROM prescient.future_job WHERE entity_key LIKE 'late%'", soci::into(oldest);
  *db << "SELECT min(id) FROM prescient.future_job WHERE entity_key LIKE 'ahead%'", soci::into(retried);
  *db << "INSERT INTO prescient.job_history (id, job, entity_name, entity_key, payload, first_check_at, last_check_at,"
         "    check_count, attempts, last_error, enqueued_on, enqueued_by, finished_at, finished_by, outcome, retried)"
         " VALUES (9999, 'noop', 'o', 'dead', '{}', now(), now(), 1, 5, 'boom', now(), 'app',"
         "         now() - interval '2 hours', 'r', 'failed', false),"
         "        (:retried, 'noop', 'o', 'ahead1', '{}', now(), now(), 1, 5, 'boom', now(), 'app',"
         "         now() - interval '3 hours', 'r', 'failed', true)",
      soci::use(retried);

  const ProcessResult r = run_prescient(with_db({"stats", "--json", "--slots", "20"}, url));
  REQUIRE(r.exit_code == 0);
  const json s = json::parse(r.out);
  CHECK(s["pending"] == 5);
  CHECK(s["overdue"] == 2);
  CHECK(s["due_now"] == 2);
  CHECK(s["oldest_overdue"]["id"] == oldest);
  CHECK(s["next_slots"].size() == 20);
  long long ahead = 0, busiest = 0;
  for (const auto& slot : s["next_slots"]) {
    ahead += slot["checks"].get<long long>();
    busiest = std::max(busiest, slot["checks"].get<long long>());
  }
  CHECK(ahead == 3);
  CHECK(busiest == 3);  // the three share one slot
  CHECK(s["finished_last_hour"] == json{{"cancelled", 1}});
  CHECK(s["finished_last_day"] == json{{"cancelled", 1}, {"failed", 2}});
  CHECK(s["dead_letters"] == 1);

  const ProcessResult text = run_prescient(with_db({"stats"}, url));
  CHECK(text.exit_code == 0);
  CHECK_THAT(text.out, Catch::Contains("overdue        2") && Catch::Contains("dead letters   1") &&
                           Catch::Contains("###"));
  const ProcessResult bad = run_prescient(with_db({"stats", "--slots", "0"}, url));
  CHECK(bad.exit_code == 2);
  CHECK_THAT(bad.err, Catch::Contains("--slots must be between 1 and 1000, not 0"));
}

TEST_CASE("stats counts again when checks were enqueued since the figures, however young they are") {
  const std::string url = create_migrated_database(60);
  auto db = connect_to(url);
  const auto pending = [&] {
    const ProcessResult r = run_prescient(with_db({"stats", "--json"}, url));
    REQUIRE(r.exit_code == 0);
    return json::parse(r.out)["pending"].get<long long>();
  };
  CHECK(pending() == 0);  // counted now: the figures are young from here on
  *db << "SELECT prescient.schedule_arrays(array_agg('noop'::text), array_agg('o'::text), array_agg(i::text),"
         "                                 array_agg(now() + interval '1 hour'))"
         "  FROM generate_series(1, 1000) i";
  CHECK(pending() == 1000);
  // Nothing enqueued since: the young figures serve, counted once (a later count would move counted_at).
  std::string counted_at;
  *db << "SELECT prescient.us(counted_at)::text FROM prescient.queue_figures", soci::into(counted_at);
  CHECK(pending() == 1000);
  std::string again;
  *db << "SELECT prescient.us(counted_at)::text FROM prescient.queue_figures", soci::into(again);
  CHECK(again == counted_at);
  // A cancel (or a settlement) is not an enqueue: young figures stay as counted, as before.
  *db << "SELECT prescient.cancel(p_id => (SELECT max(id) FROM prescient.future_job))";
  CHECK(pending() == 1000);
  *db << "SELECT prescient.schedule('noop', 'o', 'more' || i, now() + interval '1 hour') FROM generate_series(1, 2) i";
  CHECK(pending() == 1001);
}

// Dead letters: checks whose last settlement was a failure and that are not pending again; counted,
// listed and put back in bounded steps (what the dashboard's "retry all" does).
#include <catch2/catch.hpp>
#include <soci/soci.h>

#include <algorithm>

#include "prescient/checks.hpp"
#include "prescient/queue_stats.hpp"
#include "prescient/time_text.hpp"
#include "test_database.hpp"

using namespace prescient;
using prescient::testing::connect_to;
using prescient::testing::count_of;
using prescient::testing::create_migrated_database;

namespace {

const TimePoint kNow = parse_time("2026-11-23T12:00:00Z");

// A settlement of check `id` of class `job`, `hours_ago` before kNow.
void settled(soci::session& db, long long id, const std::string& job, const std::string& outcome, int hours_ago,
             const std::string& job_key = "") {
  const std::string at = format_time(kNow - std::chrono::hours{hours_ago});
  db << "INSERT INTO prescient.job_history (id, job, entity_name, entity_key, job_key, payload, first_check_at,"
        "    last_check_at, check_count, attempts, last_error, enqueued_on, enqueued_by, finished_at, finished_by, outcome)"
        " VALUES (:id, :job, 'e', 'k' || :id, NULLIF(:key, ''), '{}', :at::timestamptz, :at::timestamptz, 1, 3, 'boom',"
        "         :at::timestamptz, 'app', :at::timestamptz, 'r', :outcome)",
      soci::use(id), soci::use(job), soci::use(id), soci::use(job_key), soci::use(at), soci::use(at), soci::use(at),
      soci::use(at), soci::use(outcome);
}

// Checks scheduled here take ids from the sequence (1, 2, ...); the settled ones above use ids from 101.
long long scheduled(soci::session& db, const std::string& key, const std::string& job_key) {
  long long id = 0;
  db << "SELECT id FROM prescient.schedule('noop', 'e', :key, '2026-11-23T13:00:00Z', NULLIF(:job_key, ''),"
        " p_now => '2026-11-23T12:00:00Z')",
      soci::use(key), soci::use(job_key), soci::into(id);
  return id;
}

}  // namespace

TEST_CASE("dead letters: only a failure that is its check's last, counted, listed and revived in bounded steps") {
  auto db = connect_to(create_migrated_database(60));
  settled(*db, 101, "a", "failed", 5);
  settled(*db, 102, "a", "failed", 4, "k2");
  settled(*db, 103, "a", "failed", 6);  // retried, and done since: no longer a dead letter
  settled(*db, 103, "a", "done", 2);
  const long long pending_again = scheduled(*db, "again", "");
  settled(*db, pending_again, "a", "failed", 3);  // pending again: not one
  settled(*db, 105, "a", "failed", 24 * 40);        // older than 30 days: not one
  settled(*db, 106, "b", "failed", 1);
  scheduled(*db, "holder", "taken");
  settled(*db, 107, "a", "failed", 2, "taken");  // a dead letter whose job key another pending check holds

  Checks checks(*db);
  const TimePoint since = kNow - std::chrono::days{30};
  CHECK(checks.count_dead_letters(std::nullopt, since, 1000) == 4);
  CHECK(checks.count_dead_letters("a", since, 1000) == 3);
  CHECK(checks.count_dead_letters("a", since, 2) == 2);  // bounded
  std::vector<std::int64_t> listed;
  for (const auto& h : checks.history({.outcome = Outcome::failed, .since = since, .dead_letters_only = true})) {
    listed.push_back(h.id);
  }
  std::sort(listed.begin(), listed.end());
  CHECK(listed == std::vector<std::int64_t>{101, 102, 106, 107});
  // The figures count them alike.
  refresh_queue_figures(*db, kNow, Micros{0});
  CHECK(count_of(*db, "SELECT dead_letters FROM prescient.queue_figures") == 4);

  // Class a, two at a time: 101 and 102 come back; 107 is skipped (its job key is taken) and stays; then none.
  const TimePoint at = kNow + std::chrono::minutes{1};
  const auto first = checks.revive_dead_letters("a", since, 0, 2, at);
  CHECK(first.revived == 2);
  CHECK(first.skipped == 0);
  CHECK(first.last_id == 102);
  const auto second = checks.revive_dead_letters("a", since, *first.last_id, 2, at);
  CHECK(second.revived == 0);
  CHECK(second.skipped == 1);
  CHECK(second.last_id == 107);
  const auto third = checks.revive_dead_letters("a", since, *second.last_id, 2, at);
  CHECK(third.revived == 0);
  CHECK(third.skipped == 0);
  CHECK_FALSE(third.last_id.has_value());
  CHECK(count_of(*db, "SELECT count(*) FROM prescient.future_job WHERE id IN (101, 102) AND attempts = 0"
                      " AND next_check_at = '2026-11-23T12:01:00Z'") == 2);
  CHECK(count_of(*db, "SELECT count(*) FROM prescient.future_job WHERE job_key = 'k2'") == 1);
  CHECK(checks.count_dead_letters("a", since, 1000) == 1);  // 107
  CHECK(checks.count_dead_letters(std::nullopt, since, 1000) == 2);  // 107 and 106 (of b, not asked for)
}

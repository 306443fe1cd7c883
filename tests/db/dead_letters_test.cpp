// Dead letters: failures not put back since (a retry marks the failure it revives); counted, listed and
// put back in bounded steps (what the dashboard's "retry all" does); and the migration that marked the
// failures put back before the mark existed.
#include <catch2/catch.hpp>
#include <soci/soci.h>

#include <algorithm>

#include "prescient/checks.hpp"
#include "prescient/migrations.hpp"
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

// The pending check `id` settles `done` now (as a runner would: its row moves to the history).
void settled_done(soci::session& db, long long id) {
  db << "WITH gone AS (DELETE FROM prescient.future_job WHERE id = :id RETURNING *)"
        " INSERT INTO prescient.job_history (id, job, entity_name, entity_key, job_key, payload, first_check_at,"
        "    last_check_at, check_count, attempts, enqueued_on, enqueued_by, finished_at, finished_by, outcome)"
        " SELECT id, job, entity_name, entity_key, job_key, payload, first_check_at, next_check_at, check_count + 1,"
        "        1, enqueued_on, enqueued_by, '2026-11-23T11:00:00Z', 'r', 'done' FROM gone",
      soci::use(id);
}

}  // namespace

TEST_CASE("dead letters: only a failure not put back since, counted, listed and revived in bounded steps") {
  auto db = connect_to(create_migrated_database(60));
  Checks checks(*db);
  const TimePoint earlier = kNow - std::chrono::hours{8};
  settled(*db, 101, "a", "failed", 5);
  settled(*db, 102, "a", "failed", 4, "k2");
  settled(*db, 103, "a", "failed", 6);  // retried, and done since: no longer a dead letter
  checks.revive_failed(103, earlier);
  settled_done(*db, 103);
  settled(*db, 104, "a", "failed", 7);  // retried and failed again: the second failure is the dead letter
  checks.revive_failed(104, earlier);
  *db << "DELETE FROM prescient.future_job WHERE id = 104";
  settled(*db, 104, "a", "failed", 3);
  settled(*db, 108, "a", "failed", 3);  // pending again: not one
  checks.revive_failed(108, earlier);
  settled(*db, 105, "a", "failed", 24 * 40);        // older than 30 days: not one
  settled(*db, 106, "b", "failed", 1);
  scheduled(*db, "holder", "taken");
  settled(*db, 107, "a", "failed", 2, "taken");  // a dead letter whose job key another pending check holds
  CHECK(count_of(*db, "SELECT count(*) FROM prescient.job_history WHERE retried") == 3);  // 103, 104's first, 108

  const TimePoint since = kNow - std::chrono::days{30};
  CHECK(checks.count_dead_letters(std::nullopt, since, 1000) == 5);
  CHECK(checks.count_dead_letters("a", since, 1000) == 4);
  CHECK(checks.count_dead_letters("a", since, 2) == 2);  // bounded
  std::vector<std::int64_t> listed;
  for (const auto& h : checks.history({.outcome = Outcome::failed, .since = since, .dead_letters_only = true})) {
    listed.push_back(h.id);
  }
  std::sort(listed.begin(), listed.end());
  CHECK(listed == std::vector<std::int64_t>{101, 102, 104, 106, 107});
  // The figures count them alike.
  refresh_queue_figures(*db, kNow, Micros{0});
  CHECK(count_of(*db, "SELECT dead_letters FROM prescient.queue_figures") == 5);

  // Class a, two at a time: 101 and 102 come back; then 104, and 107 is skipped (its job key is taken) and
  // stays; then none.
  const TimePoint at = kNow + std::chrono::minutes{1};
  const auto first = checks.revive_dead_letters("a", since, 0, 2, at);
  CHECK(first.revived == 2);
  CHECK(first.skipped == 0);
  CHECK(first.last_id == 102);
  const auto second = checks.revive_dead_letters("a", since, *first.last_id, 2, at);
  CHECK(second.revived == 1);
  CHECK(second.skipped == 1);
  CHECK(second.last_id == 107);
  const auto third = checks.revive_dead_letters("a", since, *second.last_id, 2, at);
  CHECK(third.revived == 0);
  CHECK(third.skipped == 0);
  CHECK_FALSE(third.last_id.has_value());
  CHECK(count_of(*db, "SELECT count(*) FROM prescient.future_job WHERE id IN (101, 102, 104) AND attempts = 0"
                      " AND next_check_at = '2026-11-23T12:01:00Z'") == 3);
  CHECK(count_of(*db, "SELECT count(*) FROM prescient.future_job WHERE job_key = 'k2'") == 1);
  CHECK(checks.count_dead_letters("a", since, 1000) == 1);  // 107
  CHECK(checks.count_dead_letters(std::nullopt, since, 1000) == 2);  // 107 and 106 (of b, not asked for)
}

TEST_CASE("migration 0020 marks the failures put back before retries marked them, and only those") {
  auto db = connect_to(create_migrated_database(60));
  // The schema as 0019 left it: no mark, the failures' index, and 0020 not applied.
  *db << "DROP INDEX prescient.job_history_dead_letter";
  // CASCADE: functions written since that read the mark (purge_dead_letters) go too; migrate makes them again.
  *db << "ALTER TABLE prescient.job_history DROP COLUMN retried CASCADE";
  *db << "CREATE INDEX job_history_failed ON prescient.job_history (finished_at, history_id) WHERE outcome = 'failed'";
  *db << "DELETE FROM prescient.schema_migrations WHERE version = 20";
  settled(*db, 101, "a", "failed", 5);  // a dead letter
  settled(*db, 103, "a", "failed", 6);  // retried, and done since
  settled(*db, 103, "a", "done", 2);
  settled(*db, 104, "a", "failed", 7);  // retried and failed again: only the first failure was put back
  settled(*db, 104, "a", "failed", 3);
  const long long pending_again = scheduled(*db, "again", "");
  settled(*db, pending_again, "a", "failed", 3);  // pending again

  migrate(*db, std::nullopt);
  CHECK(count_of(*db, "SELECT count(*) FROM prescient.schema_migrations WHERE version = 20") == 1);
  CHECK(count_of(*db, "SELECT count(*) FROM prescient.job_history WHERE retried") == 3);
  CHECK(count_of(*db, "SELECT count(*) FROM prescient.job_history WHERE retried AND (id = 103 OR id = " +
                          std::to_string(pending_again) + " OR (id = 104 AND finished_at < '2026-11-23T08:00:00Z'))") == 3);
  std::vector<std::int64_t> listed;
  for (const auto& h : Checks(*db).history({.dead_letters_only = true})) listed.push_back(h.id);
  CHECK(listed == std::vector<std::int64_t>{104, 101});  // newest first
}

// The worker protocol (docs/workers.md, sql/functions/072_worker_protocol.sql) as the database holds it, for
// every language: the runner leaves worker classes alone; a take is never early, skips paused classes and
// live leases, takes a group's first check only; a lost lease refuses the late settlement and writes
// nothing; prescient_worker may do exactly this; an enqueue wakes LISTENers; a hostile or buggy worker's
// call is refused whole (the protocol is a trust boundary). Time is pinned (p_now), which this test database
// allows (prescient.settings.workers_may_pin_clock). The
// clients' own tests and the conformance suite (jobs/workers) drive the same functions from Python, Go,
// Java and Node.
#include <libpq-fe.h>

#include <catch2/catch.hpp>
#include <soci/soci.h>

#include <algorithm>
#include <chrono>
#include <thread>

#include "builtin_jobs.hpp"
#include "explained_session.hpp"
#include "login_role.hpp"
#include "prescient/client.hpp"
#include "prescient/errors.hpp"
#include "prescient/job_classes.hpp"
#include "prescient/slot_runner.hpp"
#include "prescient/time_text.hpp"
#include "test_database.hpp"

using namespace prescient;
using namespace std::chrono_literals;
using prescient::testing::as_user;
using prescient::testing::connect_to;
using prescient::testing::count_of;
using prescient::testing::create_migrated_database;
using prescient::testing::ExplainedSession;
using prescient::testing::Login;
using prescient::testing::sql_refusal;

namespace {

// A 1-minute grid; the checks are asked for at 10:00, so their slot is 10:00.
struct WorkerProtocolFixture {
  std::string url = create_migrated_database(60);
  std::unique_ptr<soci::session> db = connect_to(url);
  ManualClock clock{parse_time("2026-11-21T09:30:00Z")};
  Client client{*db, {.clock = &clock, .enqueued_by = "test"}};

  WorkerProtocolFixture() {
    *db << "SELECT prescient.job_class_add('order_unshipped', true)";
    *db << "UPDATE prescient.settings SET workers_may_pin_clock = true";
  }

  std::int64_t add(const char* job, std::optional<std::string> group = std::nullopt) {
    return client
        .schedule({.job = job, .entity_name = "orders", .entity_key = "1", .group_key = std::move(group),
                   .at = parse_time("2026-11-21T10:00:00Z")})
        .id;
  }
  // The ids a worker takes at `now` (ISO-8601), leased for 30 s.
  std::vector<std::int64_t> take(const std::string& now, const std::string& worker = "w1", int limit = 10) {
    std::vector<std::int64_t> ids;
    soci::rowset<soci::row> rows = (db->prepare << "SELECT id FROM prescient.worker_take(:w, '{order_unshipped}', :n,"
                                                   " 30, CAST(:now AS timestamptz)) ORDER BY id",
                                    soci::use(worker), soci::use(limit), soci::use(now));
    for (const soci::row& r : rows) ids.push_back(r.get<long long>(0));
    return ids;
  }
  // The ids a worker takes on the server's clock.
  std::vector<std::int64_t> take_now(const std::string& worker = "w1") {
    std::vector<std::int64_t> ids;
    soci::rowset<soci::row> rows = (db->prepare << "SELECT id FROM prescient.worker_take(:w, '{order_unshipped}', 10,"
                                                   " 30) ORDER BY id",
                                    soci::use(worker));
    for (const soci::row& r : rows) ids.push_back(r.get<long long>(0));
    return ids;
  }
  long long token_of(std::int64_t id) {
    long long token = 0;
    *db << "SELECT claim_token FROM prescient.future_job WHERE id = :id", soci::use(id), soci::into(token);
    return token;
  }
  // What `worker`'s completion with `next` (NULL: done) answered: outcome and last_error.
  std::pair<std::string, std::string> complete(std::int64_t id, long long token, const std::string& now,
                                               const std::string& next = "", const std::string& worker = "") {
    std::string outcome, error;
    soci::indicator error_set = soci::i_null;
    const std::string next_value = next.empty() ? "NULL" : "'" + next + "'";
    const std::string holder = worker.empty() ? holder_of(id) : worker;
    *db << "SELECT outcome, last_error FROM prescient.worker_complete(:w, ARRAY[:id]::bigint[], ARRAY[:t]::bigint[],"
           " ARRAY[" + next_value + "]::timestamptz[], NULL, CAST(:now AS timestamptz))",
        soci::use(holder), soci::use(id), soci::use(token), soci::use(now), soci::into(outcome),
        soci::into(error, error_set);
    return {outcome, error_set == soci::i_ok ? error : ""};
  }
  // Who holds check `id`'s lease (the taker's name a settlement gives), or "w1" when nobody does.
  std::string holder_of(std::int64_t id) {
    std::string worker;
    soci::indicator set = soci::i_null;
    *db << "SELECT claimed_by FROM prescient.future_job WHERE id = :id", soci::use(id), soci::into(worker, set);
    return set == soci::i_ok ? worker : "w1";
  }
};

}  // namespace

TEST_CASE_METHOD(WorkerProtocolFixture, "workers: the runner leaves a worker class alone; a worker takes it at its slot, never before") {
  const std::int64_t mine = add("order_unshipped");
  add("noop");
  clock.set(parse_time("2026-11-21T10:00:00Z"));
  Registry registry;
  jobs::register_builtin_jobs(registry);
  SlotRunner runner({.database_url = url, .runner_id = "r1"}, registry, clock);
  const SlotReport report = runner.run_slot(parse_time("2026-11-21T10:00:00Z"));
  CHECK(report.claimed == 1);  // the noop; the worker class's check waits for a worker
  CHECK(count_of(*db, "SELECT count(*) FROM prescient.future_job WHERE job = 'order_unshipped'") == 1);
  // A sweep of the overdue slots does not fire its slot again and again either.
  clock.set(parse_time("2026-11-21T10:05:00Z"));
  CHECK(runner.sweep(parse_time("2026-11-21T10:05:00Z"), SweepMode::run).claimed == 0);

  std::string next_due;
  *db << "SELECT prescient.iso(prescient.worker_next_due('{order_unshipped}', '2026-11-21T09:59:00Z'))",
      soci::into(next_due);
  CHECK(next_due == "2026-11-21T10:00:00Z");
  CHECK(take("2026-11-21T09:59:59.999999Z").empty());
  CHECK(take("2026-11-21T10:00:00Z") == std::vector<std::int64_t>{mine});
  // Under a live lease nobody else takes it; next due is the lease's end.
  CHECK(take("2026-11-21T10:00:10Z", "w2").empty());
  *db << "SELECT prescient.iso(prescient.worker_next_due('{order_unshipped}', '2026-11-21T10:00:10Z'))",
      soci::into(next_due);
  CHECK(next_due == "2026-11-21T10:00:30Z");
}

TEST_CASE_METHOD(WorkerProtocolFixture, "workers: an expired lease is taken again; the late settlement is refused and writes nothing") {
  const std::int64_t id = add("order_unshipped");
  REQUIRE(take("2026-11-21T10:00:00Z", "dies") == std::vector<std::int64_t>{id});
  const long long first = token_of(id);
  // Its lease (30 s) expires; another worker takes it, under another token.
  REQUIRE(take("2026-11-21T10:00:31Z", "w2") == std::vector<std::int64_t>{id});
  const long long second = token_of(id);
  CHECK(second != first);
  const auto [outcome, why] = complete(id, first, "2026-11-21T10:00:32Z", "", "dies");
  CHECK(outcome == "lease_lost");
  CHECK_THAT(why, Catch::Contains("held under another lease (by w2"));
  CHECK(count_of(*db, "SELECT count(*) FROM prescient.job_history") == 0);
  // The live one settles: it asks again in an hour, rescheduled, with a row in the timeline naming it.
  CHECK(complete(id, second, "2026-11-21T10:00:33Z", "2026-11-21T11:00:00Z").first == "rescheduled");
  CHECK(count_of(*db, "SELECT count(*) FROM prescient.check_run WHERE runner = 'w2' AND result = 'rescheduled'") == 1);
  // An extend on the lost lease says why; an unknown id is named.
  std::string refusal;
  *db << "SELECT refusal FROM prescient.worker_extend('w2', ARRAY[:id]::bigint[], ARRAY[:t]::bigint[], 30,"
         " '2026-11-21T10:00:34Z')", soci::use(id), soci::use(second), soci::into(refusal);
  CHECK_THAT(refusal, Catch::Contains("is not leased under token"));
  CHECK_THAT(complete(424242, 1, "2026-11-21T10:00:35Z").second, Catch::Contains("check 424242 is not pending"));
}

TEST_CASE_METHOD(WorkerProtocolFixture, "workers: a settlement the database refuses for one check fails that check alone") {
  // Another tool's rule on the history refuses one check's row (its payload says so).
  *db << "CREATE SCHEMA app";
  *db << "CREATE FUNCTION app.no_poison() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN"
         " IF NEW.payload ? 'poison' THEN RAISE EXCEPTION 'poisoned' USING ERRCODE = '23514'; END IF;"
         " RETURN NEW; END $$";
  *db << "CREATE TRIGGER no_poison BEFORE INSERT ON prescient.job_history FOR EACH ROW EXECUTE FUNCTION app.no_poison()";
  std::vector<std::int64_t> ids;
  for (int i = 0; i < 9; ++i) {
    ids.push_back(client
                      .schedule({.job = "order_unshipped", .entity_name = "orders", .entity_key = std::to_string(i),
                                 .at = parse_time("2026-11-21T10:00:00Z"),
                                 .payload = i == 5 ? nlohmann::json{{"poison", true}} : nlohmann::json::object()})
                      .id);
  }
  REQUIRE(take("2026-11-21T10:00:00Z").size() == 9);
  std::string id_list, token_list;
  for (const std::int64_t id : ids) {
    id_list += (id_list.empty() ? "" : ",") + std::to_string(id);
    token_list += (token_list.empty() ? "" : ",") + std::to_string(token_of(id));
  }
  // All done at once: eight finish, the culprit is a failed attempt naming the refusal, in the order given.
  soci::rowset<soci::row> rows = (db->prepare << "SELECT id, outcome, coalesce(last_error, '') FROM"
                                  " prescient.worker_complete('w1', '{" + id_list + "}', '{" + token_list + "}',"
                                  " array_fill(NULL::timestamptz, ARRAY[9]), NULL, '2026-11-21T10:00:05Z')");
  std::vector<std::int64_t> answered;
  for (const soci::row& r : rows) {
    const auto id = static_cast<std::int64_t>(r.get<long long>(0));
    answered.push_back(id);
    if (id == ids[5]) {
      CHECK(r.get<std::string>(1) == "retried");
      CHECK_THAT(r.get<std::string>(2), Catch::Contains("the database refused its settlement: poisoned (SQLSTATE 23514)"));
    } else {
      CHECK(r.get<std::string>(1) == "done");
    }
  }
  CHECK(answered == ids);
  CHECK(count_of(*db, "SELECT count(*) FROM prescient.job_history WHERE outcome = 'done'") == 8);
  CHECK(count_of(*db, "SELECT attempts FROM prescient.future_job WHERE id = " + std::to_string(ids[5])) == 1);

  // Refused in any form (its failed attempt too): answered `refused`, left as it was, nothing written.
  *db << "ALTER TABLE prescient.future_job ADD CONSTRAINT never_retried CHECK (attempts < 2)";
  REQUIRE(take("2026-11-21T10:05:00Z") == std::vector<std::int64_t>{ids[5]});
  const long long token = token_of(ids[5]);
  const auto [outcome, why] = complete(ids[5], token, "2026-11-21T10:05:01Z");
  CHECK(outcome == "refused");
  CHECK_THAT(why, Catch::Contains("the database refuses any settlement of it") && Catch::Contains("never_retried"));
  CHECK(count_of(*db, "SELECT attempts FROM prescient.future_job WHERE id = " + std::to_string(ids[5])) == 1);
  CHECK(token_of(ids[5]) == token);
}

TEST_CASE_METHOD(WorkerProtocolFixture, "workers: a paused class gives nothing; a group gives its first check, one at a time") {
  const std::int64_t first = add("order_unshipped", "order-7");
  const std::int64_t second = add("order_unshipped", "order-7");
  *db << "SELECT prescient.pause_job('order_unshipped', 'test', '2026-11-21T09:00:00Z')";
  CHECK(take("2026-11-21T10:00:00Z").empty());
  *db << "SELECT prescient.resume_job('order_unshipped')";
  CHECK(take("2026-11-21T10:00:00Z") == std::vector<std::int64_t>{first});
  CHECK(take("2026-11-21T10:00:01Z", "w2").empty());  // the group's first is leased: its second waits
  std::string next_due;  // and a worker sleeps until the lease ends, instead of spinning on the second
  *db << "SELECT prescient.iso(prescient.worker_next_due('{order_unshipped}', '2026-11-21T10:00:01Z'))",
      soci::into(next_due);
  CHECK(next_due == "2026-11-21T10:00:30Z");
  CHECK(complete(first, token_of(first), "2026-11-21T10:00:02Z").first == "done");
  CHECK(take("2026-11-21T10:00:03Z", "w2") == std::vector<std::int64_t>{second});
}

TEST_CASE_METHOD(WorkerProtocolFixture, "workers: bad input is refused whole, or stored as the runner stores it") {
  const std::int64_t id = add("order_unshipped");
  REQUIRE(take("2026-11-21T10:00:00Z").size() == 1);
  const long long token = token_of(id);
  // A result over 64 KiB: refused (PR400), nothing written, still leased.
  const std::string big(1 << 20, 'x');
  try {
    *db << "SELECT count(*) FROM prescient.worker_complete('w1', ARRAY[:id]::bigint[], ARRAY[:t]::bigint[],"
           " ARRAY[NULL]::timestamptz[], ARRAY[jsonb_build_object('x', CAST(:big AS text))],"
           " '2026-11-21T10:00:01Z')", soci::use(id), soci::use(token), soci::use(big);
    FAIL("a 1 MiB result was accepted");
  } catch (const soci::soci_error& e) {
    CHECK_THAT(e.what(), Catch::Contains("bytes of JSON (at most 65536)"));
  }
  CHECK(count_of(*db, "SELECT count(*) FROM prescient.future_job WHERE claim_token IS NOT NULL") == 1);
  // Arrays that do not match: refused, naming both lengths.
  CHECK_THROWS_WITH((*db << "SELECT count(*) FROM prescient.worker_fail('w1', ARRAY[1, 2]::bigint[], ARRAY[3]::bigint[],"
                            " ARRAY['x', 'y'])"),
                    Catch::Contains("2 ids but 1 tokens"));
  // An error of 1 MiB: stored cut to 4096 bytes, as the runner's.
  std::string outcome;
  *db << "SELECT outcome FROM prescient.worker_fail('w1', ARRAY[:id]::bigint[], ARRAY[:t]::bigint[], ARRAY[CAST(:e AS text)],"
         " '2026-11-21T10:00:02Z')", soci::use(id), soci::use(token), soci::use(big), soci::into(outcome);
  CHECK(outcome == "retried");
  CHECK(count_of(*db, "SELECT octet_length(last_error) FROM prescient.future_job") <= 4096);
  CHECK(count_of(*db, "SELECT count(*) FROM prescient.future_job WHERE last_error LIKE '%[cut: 1048576 bytes in all]'") == 1);
}

TEST_CASE_METHOD(WorkerProtocolFixture, "prescient_worker takes and settles through the protocol; it cannot write future_job") {
  std::string suffix;
  *db << "SELECT current_database()", soci::into(suffix);
  Login login(*db, "worker_" + suffix, "prescient_worker");
  auto worker = connect_to(as_user(url, login.name));
  // It enqueues as a client does.
  *worker << "SELECT count(*) FROM prescient.schedule('order_unshipped', 'orders', '9', '2026-11-21T10:00:00Z',"
             " p_now => '2026-11-21T09:30:00Z')";
  long long id = 0, token = 0;
  *worker << "SELECT id, lease_token FROM prescient.worker_take('w', '{order_unshipped}', 1, 30, '2026-11-21T10:00:00Z')",
      soci::into(id), soci::into(token);
  CHECK(id > 0);
  std::string outcome;
  *worker << "SELECT outcome FROM prescient.worker_complete('w', ARRAY[:id]::bigint[], ARRAY[:t]::bigint[],"
             " ARRAY[NULL]::timestamptz[], ARRAY['{\"sent\": true}'::jsonb], '2026-11-21T10:00:01Z')",
      soci::use(id), soci::use(token), soci::into(outcome);
  CHECK(outcome == "done");
  CHECK(count_of(*db, "SELECT count(*) FROM prescient.job_history WHERE result = '{\"sent\": true}'") == 1);
  CHECK_THROWS_WITH((*worker << "UPDATE prescient.future_job SET claim_token = 1"), Catch::Contains("permission denied"));
  // A lease token is its holder's secret: every other column of a check is readable, the token is not, and
  // the clock's setting is the schema owner's.
  CHECK(count_of(*worker, "SELECT count(*) FROM prescient.future_job WHERE claimed_by IS NULL") >= 0);
  CHECK(sql_refusal(*worker, "SELECT claim_token FROM prescient.future_job").first == "42501");
  CHECK(sql_refusal(*worker, "SELECT f FROM prescient.future_job f").first == "42501");
  CHECK(sql_refusal(*worker, "UPDATE prescient.settings SET workers_may_pin_clock = false").first == "42501");
  CHECK_THROWS_WITH((*worker << "DELETE FROM prescient.job_history"), Catch::Contains("permission denied"));
  // And it takes no runner's class.
  CHECK_THROWS_WITH((*worker << "SELECT count(*) FROM prescient.worker_take('w', '{noop}', 1, 30)"),
                    Catch::Contains("job class 'noop' is run by the runner, not by workers"));
}

// The protocol as a trust boundary (docs/workers.md, "What a worker may do"): whatever a worker's call holds,
// each check is settled at most once, by the worker that holds its lease, on the server's clock. Each
// refusal is PR400 naming the value, with nothing written; a lost lease is `lease_lost` naming why.
namespace {
std::string one_check_arrays(std::int64_t id, long long token) {
  return "ARRAY[" + std::to_string(id) + "]::bigint[], ARRAY[" + std::to_string(token) + "]::bigint[]";
}
}  // namespace

TEST_CASE_METHOD(WorkerProtocolFixture, "workers: the same check twice in one call is refused whole, nothing written") {
  const std::int64_t id = add("order_unshipped");
  const std::int64_t other = add("order_unshipped");
  REQUIRE(take("2026-11-21T10:00:00Z").size() == 2);
  const std::string ids = "ARRAY[" + std::to_string(other) + ", " + std::to_string(id) + ", " + std::to_string(id) + "]";
  const std::string tokens = "ARRAY[" + std::to_string(token_of(other)) + ", " + std::to_string(token_of(id)) + ", " +
                             std::to_string(token_of(id)) + "]";
  const std::string named_twice = "check " + std::to_string(id) + " is named 2 times: one answer per check in a call";
  // Done and next at once: it would be both finished and pending again.
  auto [state, message] = sql_refusal(*db, "SELECT * FROM prescient.worker_complete('w1', " + ids + ", " + tokens +
                                               ", ARRAY[NULL, NULL, '2026-11-21T11:00:00Z']::timestamptz[], NULL,"
                                               " '2026-11-21T10:00:01Z')");
  CHECK(state == "PR400");
  CHECK(message == named_twice);
  std::tie(state, message) = sql_refusal(*db, "SELECT * FROM prescient.worker_fail('w1', " + ids + ", " + tokens +
                                                  ", ARRAY['a', 'b', 'c'], '2026-11-21T10:00:01Z')");
  CHECK(state == "PR400");
  CHECK(message == named_twice);
  std::tie(state, message) = sql_refusal(*db, "SELECT * FROM prescient.worker_extend('w1', " + ids + ", " + tokens +
                                                  ", 30, '2026-11-21T10:00:01Z')");
  CHECK(message == named_twice);
  std::tie(state, message) = sql_refusal(*db, "SELECT prescient.worker_release('w1', " + ids + ", " + tokens + ")");
  CHECK(message == named_twice);
  CHECK(count_of(*db, "SELECT count(*) FROM prescient.job_history") == 0);
  CHECK(count_of(*db, "SELECT count(*) FROM prescient.check_run") == 0);
  CHECK(count_of(*db, "SELECT count(*) FROM prescient.future_job WHERE claimed_by = 'w1' AND attempts = 0") == 2);
}

TEST_CASE_METHOD(WorkerProtocolFixture, "workers: a NULL array of answers is refused, not read as 'all done'") {
  const std::int64_t id = add("order_unshipped");
  REQUIRE(take("2026-11-21T10:00:00Z").size() == 1);
  const auto [state, message] = sql_refusal(*db, "SELECT * FROM prescient.worker_complete('w1', " +
                                                     one_check_arrays(id, token_of(id)) +
                                                     ", NULL, NULL, '2026-11-21T10:00:01Z')");
  CHECK(state == "PR400");
  CHECK(message == "no next times given: one per check (a NULL element: done)");
  CHECK(count_of(*db, "SELECT count(*) FROM prescient.job_history") == 0);
}

TEST_CASE_METHOD(WorkerProtocolFixture, "workers: a lease is settled only by its holder, only for a worker class") {
  const std::int64_t id = add("order_unshipped");
  REQUIRE(take("2026-11-21T10:00:00Z", "w1").size() == 1);
  const long long token = token_of(id);
  // Another worker that learnt the token (a log line, say) is not its holder: refused, nothing written.
  const auto [outcome, why] = complete(id, token, "2026-11-21T10:00:01Z", "", "w2");
  CHECK(outcome == "lease_lost");
  CHECK(why == "check " + std::to_string(id) + " is leased to worker 'w1', not to 'w2': only the lease's holder may "
                                               "answer for it");
  std::string refusal;
  *db << "SELECT refusal FROM prescient.worker_extend('w2', " + one_check_arrays(id, token) +
             ", 30, '2026-11-21T10:00:02Z')",
      soci::into(refusal);
  CHECK_THAT(refusal, Catch::Contains("is leased to worker 'w1', not to 'w2'"));
  int released = -1;
  *db << "SELECT prescient.worker_release('w2', " + one_check_arrays(id, token) + ")", soci::into(released);
  CHECK(released == 0);
  CHECK(count_of(*db, "SELECT count(*) FROM prescient.job_history") == 0);
  CHECK(holder_of(id) == "w1");

  // A check the C++ runner holds under its lease (its class is the runner's): no worker settles it, even
  // under the runner's own name and token; nor extends or gives it back.
  const std::int64_t runners = add("noop");
  *db << "UPDATE prescient.future_job SET claimed_by = 'r1', claim_token = 77,"
         " claimed_until = '2026-11-21T10:05:00Z' WHERE id = " + std::to_string(runners);
  const auto [runner_outcome, runner_why] = complete(runners, 77, "2026-11-21T10:00:03Z", "", "r1");
  CHECK(runner_outcome == "lease_lost");
  CHECK(runner_why == "check " + std::to_string(runners) + " is of class 'noop', which the runner runs: a worker "
                                                           "settles only the checks of worker classes");
  *db << "SELECT refusal FROM prescient.worker_extend('r1', " + one_check_arrays(runners, 77) +
             ", 30, '2026-11-21T10:00:04Z')",
      soci::into(refusal);
  CHECK_THAT(refusal, Catch::Contains("which the runner runs"));
  *db << "SELECT prescient.worker_release('r1', " + one_check_arrays(runners, 77) + ")", soci::into(released);
  CHECK(released == 0);
  CHECK(count_of(*db, "SELECT count(*) FROM prescient.job_history") == 0);
  CHECK(count_of(*db, "SELECT count(*) FROM prescient.future_job WHERE claim_token = 77 AND claimed_by = 'r1'") == 1);

  // The holder settles it from another session (a reconnect, a pooler): the lease is the worker's, not the
  // connection's.
  auto reconnected = connect_to(url);
  std::string done;
  *reconnected << "SELECT outcome FROM prescient.worker_complete('w1', " + one_check_arrays(id, token) +
                      ", ARRAY[NULL]::timestamptz[], NULL, '2026-11-21T10:00:05Z')",
      soci::into(done);
  CHECK(done == "done");
  CHECK(count_of(*db, "SELECT count(*) FROM prescient.job_history WHERE finished_by = 'w1'") == 1);
}

TEST_CASE_METHOD(WorkerProtocolFixture, "workers: the clock is the server's unless the schema owner lets tests pin it") {
  const std::int64_t id = add("order_unshipped");  // due at 10:00, an hour in the real clock's past
  *db << "UPDATE prescient.settings SET workers_may_pin_clock = false";
  // Pinned before its slot, to take it early: refused, naming the time, nothing leased.
  const std::string pinned_refusal = "p_now 2026-11-21T09:00:00Z: a worker runs on the database server's clock "
                                     "here; a test database may let workers pin it (UPDATE prescient.settings SET "
                                     "workers_may_pin_clock = true, as the schema owner)";
  for (const std::string& call :
       {std::string("SELECT count(*) FROM prescient.worker_take('w1', '{order_unshipped}', 1, 30, '2026-11-21T09:00:00Z')"),
        std::string("SELECT prescient.worker_next_due('{order_unshipped}', '2026-11-21T09:00:00Z')"),
        "SELECT count(*) FROM prescient.worker_complete('w1', " + one_check_arrays(id, 1) +
            ", ARRAY[NULL]::timestamptz[], NULL, '2026-11-21T09:00:00Z')",
        "SELECT count(*) FROM prescient.worker_fail('w1', " + one_check_arrays(id, 1) +
            ", ARRAY['x'], '2026-11-21T09:00:00Z')",
        "SELECT count(*) FROM prescient.worker_extend('w1', " + one_check_arrays(id, 1) +
            ", 30, '2026-11-21T09:00:00Z')"}) {
    INFO(call);
    const auto [state, message] = sql_refusal(*db, call);
    CHECK(state == "PR400");
    CHECK(message == pinned_refusal);
  }
  CHECK(count_of(*db, "SELECT count(*) FROM prescient.future_job WHERE claimed_by IS NOT NULL") == 0);
  // On the server's clock it is due: taken, leased from now for at most the lease asked, never 'infinity'.
  REQUIRE(take_now() == std::vector<std::int64_t>{id});
  CHECK(count_of(*db, "SELECT count(*) FROM prescient.future_job WHERE claimed_until <= clock_timestamp() + "
                      "interval '31 seconds' AND claimed_until > clock_timestamp()") == 1);
  // Even where pinning is allowed, a lease cannot be pinned past every bound.
  *db << "UPDATE prescient.settings SET workers_may_pin_clock = true";
  const auto [state, message] = sql_refusal(
      *db, "SELECT count(*) FROM prescient.worker_extend('w1', " + one_check_arrays(id, token_of(id)) + ", 30, 'infinity')");
  CHECK(state == "PR400");
  CHECK(message == "p_now infinity is not a finite time");
  CHECK(sql_refusal(*db, "SELECT count(*) FROM prescient.worker_take('w1', '{order_unshipped}', 1, 86401)").second ==
        "a lease of 86401 seconds: from 0.1 to 86400");
}

TEST_CASE_METHOD(WorkerProtocolFixture, "a worker declares its own class and policy; never a runner's") {
  std::string suffix;
  *db << "SELECT current_database()", soci::into(suffix);
  Login login(*db, "declarer_" + suffix, "prescient_worker");
  auto worker = connect_to(as_user(url, login.name));
  std::string status;
  *worker << "SELECT prescient.declare_worker_class('ship_py', p_max_checks => 60, p_backoff => '30 seconds')",
      soci::into(status);
  CHECK(status == "added");
  CHECK(count_of(*db, "SELECT count(*) FROM prescient.job_class WHERE job = 'ship_py' AND runs_in = 'worker'"
                      " AND max_checks = 60 AND backoff_seconds = 30 AND policy_updated_by = '" + login.name + "'") == 1);
  *worker << "SELECT prescient.declare_worker_class('ship_py', p_timeout => '2 minutes')", soci::into(status);
  CHECK(status == "known");
  CHECK(count_of(*db, "SELECT count(*) FROM prescient.job_class WHERE job = 'ship_py' AND max_checks = 60"
                      " AND timeout_seconds = 120") == 1);
  // A runner's class, a bad policy, a bad name: refused, nothing written.
  auto [state, message] = sql_refusal(*worker, "SELECT prescient.declare_worker_class('noop', p_max_checks => 1)");
  CHECK(state == "PR400");
  CHECK(message == "job class 'noop' is run by the runner, not by workers: a worker cannot declare it or set its policy");
  std::tie(state, message) = sql_refusal(*worker, "SELECT prescient.declare_worker_class('ship_go', p_max_attempts => 0)");
  CHECK(message == "max_attempts 0 is under 1");
  std::tie(state, message) = sql_refusal(*worker, "SELECT prescient.declare_worker_class('ship<go>')");
  CHECK(state == "PR400");
  CHECK(count_of(*db, "SELECT count(*) FROM prescient.job_class WHERE job LIKE 'ship_go%' OR job LIKE 'ship<%'") == 0);
  CHECK(count_of(*db, "SELECT count(*) FROM prescient.job_class WHERE job = 'noop' AND max_checks IS NULL") == 1);
}

TEST_CASE_METHOD(WorkerProtocolFixture, "a worker retries a worker class's dead letter, never a runner's check") {
  std::string suffix;
  *db << "SELECT current_database()", soci::into(suffix);
  Login login(*db, "retrier_" + suffix, "prescient_worker");
  auto worker = connect_to(as_user(url, login.name));
  for (const auto& [id, job] : {std::pair{901, "order_unshipped"}, std::pair{902, "noop"}}) {
    *db << "INSERT INTO prescient.job_history (id, job, entity_name, entity_key, payload, first_check_at, last_check_at,"
           "    check_count, attempts, last_error, enqueued_on, enqueued_by, finished_at, finished_by, outcome, max_checks)"
           " VALUES (:id, :job, 'orders', :id, '{\"n\": 1}', now(), now(), 2, 3, 'boom', now(), 'app', now(), 'w1',"
           "         'failed', 7)",
        soci::use(id), soci::use(std::string(job)), soci::use(std::to_string(id));
  }
  int due_now = 0;
  *worker << "SELECT (prescient.worker_retry(901) = now())::int", soci::into(due_now);
  CHECK(due_now == 1);
  CHECK(count_of(*db, "SELECT count(*) FROM prescient.future_job WHERE id = 901 AND attempts = 0 AND check_count = 2"
                      " AND max_checks = 7 AND payload = '{\"n\": 1}'") == 1);
  CHECK(count_of(*db, "SELECT count(*) FROM prescient.job_history WHERE id = 901 AND retried") == 1);
  // Pending already, a runner's check, a check the history has no failure of: refused, nothing written.
  auto [state, message] = sql_refusal(*worker, "SELECT prescient.worker_retry(901)");
  CHECK(state == "PR409");
  CHECK(message == "check 901 is pending already");
  std::tie(state, message) = sql_refusal(*worker, "SELECT prescient.worker_retry(902)");
  CHECK(state == "PR400");
  CHECK(message == "check 902 is of job class 'noop', which the runner runs: a worker may retry only a worker class's checks");
  std::tie(state, message) = sql_refusal(*worker, "SELECT prescient.worker_retry(903)");
  CHECK(state == "PR404");
  CHECK(count_of(*db, "SELECT count(*) FROM prescient.future_job WHERE id IN (902, 903)") == 0);
  CHECK(count_of(*db, "SELECT count(*) FROM prescient.job_history WHERE id = 902 AND NOT retried") == 1);
  // The internal functions are not the worker's.
  CHECK(sql_refusal(*worker, "SELECT prescient.retry_failed_check(902, now())").first == "42501");
}

TEST_CASE_METHOD(WorkerProtocolFixture, "LISTEN prescient_worker: an enqueue, a resume or a release wakes a worker, naming the class") {
  PGconn* listener = PQconnectdb(url.c_str());
  REQUIRE(PQstatus(listener) == CONNECTION_OK);
  PQclear(PQexec(listener, "LISTEN prescient_worker"));
  // The notifications that arrive within a second, in order.
  const auto woken = [&] {
    std::vector<std::string> names;
    for (int i = 0; i < 50 && names.empty(); ++i) {
      PQconsumeInput(listener);
      while (PGnotify* n = PQnotifies(listener)) {
        names.emplace_back(n->extra);
        PQfreemem(n);
      }
      if (names.empty()) std::this_thread::sleep_for(20ms);
    }
    return names;
  };
  add("noop");  // a runner's class: no notification
  const std::int64_t id = add("order_unshipped");
  CHECK(woken() == std::vector<std::string>{"order_unshipped"});
  // Nothing waits a slot for nothing (docs/workers.md): a class resumed mid-slot, or a check given back,
  // is due again at once, and the workers asleep until their next due time are told.
  *db << "SELECT prescient.pause_job('order_unshipped', 'test', '2026-11-21T09:00:00Z')";
  *db << "SELECT prescient.resume_job('order_unshipped')";
  CHECK(woken() == std::vector<std::string>{"order_unshipped"});
  REQUIRE(take("2026-11-21T10:00:00Z") == std::vector<std::int64_t>{id});
  int released = 0;
  const long long token = token_of(id);
  *db << "SELECT prescient.worker_release('w1', ARRAY[:id]::bigint[], ARRAY[:t]::bigint[])", soci::use(id),
      soci::use(token), soci::into(released);
  CHECK(released == 1);
  CHECK(woken() == std::vector<std::string>{"order_unshipped"});
  PQfinish(listener);
}

TEST_CASE_METHOD(WorkerProtocolFixture, "workers: a heartbeat of many checks answers each and looks each one up once") {
  // A heartbeat's answers were the given checks joined to the UPDATE's rows, which the planner expected to
  // be one: a nested loop compared every pair, 4 million for 2 000 checks (a quarter of a second; the Go
  // worker's heartbeats of its whole backlog held their row locks that long). Read from the plan auto_explain
  // reports for the nested statements: no join may throw away more rows than there are checks.
  constexpr int checks = 400;
  *db << "SELECT count(*) FROM (SELECT CAST(:n AS integer) AS n) c, prescient.schedule_arrays("
         " p_job => array_fill('order_unshipped'::text, ARRAY[c.n]), p_entity_name => array_fill('orders'::text, ARRAY[c.n]),"
         " p_entity_key => array_fill('1'::text, ARRAY[c.n]),"
         " p_at => array_fill('2026-11-21T10:00:00Z'::timestamptz, ARRAY[c.n]), p_now => '2026-11-21T09:30:00Z')",
      soci::use(checks, "n");
  const std::vector<std::int64_t> ids = take("2026-11-21T10:00:00Z", "w1", checks);
  REQUIRE(ids.size() == static_cast<std::size_t>(checks));
  // The last one's lease is another worker's now: its answer is a refusal, the others' a new end.
  *db << "UPDATE prescient.future_job SET claimed_by = 'w2' WHERE id = :id", soci::use(ids.back());

  ExplainedSession session(url, true);
  const std::string answers = session.run(
      "SELECT count(*) FILTER (WHERE lease_until = '2026-11-21T10:00:30Z' AND refusal IS NULL) || ' '"
      " || count(*) FILTER (WHERE lease_until IS NULL AND refusal LIKE '%leased to worker ''w2''%')"
      " FROM prescient.worker_extend('w1', (SELECT array_agg(id ORDER BY id) FROM prescient.future_job),"
      " (SELECT array_agg(claim_token ORDER BY id) FROM prescient.future_job), 30, '2026-11-21T10:00:00Z')");
  CHECK(answers == std::to_string(checks - 1) + " 1");
  const std::string& notices = session.plans();
  REQUIRE(notices.find("Query Text: ") != std::string::npos);  // the nested statements' plans were reported
  long long most_removed = 0;
  const std::string removed = "Rows Removed by Join Filter: ";
  for (auto at = notices.find(removed); at != std::string::npos; at = notices.find(removed, at + 1)) {
    most_removed = std::max(most_removed, std::stoll(notices.substr(at + removed.size())));
  }
  INFO(notices);
  CHECK(most_removed < checks);
}

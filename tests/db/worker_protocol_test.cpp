// The worker protocol (docs/workers.md, sql/functions/072_worker_protocol.sql) as the database holds it, for
// every language: the runner leaves worker classes alone; a take is never early, skips paused classes and
// live leases, takes a group's first check only; a lost lease refuses the late settlement and writes
// nothing; prescient_worker may do exactly this; an enqueue wakes LISTENers. Time is pinned (p_now). The
// clients' own tests and the conformance suite (jobs/workers) drive the same functions from Python, Go,
// Java and Node.
#include <libpq-fe.h>

#include <catch2/catch.hpp>
#include <soci/soci.h>

#include <chrono>
#include <thread>

#include "builtin_jobs.hpp"
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
using prescient::testing::Login;

namespace {

// A 1-minute grid; the checks are asked for at 10:00, so their slot is 10:00.
struct WorkerProtocolFixture {
  std::string url = create_migrated_database(60);
  std::unique_ptr<soci::session> db = connect_to(url);
  ManualClock clock{parse_time("2026-11-21T09:30:00Z")};
  Client client{*db, {.clock = &clock, .enqueued_by = "test"}};

  WorkerProtocolFixture() { *db << "SELECT prescient.job_class_add('order_unshipped', true)"; }

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
  long long token_of(std::int64_t id) {
    long long token = 0;
    *db << "SELECT claim_token FROM prescient.future_job WHERE id = :id", soci::use(id), soci::into(token);
    return token;
  }
  // What a completion with `next` (NULL: done) answered: outcome and last_error.
  std::pair<std::string, std::string> complete(std::int64_t id, long long token, const std::string& now,
                                               const std::string& next = "") {
    std::string outcome, error;
    soci::indicator error_set = soci::i_null;
    const std::string next_value = next.empty() ? "NULL" : "'" + next + "'";
    *db << "SELECT outcome, last_error FROM prescient.worker_complete(ARRAY[:id]::bigint[], ARRAY[:t]::bigint[],"
           " ARRAY[" + next_value + "]::timestamptz[], NULL, CAST(:now AS timestamptz))",
        soci::use(id), soci::use(token), soci::use(now), soci::into(outcome), soci::into(error, error_set);
    return {outcome, error_set == soci::i_ok ? error : ""};
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
  const auto [outcome, why] = complete(id, first, "2026-11-21T10:00:32Z");
  CHECK(outcome == "lease_lost");
  CHECK_THAT(why, Catch::Contains("held under another lease (by w2"));
  CHECK(count_of(*db, "SELECT count(*) FROM prescient.job_history") == 0);
  // The live one settles: it asks again in an hour, rescheduled, with a row in the timeline naming it.
  CHECK(complete(id, second, "2026-11-21T10:00:33Z", "2026-11-21T11:00:00Z").first == "rescheduled");
  CHECK(count_of(*db, "SELECT count(*) FROM prescient.check_run WHERE runner = 'w2' AND result = 'rescheduled'") == 1);
  // An extend on the lost lease says why; an unknown id is named.
  std::string refusal;
  *db << "SELECT refusal FROM prescient.worker_extend(ARRAY[:id]::bigint[], ARRAY[:t]::bigint[], 30,"
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
                                  " prescient.worker_complete('{" + id_list + "}', '{" + token_list + "}',"
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
    *db << "SELECT count(*) FROM prescient.worker_complete(ARRAY[:id]::bigint[], ARRAY[:t]::bigint[],"
           " ARRAY[NULL]::timestamptz[], ARRAY[jsonb_build_object('x', CAST(:big AS text))],"
           " '2026-11-21T10:00:01Z')", soci::use(id), soci::use(token), soci::use(big);
    FAIL("a 1 MiB result was accepted");
  } catch (const soci::soci_error& e) {
    CHECK_THAT(e.what(), Catch::Contains("bytes of JSON (at most 65536)"));
  }
  CHECK(count_of(*db, "SELECT count(*) FROM prescient.future_job WHERE claim_token IS NOT NULL") == 1);
  // Arrays that do not match: refused, naming both lengths.
  CHECK_THROWS_WITH((*db << "SELECT count(*) FROM prescient.worker_fail(ARRAY[1, 2]::bigint[], ARRAY[3]::bigint[],"
                            " ARRAY['x', 'y'])"),
                    Catch::Contains("2 ids but 1 tokens"));
  // An error of 1 MiB: stored cut to 4096 bytes, as the runner's.
  std::string outcome;
  *db << "SELECT outcome FROM prescient.worker_fail(ARRAY[:id]::bigint[], ARRAY[:t]::bigint[], ARRAY[CAST(:e AS text)],"
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
  *worker << "SELECT outcome FROM prescient.worker_complete(ARRAY[:id]::bigint[], ARRAY[:t]::bigint[],"
             " ARRAY[NULL]::timestamptz[], ARRAY['{\"sent\": true}'::jsonb], '2026-11-21T10:00:01Z')",
      soci::use(id), soci::use(token), soci::into(outcome);
  CHECK(outcome == "done");
  CHECK(count_of(*db, "SELECT count(*) FROM prescient.job_history WHERE result = '{\"sent\": true}'") == 1);
  CHECK_THROWS_WITH((*worker << "UPDATE prescient.future_job SET claim_token = 1"), Catch::Contains("permission denied"));
  CHECK_THROWS_WITH((*worker << "DELETE FROM prescient.job_history"), Catch::Contains("permission denied"));
  // And it takes no runner's class.
  CHECK_THROWS_WITH((*worker << "SELECT count(*) FROM prescient.worker_take('w', '{noop}', 1, 30)"),
                    Catch::Contains("job class 'noop' is run by the runner, not by workers"));
}

TEST_CASE_METHOD(WorkerProtocolFixture, "LISTEN prescient_worker: an enqueue of a worker class wakes a worker, naming the class") {
  PGconn* listener = PQconnectdb(url.c_str());
  REQUIRE(PQstatus(listener) == CONNECTION_OK);
  PQclear(PQexec(listener, "LISTEN prescient_worker"));
  add("noop");  // a runner's class: no notification
  add("order_unshipped");
  std::vector<std::string> woken;
  for (int i = 0; i < 50 && woken.empty(); ++i) {
    PQconsumeInput(listener);
    while (PGnotify* n = PQnotifies(listener)) {
      woken.emplace_back(n->extra);
      PQfreemem(n);
    }
    if (woken.empty()) std::this_thread::sleep_for(20ms);
  }
  PQfinish(listener);
  CHECK(woken == std::vector<std::string>{"order_unshipped"});
}

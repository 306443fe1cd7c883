// The unit of failure is the check: whatever one check's job returns or throws, and whatever the database
// refuses about one check, that check fails alone and visibly; its batch, its slot and the other checks go
// on. Database and connection failures stay the batch's. (Under real daemons: tests/reliability.)
#include <catch2/catch.hpp>
#include <soci/soci.h>

#include <atomic>
#include <filesystem>
#include <map>
#include <thread>

#include "builtin_jobs.hpp"
#include "hostile.hpp"
#include "prescient/client.hpp"
#include "prescient/daemon.hpp"
#include "prescient/errors.hpp"
#include "prescient/plugin.hpp"
#include "prescient/slot_runner.hpp"
#include "prescient/checks.hpp"
#include "prescient/settings.hpp"
#include "core/text_rules.hpp"
#include "prescient/time_text.hpp"
#include "run_log.hpp"
#include "test_database.hpp"
#include "wait.hpp"

using namespace prescient;
using namespace prescient::jobs;
using namespace prescient::core;
using namespace std::chrono_literals;
using prescient::testing::connect_to;
using prescient::testing::count_of;
using prescient::testing::create_migrated_database;
using prescient::testing::wait_until;

namespace {

using prescient::testing::RunLog;

// Counts runs by check id, emits payload.emit as an event type, buffers a row into app.log when
// payload.write, sleeps payload.sleep_ms.
class Counted final : public JobExec {
 public:
  explicit Counted(RunLog& runs) : runs_(runs) {}
  JobResult run(const Check& check, JobContext& ctx) override {
    runs_.record(check.id);
    if (check.payload.contains("sleep_ms")) {
      std::this_thread::sleep_for(std::chrono::milliseconds(check.payload["sleep_ms"].get<int>()));
    }
    if (check.payload.value("write", false)) {
      ctx.write("INSERT INTO app.log (check_id) VALUES ($1)", {std::to_string(check.id)});
    }
    JobResult result;
    if (check.payload.contains("emit")) result.events.push_back({.type = check.payload["emit"].get<std::string>()});
    return result;
  }

 private:
  RunLog& runs_;
};

// A clock that says when it is used after its end: an abandoned job must never read a runner's clock
// that is gone. Its storage outlives it, so a late call is detected instead of being undefined.
std::atomic<int> late_clock_reads{0};
class GuardedClock final : public Clock {
 public:
  explicit GuardedClock(TimePoint t) : now_(t) {}
  ~GuardedClock() override { alive_ = false; }
  TimePoint now() const override {
    if (!alive_) ++late_clock_reads;
    return now_;
  }

 private:
  TimePoint now_;
  std::atomic<bool> alive_{true};
};

struct IsolationFixture {
  std::string url = create_migrated_database(60);
  std::unique_ptr<soci::session> db = connect_to(url);
  ManualClock clock{parse_time("2026-11-21T10:00:00Z")};
  RunLog runs;
  Registry registry;
  Client client{*db, {.clock = &clock, .enqueued_by = "test"}};
  std::string commands = testing::make_hostile_commands_dir();

  IsolationFixture() {
    register_builtin_jobs(registry, {.commands_dir = commands});
    registry.add("counted", [this] { return std::make_unique<Counted>(runs); });
    load_plugins(PRESCIENT_TEST_PLUGINS, registry);
    *db << "CREATE SCHEMA app";
    *db << "CREATE TABLE app.log (check_id bigint)";
  }
  ~IsolationFixture() { std::filesystem::remove_all(commands); }

  std::int64_t add(const std::string& job, nlohmann::json payload, const char* at = "2026-11-21T10:05:00Z") {
    return client.schedule({.job = job, .entity_name = "e", .entity_key = "k", .at = parse_time(at),
                            .payload = std::move(payload)})
        .id;
  }

  SlotRunner runner(RunnerOptions options = {}) {
    options.database_url = url;
    if (options.runner_id.empty()) options.runner_id = "r1";
    return SlotRunner(options, registry, clock);
  }

  SlotReport fire(const char* slot, RunnerOptions options = {}) {
    clock.set(parse_time(slot));
    return runner(std::move(options)).run_slot(parse_time(slot));
  }

  std::optional<HistoryEntry> finished(std::int64_t id) {
    const auto rows = Checks(*db).history({.id = id});
    if (rows.empty()) return std::nullopt;
    return rows.front();
  }
  PendingCheck pending(std::int64_t id) { return Checks(*db).pending({.id = id}).at(0); }
};

}  // namespace

TEST_CASE("every hostile answer fails its own check or is stored made storable; the good checks settle") {
  IsolationFixture f;
  *f.db << "UPDATE prescient.settings SET job_timeout_seconds = 1, max_attempts = 1";
  std::vector<std::int64_t> good;
  for (int i = 0; i < 10; ++i) good.push_back(f.add("counted", nlohmann::json::object()));
  std::map<std::string, std::int64_t> ids;
  for (const auto& kind : testing::hostile_kinds()) ids[kind.name] = f.add(kind.job, kind.payload());
  for (int i = 0; i < 10; ++i) good.push_back(f.add("counted", nlohmann::json::object()));

  const SlotReport r = f.fire("2026-11-21T10:05:00Z");
  CHECK(r.done == 20 + 3);  // the good ones, and the events made storable
  for (const auto id : good) {
    CHECK(f.runs.of(id) == 1);
    CHECK(f.finished(id)->outcome == Outcome::done);
  }
  CHECK(count_of(*f.db, "SELECT count(*) FROM prescient.future_job") == 0);
  for (const auto& kind : testing::hostile_kinds()) {
    INFO(kind.name);
    const auto h = f.finished(ids[kind.name]);
    REQUIRE(h.has_value());
    CHECK(h->outcome == kind.outcome);
    if (kind.error.empty()) continue;
    REQUIRE(h->last_error.has_value());
    CHECK_THAT(*h->last_error, Catch::Contains(kind.error));
    CHECK(h->last_error->size() <= kMaxErrorBytes);
    CHECK(valid_utf8(*h->last_error));
  }
  // Events made storable are stored; duplicates by id once; refused ones not at all.
  const auto events_of = [&](const char* kind) {
    return count_of(*f.db, "SELECT count(*) FROM prescient.event WHERE source = '" + std::to_string(ids[kind]) + "'");
  };
  CHECK(events_of("event_bad_utf8") == 0);  // its source was given: "src\xfe", made storable
  CHECK(count_of(*f.db, "SELECT count(*) FROM prescient.event WHERE type = 'bad\uFFFD type' AND source = 'src\uFFFD'") ==
        1);
  CHECK(count_of(*f.db, "SELECT count(*) FROM prescient.event WHERE type = 'nul\uFFFDtype'") == 1);
  CHECK(events_of("event_dup_ids") == 1);
  CHECK(events_of("event_nul_payload") == 0);
  CHECK(events_of("events_too_many") == 0);
  CHECK(count_of(*f.db, "SELECT count(*) FROM prescient.event") == 3);
}

TEST_CASE("a settlement refused for one check's values: the others commit in the same claim, run once") {
  IsolationFixture f;
  // Another tool's rule refuses some events: the batch's settle statement fails on their checks' values.
  *f.db << "ALTER TABLE prescient.event ADD CONSTRAINT no_poison CHECK (type <> 'poison')";
  std::vector<std::int64_t> good, poisoned;
  for (int i = 0; i < 40; ++i) {
    const bool poison = i == 3 || i == 17 || i == 18;
    (poison ? poisoned : good).push_back(f.add("counted", {{"emit", poison ? "poison" : "fine"}, {"write", true}}));
  }
  const SlotReport r = f.fire("2026-11-21T10:05:00Z");
  CHECK(r.claimed == 40);
  CHECK(r.done == 37);
  CHECK(r.retried == 3);
  CHECK(r.events == 37);
  for (const auto id : good) {
    CHECK(f.runs.of(id) == 1);
    CHECK(f.finished(id)->outcome == Outcome::done);
  }
  // The writes of the good ones committed once; the culprits' not at all.
  CHECK(count_of(*f.db, "SELECT count(*) FROM app.log") == 37);
  CHECK(count_of(*f.db, "SELECT count(DISTINCT check_id) FROM app.log") == 37);
  for (const auto id : poisoned) {
    CHECK(f.runs.of(id) == 1);
    const PendingCheck p = f.pending(id);
    CHECK(p.attempts == 1);
    CHECK_THAT(p.last_error.value_or(""), Catch::Contains("the database refused its settlement") &&
                                              Catch::Contains("no_poison") && Catch::Contains("23514"));
    CHECK(count_of(*f.db, "SELECT count(*) FROM app.log WHERE check_id = " + std::to_string(id)) == 0);
  }
}

namespace {

// prescient.runner_settle over the pending checks with these ids, in this order, each done and emitting one
// event of the type given: the counts it answers, and a row per culprit.
struct ServerSettlement {
  long long checks = 0, events = 0, statements = 0;
  std::vector<std::int64_t> refused;
  std::vector<std::string> refusals;
};
ServerSettlement settle_in_server(soci::session& db, const std::vector<std::int64_t>& ids,
                                  const std::vector<std::string>& event_types, bool in_chunks) {
  std::string id_list, type_list;
  for (std::size_t i = 0; i < ids.size(); ++i) {
    id_list += (i ? "," : "") + std::to_string(ids[i]);
    type_list += (i ? "," : "") + event_types[i];
  }
  // One zero a check: its due time, its counts before the run, an event's time.
  const std::string zeros = "(SELECT array_agg(0::bigint) FROM unnest('{" + id_list + "}'::bigint[]))";
  ServerSettlement out;
  soci::rowset<soci::row> rows = (db.prepare <<
      "SELECT checks, events, statements, refused_id, refusal FROM prescient.runner_settle("
      " p_checks => ROW('{" + id_list + "}', NULL, NULL, NULL, NULL, NULL, " + zeros + ", NULL, NULL, NULL, " + zeros +
      ", " + zeros + ", NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL)::prescient.settle_checks,"
      " p_events => ROW((SELECT array_agg('e' || i) FROM unnest('{" + id_list + "}'::bigint[]) i),"
      " '{" + type_list + "}', (SELECT array_agg('s'::text) FROM unnest('{" + id_list + "}'::bigint[])), " + zeros +
      ", (SELECT array_agg('{}'::text) FROM unnest('{" + id_list + "}'::bigint[])), '{" + id_list + "}',"
      " NULL)::prescient.settle_events,"
      " p_context => ROW('r', prescient.at_us(1795000000000000), NULL, 60, 86400)::prescient.settle_context,"
      " p_in_chunks => " + (in_chunks ? "true" : "false") + ")");
  for (const soci::row& r : rows) {
    out.checks = r.get<long long>(0);
    out.events = r.get<long long>(1);
    out.statements = r.get<int>(2);
    if (r.get_indicator(3) == soci::i_ok) {
      out.refused.push_back(r.get<long long>(3));
      out.refusals.push_back(r.get<std::string>(4));
    }
  }
  return out;
}

}  // namespace

TEST_CASE("runner_settle: a refused check costs its chunk and its halves, in one call; the rest settle") {
  IsolationFixture f;
  *f.db << "ALTER TABLE prescient.event ADD CONSTRAINT no_poison CHECK (type <> 'poison')";
  const bool in_chunks = GENERATE(false, true);
  INFO("in chunks from the start: " << in_chunks);
  *f.db << "SELECT count(*) FROM prescient.schedule_arrays(p_job => array_fill('counted'::text, ARRAY[1000]),"
           " p_entity_name => array_fill('e'::text, ARRAY[1000]),"
           " p_entity_key => (SELECT array_agg(i::text) FROM generate_series(1, 1000) i),"
           " p_at => array_fill('2026-11-21T10:05:00Z'::timestamptz, ARRAY[1000]))";
  std::vector<std::int64_t> ids;
  soci::rowset<long long> rows = (f.db->prepare << "SELECT id FROM prescient.future_job ORDER BY id");
  for (const long long id : rows) ids.push_back(id);
  REQUIRE(ids.size() == 1000);
  std::vector<std::string> types(1000, "fine");
  types[700] = "poison";
  const ServerSettlement s = settle_in_server(*f.db, ids, types, in_chunks);
  CHECK(s.checks == 999);
  CHECK(s.events == 999);
  REQUIRE(s.refused == std::vector<std::int64_t>{ids[700]});
  CHECK_THAT(s.refusals[0], Catch::Contains("no_poison") && Catch::EndsWith("(SQLSTATE 23514)"));
  // The batch whole (unless in chunks), its eight chunks of 128, then the refused chunk's halves: the culprit
  // is its 61st check. 1-64 refused; 1-32 settled, so 33-64 is split unattempted; 33-48, 49-56 and 57-60
  // settled; 61-62 refused; 61 refused, 62 settled; 63-64 settled; 65-128 settled: ten, not the batch's
  // halves (about twenty).
  CHECK(s.statements == (in_chunks ? 0 : 1) + 8 + 10);
  CHECK(count_of(*f.db, "SELECT count(*) FROM prescient.job_history") == 999);
  CHECK(count_of(*f.db, "SELECT count(*) FROM prescient.event") == 999);
  CHECK(count_of(*f.db, "SELECT count(*) FROM prescient.future_job WHERE id = " + std::to_string(ids[700])) == 1);
  // Each check's events went with it: the event of check i is e<i>.
  CHECK(count_of(*f.db, "SELECT count(*) FROM prescient.event e JOIN prescient.job_history h"
                        " ON e.id = 'e' || h.id") == 999);
}

TEST_CASE("runner_settle: any set of culprits is found exactly; every other check settles once") {
  IsolationFixture f;
  *f.db << "ALTER TABLE prescient.event ADD CONSTRAINT no_poison CHECK (type <> 'poison')";
  const std::vector<int> culprits = GENERATE(values<std::vector<int>>(
      {{0}, {299}, {127, 128}, {5, 6, 7}, {0, 50, 100, 150, 200, 250}, {64, 65, 66, 67, 68, 69, 70, 71}, {}}));
  const bool in_chunks = GENERATE(false, true);
  INFO("in chunks from the start: " << in_chunks << ", culprits " << culprits.size());
  *f.db << "SELECT count(*) FROM prescient.schedule_arrays(p_job => array_fill('counted'::text, ARRAY[300]),"
           " p_entity_name => array_fill('e'::text, ARRAY[300]),"
           " p_entity_key => (SELECT array_agg(i::text) FROM generate_series(1, 300) i),"
           " p_at => array_fill('2026-11-21T10:05:00Z'::timestamptz, ARRAY[300]))";
  std::vector<std::int64_t> ids, expected;
  soci::rowset<long long> rows = (f.db->prepare << "SELECT id FROM prescient.future_job ORDER BY id");
  for (const long long id : rows) ids.push_back(id);
  std::vector<std::string> types(ids.size(), "fine");
  for (const int c : culprits) {
    types[c] = "poison";
    expected.push_back(ids[c]);
  }
  const ServerSettlement s = settle_in_server(*f.db, ids, types, in_chunks);
  CHECK(s.refused == expected);
  CHECK(s.checks == 300 - static_cast<long long>(culprits.size()));
  CHECK(count_of(*f.db, "SELECT count(*) FROM prescient.job_history") == s.checks);
  CHECK(count_of(*f.db, "SELECT count(DISTINCT id) FROM prescient.job_history") == s.checks);
  CHECK(count_of(*f.db, "SELECT count(*) FROM prescient.event") == s.checks);
  CHECK(count_of(*f.db, "SELECT count(*) FROM prescient.future_job") == static_cast<long long>(culprits.size()));
}

TEST_CASE("runner_settle: an error that is not a check's values fails the call; nothing is settled") {
  IsolationFixture f;
  *f.db << "CREATE FUNCTION app.server_trouble() RETURNS trigger LANGUAGE plpgsql AS $$"
           " BEGIN RAISE EXCEPTION 'disk trouble' USING ERRCODE = '58030'; END $$";
  *f.db << "CREATE TRIGGER trouble BEFORE INSERT ON prescient.event FOR EACH ROW EXECUTE FUNCTION app.server_trouble()";
  const std::vector<std::int64_t> ids{f.add("counted", nlohmann::json::object()), f.add("counted", nlohmann::json::object())};
  CHECK_THROWS_WITH(settle_in_server(*f.db, ids, {"fine", "fine"}, false), Catch::Contains("disk trouble"));
  CHECK(count_of(*f.db, "SELECT count(*) FROM prescient.future_job") == 2);
  CHECK(count_of(*f.db, "SELECT count(*) FROM prescient.job_history") == 0);
}

TEST_CASE("refused_for_its_values: which SQLSTATEs are a check's values, so that it fails alone") {
  IsolationFixture f;
  struct Row {
    const char* sqlstate;
    bool values;
  };
  const Row rows[] = {
      {"22021", true},   // invalid byte sequence for the encoding
      {"22P05", true},   // \u0000 in jsonb
      {"22008", true},   // timestamp out of range
      {"23514", true},   // a check constraint
      {"23505", true},   // a unique violation
      {"54000", true},   // an index entry or a jsonb value too big
      {"P0001", true},   // RAISE in a trigger on the row
      {"08006", false},  // connection failure
      {"57014", false},  // query cancelled
      {"58030", false},  // I/O error
      {"XX000", false},  // internal error
      {"40P01", false},  // deadlock: the transaction's, not a value's
      {"42P01", false},  // undefined table: a statement's bug, not a value's
      {"", false},       // no SQLSTATE
      {"2", false},      // not a SQLSTATE
  };
  for (const Row& row : rows) {
    INFO(row.sqlstate);
    CHECK(count_of(*f.db, std::string("SELECT count(*) WHERE prescient.refused_for_its_values('") + row.sqlstate +
                              "')") == (row.values ? 1 : 0));
  }
}

TEST_CASE("a settlement that fails for the server's reasons is the batch's: nothing settles, the rows are free") {
  IsolationFixture f;
  *f.db << "CREATE FUNCTION app.server_trouble() RETURNS trigger LANGUAGE plpgsql AS $$"
           " BEGIN RAISE EXCEPTION 'disk trouble' USING ERRCODE = '58030'; END $$";
  *f.db << "CREATE TRIGGER trouble BEFORE INSERT ON prescient.job_history FOR EACH ROW"
           " EXECUTE FUNCTION app.server_trouble()";
  for (int i = 0; i < 5; ++i) f.add("counted", {{"emit", "fine"}});
  CHECK_THROWS_AS(f.fire("2026-11-21T10:05:00Z"), DatabaseError);
  CHECK(count_of(*f.db, "SELECT count(*) FROM prescient.future_job WHERE attempts = 0 AND claimed_until IS NULL") == 5);
  CHECK(count_of(*f.db, "SELECT count(*) FROM prescient.event") == 0);
  // The rows were not held: once the trouble is gone, they settle.
  *f.db << "DROP TRIGGER trouble ON prescient.job_history";
  CHECK(f.fire("2026-11-21T10:05:00Z").done == 5);
}

TEST_CASE("a check the database refuses to settle in any form stays pending; the drain does not loop on it") {
  IsolationFixture f;
  *f.db << "ALTER TABLE prescient.event ADD CONSTRAINT no_poison CHECK (type <> 'poison')";
  // ... and a rule that refuses its failed attempt too.
  *f.db << "ALTER TABLE prescient.future_job ADD CONSTRAINT never_retried CHECK (attempts = 0)";
  const auto stuck = f.add("counted", {{"emit", "poison"}});
  std::vector<std::int64_t> good;
  for (int i = 0; i < 5; ++i) good.push_back(f.add("counted", {{"emit", "fine"}}));
  const SlotReport r = f.fire("2026-11-21T10:05:00Z");
  CHECK(r.done == 5);
  CHECK(f.runs.of(stuck) == 1);  // claimed and run once in this drain, then left out of its claims
  const PendingCheck p = f.pending(stuck);
  CHECK(p.attempts == 0);
  CHECK(count_of(*f.db, "SELECT count(*) FROM prescient.future_job WHERE claimed_until IS NOT NULL") == 0);
}

TEST_CASE("a payload the runner cannot read fails its own check, not the claim") {
  IsolationFixture f;
  // Valid jsonb, and a number no double holds: another tool, or the SQL API, may write it.
  *f.db << "SELECT prescient.schedule('counted', 'e', 'huge', '2026-11-21T10:05:00Z', NULL, NULL,"
           " '{\"x\": 1e400}'::jsonb, 'sql', 'error', '2026-11-21T10:00:00Z')";
  std::vector<std::int64_t> good;
  for (int i = 0; i < 5; ++i) good.push_back(f.add("counted", nlohmann::json::object()));
  const SlotReport r = f.fire("2026-11-21T10:05:00Z");
  CHECK(r.claimed == 6);
  CHECK(r.done == 5);
  CHECK(r.retried == 1);
  const auto unreadable = Checks(*f.db).pending({.entity_key = std::string("huge")});
  REQUIRE(unreadable.size() == 1);
  CHECK(unreadable[0].attempts == 1);
  CHECK_THAT(unreadable[0].last_error.value_or(""), Catch::Contains("its payload cannot be read"));
  // Read back for showing (list, show), it comes as its text instead of stopping the listing.
  CHECK(unreadable[0].payload.is_string());
  CHECK(Checks(*f.db).pending({}).size() == 1);
}

TEST_CASE("a class that cannot be made, or whose policy makes no sense, fails its checks, not the batch") {
  IsolationFixture f;
  f.registry.add("factory_throws", []() -> std::unique_ptr<JobExec> { throw std::runtime_error("no config file"); });
  struct ZeroTimeout final : JobExec {
    JobPolicy policy() const override { return {.timeout = std::chrono::seconds{0}}; }
    JobResult run(const Check&, JobContext&) override { return {}; }
  };
  f.registry.add("zero_timeout", [] { return std::make_unique<ZeroTimeout>(); });
  const auto throws = f.add("factory_throws", nlohmann::json::object());
  const auto zero = f.add("zero_timeout", nlohmann::json::object());
  const auto fine = f.add("counted", nlohmann::json::object());
  const SlotReport r = f.fire("2026-11-21T10:05:00Z");
  CHECK(r.done == 1);
  CHECK(r.retried == 2);
  CHECK_THAT(f.pending(throws).last_error.value_or(""), Catch::Contains("could not be made: no config file"));
  CHECK_THAT(f.pending(zero).last_error.value_or(""), Catch::Contains("invalid policy: timeout 0s"));
  CHECK(f.finished(fine)->outcome == Outcome::done);
}

TEST_CASE("a batch holds its rows no longer than its deadline: a blocked cancel gets the check before it runs") {
  IsolationFixture f;
  // 20 checks of 400 ms: 8 s in one transaction without a deadline, and the last one run before a cancel
  // blocked on its row could take it. With a deadline of 1 s the batch commits after a few checks and
  // gives the rest back. Judged by what ran, not by a wall-clock bound: a loaded machine runs fewer checks
  // before the deadline, never more.
  std::vector<std::int64_t> ids;
  for (int i = 0; i < 20; ++i) ids.push_back(f.add("counted", {{"sleep_ms", 400}}));
  f.clock.set(parse_time("2026-11-21T10:05:00Z"));
  auto runner = f.runner({.batch_deadline = 1000ms});
  std::thread fire([&] { runner.run_slot(parse_time("2026-11-21T10:05:00Z")); });
  wait_until("the batch's first job to run", 30s, [&] {
    const std::lock_guard lock(f.runs.mutex);
    return !f.runs.runs.empty();
  });
  // The last check is locked by the claim; the application cancels it.
  auto app = connect_to(f.url);
  const auto cancelled = Client(*app, {.clock = &f.clock}).cancel_id(ids.back(), "alice");
  std::size_t ran_by_then = 0;
  {
    const std::lock_guard lock(f.runs.mutex);
    ran_by_then = f.runs.runs.size();
  }
  fire.join();
  INFO(ran_by_then << " checks had run when the cancel returned");
  CHECK(cancelled == ids.back());
  CHECK(ran_by_then < ids.size() / 2);
  CHECK(f.runs.of(ids.back()) == 0);
  CHECK(f.finished(ids.back())->outcome == Outcome::cancelled);
  // Nothing lost: the rest was settled in later transactions, each check once.
  CHECK(count_of(*f.db, "SELECT count(*) FROM prescient.future_job") == 0);
  CHECK(count_of(*f.db, "SELECT count(DISTINCT id) FROM prescient.job_history") == 20);
  for (const auto id : ids) CHECK(f.runs.of(id) <= 1);
}

namespace {

// Sleeps past its timeout and the grace (it is abandoned), then reads the clock and returns.
std::atomic<int> sleepers_done{0};
class Sleeper final : public JobExec {
 public:
  JobPolicy policy() const override { return {.timeout = std::chrono::seconds{1}}; }
  JobResult run(const Check& check, JobContext& ctx) override {
    std::this_thread::sleep_for(std::chrono::milliseconds(check.payload.value("sleep_ms", 4000)));
    ctx.now();
    ++sleepers_done;
    return {};
  }
};

void wait_until_no_abandoned_jobs() {
  for (int i = 0; i < 200 && abandoned_jobs_running() > 0; ++i) std::this_thread::sleep_for(50ms);
  REQUIRE(abandoned_jobs_running() == 0);
}

}  // namespace

TEST_CASE("jobs that never return are capped per class: the runner stops taking that class and says so") {
  IsolationFixture f;
  wait_until_no_abandoned_jobs();
  f.registry.add("sleeper", [] { return std::make_unique<Sleeper>(); });
  const auto first = f.add("sleeper", {{"sleep_ms", 6000}});
  const auto second = f.add("sleeper", {{"sleep_ms", 6000}});
  const auto other = f.add("counted", nlohmann::json::object());
  const SlotReport r = f.fire("2026-11-21T10:05:00Z", {.max_abandoned_per_class = 1});
  // The first sleeper was abandoned; with the class at its cap the second was not claimed again.
  CHECK(abandoned_jobs_running() == 1);
  CHECK(r.retried == 1);
  CHECK(f.finished(other)->outcome == Outcome::done);
  int abandoned = 0, untouched = 0;
  for (const auto id : {first, second}) {
    const PendingCheck p = f.pending(id);
    (p.attempts == 1 ? abandoned : untouched) += 1;
    if (p.attempts == 0) CHECK(format_time(p.next_check_at) == "2026-11-21T10:05:00Z");  // still due, unrun
  }
  CHECK(abandoned == 1);
  CHECK(untouched == 1);
  // When the stuck job returns, the class is taken again (by the sweep the daemon runs after each slot).
  wait_until_no_abandoned_jobs();
  f.clock.set(parse_time("2026-11-21T10:06:00Z"));
  CHECK(f.runner().sweep(parse_time("2026-11-21T10:06:00Z"), SweepMode::run).claimed == 1);
  wait_until_no_abandoned_jobs();
}

TEST_CASE("an abandoned job never reads the clock of a runner that is gone") {
  IsolationFixture f;
  wait_until_no_abandoned_jobs();
  f.registry.add("sleeper", [] { return std::make_unique<Sleeper>(); });
  f.add("sleeper", {{"sleep_ms", 4500}});
  const int done_before = sleepers_done;
  late_clock_reads = 0;
  {
    // The runner's clock lives in storage that outlasts it, so a late read is seen, not undefined.
    alignas(GuardedClock) static unsigned char storage[sizeof(GuardedClock)];
    auto* clock = new (storage) GuardedClock(parse_time("2026-11-21T10:05:00Z"));
    {
      SlotRunner runner({.database_url = f.url, .runner_id = "r1"}, f.registry, *clock);
      CHECK(runner.run_slot(parse_time("2026-11-21T10:05:00Z")).retried == 1);  // abandoned after 1 s + grace
    }
    clock->~GuardedClock();
  }
  // The job wakes up after the runner and its clock are gone, and asks for the time.
  wait_until_no_abandoned_jobs();
  CHECK(sleepers_done == done_before + 1);
  CHECK(late_clock_reads == 0);
}

namespace {

// The clock jumps to each time waited for (a little late, as a real wake-up is); stops at `stop_at`.
class StopAtWaiter final : public Waiter {
 public:
  StopAtWaiter(ManualClock& clock, TimePoint stop_at) : clock_(clock), stop_at_(stop_at) {}
  bool wait_until(TimePoint t) override {
    if (stopped() || clock_.now() >= stop_at_) {
      stop();
      return false;
    }
    clock_.set(std::max(clock_.now(), t + 250ms));
    return true;
  }

 private:
  ManualClock& clock_;
  TimePoint stop_at_;
};

struct CountingObserver final : DaemonObserver {
  int retries = 0;
  void fired(const SlotReport&, bool) override {}
  void failed(const std::exception&) override {}
  void slot_retried(TimePoint) override { ++retries; }
};

}  // namespace

TEST_CASE("a slot that cannot be completed is given up to the sweep: the slots after it fire on time") {
  IsolationFixture f;
  // The server refuses, for its own reasons, every settlement of the 10:02 slot (a batch failure, retried).
  *f.db << "CREATE FUNCTION app.refuse_slot() RETURNS trigger LANGUAGE plpgsql AS $$"
           " BEGIN IF NEW.last_check_at = '2026-11-21T10:02:00Z' THEN"
           "   RAISE EXCEPTION 'storage trouble' USING ERRCODE = '58030'; END IF; RETURN NEW; END $$";
  *f.db << "CREATE TRIGGER refuse BEFORE INSERT ON prescient.job_history FOR EACH ROW"
           " EXECUTE FUNCTION app.refuse_slot()";
  for (const char* at : {"2026-11-21T10:01:00Z", "2026-11-21T10:02:00Z", "2026-11-21T10:03:00Z",
                         "2026-11-21T10:04:00Z", "2026-11-21T10:05:00Z", "2026-11-21T10:06:00Z"}) {
    for (int i = 0; i < 3; ++i) f.add("counted", nlohmann::json::object(), at);
  }
  f.clock.set(parse_time("2026-11-21T10:00:30Z"));
  StopAtWaiter waiter(f.clock, parse_time("2026-11-21T10:07:00Z"));
  CountingObserver observer;
  Daemon daemon({.database_url = f.url, .runner_id = "d1"}, f.registry, f.clock, waiter, &observer);
  const DaemonStats stats = daemon.run();
  CHECK(observer.retries >= 1);
  CHECK(stats.slot_retries == observer.retries);
  // Every other slot fired at its boundary: settled within the slot it was due at.
  CHECK(count_of(*f.db, "SELECT count(*) FROM prescient.job_history") == 15);
  CHECK(count_of(*f.db, "SELECT count(*) FROM prescient.job_history"
                        " WHERE finished_at >= last_check_at + interval '1 minute'") == 0);
  CHECK(count_of(*f.db, "SELECT count(*) FROM prescient.future_job"
                        " WHERE next_check_at = '2026-11-21T10:02:00Z'") == 3);
}

#include <catch2/catch.hpp>
#include <soci/soci.h>
#include <soci/postgresql/soci-postgresql.h>

#include <libpq-fe.h>

#include <algorithm>
#include <atomic>
#include <functional>
#include <random>
#include <set>
#include <thread>

#include "prescient/client.hpp"
#include "prescient/clock.hpp"
#include "prescient/errors.hpp"
#include "prescient/registry.hpp"
#include "prescient/schedules.hpp"
#include "prescient/slot_grid.hpp"
#include "prescient/checks.hpp"
#include "prescient/settings.hpp"
#include "core/text_rules.hpp"
#include "db/connection.hpp"
#include "prescient/time_text.hpp"
#include "process.hpp"
#include "test_database.hpp"

using namespace prescient;
using namespace prescient::core;
using namespace std::chrono_literals;
using prescient::testing::connect_to;
using prescient::testing::count_of;
using prescient::testing::create_migrated_database;
using prescient::testing::sql_refusal;

namespace {

ScheduleRequest order_check(std::string key, std::chrono::seconds in = 3h) {
  return {.job = "noop", .entity_name = "orders", .entity_key = "42", .job_key = std::move(key), .in = in};
}

// A 15-minute grid, the clock at 10:05 as in the seeds' example.
struct ClientCallsFixture {
  std::string url = create_migrated_database(900);
  std::unique_ptr<soci::session> db = connect_to(url);
  ManualClock clock{parse_time("2026-11-21T10:05:00Z")};
  Client client{*db, {.clock = &clock, .enqueued_by = "tester"}};
};

}  // namespace

TEST_CASE("times round up to the slot grid; past times go to the next slot") {
  ClientCallsFixture f;
  struct Case {
    const char* label;
    ScheduleRequest request;
    const char* expected;
  };
  const auto at = [](const char* text) {
    return ScheduleRequest{.job = "noop", .entity_name = "orders", .entity_key = "1", .at = parse_time(text)};
  };
  const auto in = [](std::chrono::seconds d) {
    return ScheduleRequest{.job = "noop", .entity_name = "orders", .entity_key = "1", .in = d};
  };
  const Case cases[] = {
      {"10:05 + 3h (the seeds' example)", in(3h), "2026-11-21T13:15:00Z"},
      {"on the grid stays", at("2026-11-21T13:15:00Z"), "2026-11-21T13:15:00Z"},
      {"a microsecond past a boundary", at("2026-11-21T13:15:00.000001Z"), "2026-11-21T13:30:00Z"},
      {"an offset is honoured", at("2026-11-21T14:05:00+01:00"), "2026-11-21T13:15:00Z"},
      {"in the past: next slot", at("2026-11-21T09:00:00Z"), "2026-11-21T10:15:00Z"},
      {"the current slot's boundary: next slot", at("2026-11-21T10:00:00Z"), "2026-11-21T10:15:00Z"},
      {"now: next slot", in(0s), "2026-11-21T10:15:00Z"},
      {"long ago: next slot", at("1999-01-01T00:00:00Z"), "2026-11-21T10:15:00Z"},
      {"within the horizon", in(365 * 24h), "2027-11-21T10:15:00Z"},
  };
  for (const Case& c : cases) {
    INFO(c.label);
    const Scheduled s = f.client.schedule(c.request);
    CHECK(s.status == Scheduled::Status::created);
    CHECK(format_time(*s.next_check_at) == c.expected);
    CHECK(s.first_check_at == s.next_check_at);
  }
}

TEST_CASE("the SQL rounding agrees with SlotGrid for many times") {
  ClientCallsFixture f;
  const SlotGrid grid{900s};
  std::mt19937_64 random(42);
  std::vector<ScheduleRequest> requests;
  for (int i = 0; i < 500; ++i) {
    const auto offset = Micros{static_cast<std::int64_t>(random() % (3LL * 86400 * 1000000)) - 86400LL * 1000000};
    requests.push_back({.job = "noop", .entity_name = "e", .entity_key = std::to_string(i), .at = f.clock.now() + offset});
  }
  const auto results = f.client.schedule_many(requests);
  REQUIRE(results.size() == requests.size());
  for (std::size_t i = 0; i < requests.size(); ++i) {
    const TimePoint expected = std::max(grid.round_up(*requests[i].at), grid.floor(f.clock.now()) + 900s);
    INFO(format_time(*requests[i].at));
    CHECK(*results[i].next_check_at == expected);
  }
}

TEST_CASE("on-conflict error names the key and the existing id, and changes nothing") {
  ClientCallsFixture f;
  const Scheduled first = f.client.schedule(order_check("order_unshipped:42"));
  ScheduleRequest again = order_check("order_unshipped:42", 5h);
  again.payload = {{"changed", true}};
  CHECK_THROWS_WITH(f.client.schedule(again), Catch::Contains("'order_unshipped:42'") &&
                                                  Catch::Contains("id " + std::to_string(first.id)));
  const auto rows = Checks(*f.db).pending({.job_key = "order_unshipped:42"});
  REQUIRE(rows.size() == 1);
  CHECK(rows[0].next_check_at == *first.next_check_at);
  CHECK(rows[0].payload == nlohmann::json::object());
}

TEST_CASE("on-conflict replace updates in place, keeps id and first_check_at, resets counts") {
  ClientCallsFixture f;
  const Scheduled first = f.client.schedule(order_check("k"));
  *f.db << "UPDATE prescient.future_job SET check_count = 3, attempts = 2, last_error = 'boom'";
  ScheduleRequest replacement = order_check("k", 5h);
  replacement.on_conflict = OnConflict::replace;
  replacement.payload = {{"v", 2}};
  replacement.entity_key = "43";
  const Scheduled replaced = f.client.schedule(replacement);
  CHECK(replaced.status == Scheduled::Status::replaced);
  CHECK(replaced.id == first.id);
  CHECK(format_time(*replaced.next_check_at) == "2026-11-21T15:15:00Z");
  CHECK(replaced.first_check_at == first.first_check_at);
  const auto rows = Checks(*f.db).pending({.job_key = "k"});
  REQUIRE(rows.size() == 1);
  CHECK(rows[0].payload == nlohmann::json{{"v", 2}});
  CHECK(rows[0].entity_key == "43");
  CHECK(rows[0].check_count == 0);
  CHECK(rows[0].attempts == 0);
  CHECK_FALSE(rows[0].last_error.has_value());
}

TEST_CASE("on-conflict keep leaves the pending check as it is and returns it") {
  ClientCallsFixture f;
  const Scheduled first = f.client.schedule(order_check("k"));
  ScheduleRequest other = order_check("k", 9h);
  other.on_conflict = OnConflict::keep;
  const Scheduled kept = f.client.schedule(other);
  CHECK(kept.status == Scheduled::Status::kept);
  CHECK(kept.id == first.id);
  CHECK(kept.next_check_at == first.next_check_at);
  CHECK(count_of(*f.db, "SELECT count(*) FROM prescient.future_job") == 1);
}

TEST_CASE("cancel moves the check to history as cancelled, with who and when") {
  ClientCallsFixture f;
  const Scheduled by_key = f.client.schedule(order_check("by-key"));
  const Scheduled by_id = f.client.schedule(order_check("by-id"));
  f.clock.advance(1min);
  CHECK(f.client.cancel_job_key("by-key", "alice") == by_key.id);
  CHECK(f.client.cancel_id(by_id.id) == by_id.id);
  CHECK(count_of(*f.db, "SELECT count(*) FROM prescient.future_job") == 0);
  const auto history = Checks(*f.db).history({}, true);
  REQUIRE(history.size() == 2);
  CHECK(history[0].id == by_key.id);
  CHECK(history[0].outcome == Outcome::cancelled);
  CHECK(history[0].finished_by == "alice");
  CHECK(format_time(history[0].finished_at) == "2026-11-21T10:06:00Z");
  // It was never looked at in its slot: its last check is when it was cancelled, not that future time.
  REQUIRE(history[0].finished_at < *by_key.next_check_at);
  CHECK(history[0].last_check_at == history[0].finished_at);
  CHECK(history[0].enqueued_by == "tester");
  CHECK(history[1].finished_by == "tester");
  // Gone from the pending set: a second cancel finds nothing.
  CHECK_FALSE(f.client.cancel_job_key("by-key").has_value());
  CHECK_FALSE(f.client.cancel_id(by_id.id).has_value());
  // The key is free again.
  CHECK(f.client.schedule(order_check("by-key")).status == Scheduled::Status::created);
}

TEST_CASE("reschedule by key and by id rounds up and keeps first_check_at") {
  ClientCallsFixture f;
  const Scheduled s = f.client.schedule(order_check("k"));
  const auto by_key = f.client.reschedule_job_key("k", parse_time("2026-11-22T08:01:00Z"));
  REQUIRE(by_key);
  CHECK(by_key->id == s.id);
  CHECK(format_time(by_key->next_check_at) == "2026-11-22T08:15:00Z");
  const auto by_id = f.client.reschedule_id(s.id, parse_time("2026-11-21T09:00:00Z"));
  REQUIRE(by_id);
  CHECK(format_time(by_id->next_check_at) == "2026-11-21T10:15:00Z");
  const auto rows = Checks(*f.db).pending({.id = s.id});
  REQUIRE(rows.size() == 1);
  CHECK(rows[0].first_check_at == *s.first_check_at);
  CHECK_FALSE(f.client.reschedule_job_key("nope", f.clock.now()).has_value());
  CHECK_FALSE(f.client.reschedule_id(s.id + 1000, f.clock.now()).has_value());
  CHECK_THROWS_WITH(f.client.reschedule_id(s.id, f.clock.now() + 400 * 24h), Catch::Contains("horizon"));
}

TEST_CASE("bad requests are refused with a clear reason and nothing is written") {
  ClientCallsFixture f;
  struct Case {
    const char* label;
    ScheduleRequest request;
    const char* reason;
  };
  const auto base = [] { return order_check("k"); };
  ScheduleRequest unknown = base(); unknown.job = "order_unshiped";
  ScheduleRequest array_payload = base(); array_payload.payload = nlohmann::json::array({1});
  ScheduleRequest negative = base(); negative.in = -5min;
  ScheduleRequest beyond = base(); beyond.in = 366 * 24h;
  ScheduleRequest empty_key = base(); empty_key.job_key = "";
  ScheduleRequest empty_entity = base(); empty_entity.entity_name = "";
  ScheduleRequest both = base(); both.at = f.clock.now();
  ScheduleRequest neither = base(); neither.in.reset();
  const Case cases[] = {
      {"unknown class", unknown, "unknown job class 'order_unshiped' (known: "},
      {"payload not an object", array_payload, "JSON object"},
      {"negative delay", negative, "negative"},
      {"beyond the horizon", beyond, "horizon"},
      {"empty key", empty_key, "job key is empty"},
      {"empty entity", empty_entity, "entity name is empty"},
      {"both at and in", both, "exactly one"},
      {"neither at nor in", neither, "exactly one"},
  };
  for (const Case& c : cases) {
    INFO(c.label);
    CHECK_THROWS_AS(f.client.schedule(c.request), InvalidInput);
    CHECK_THROWS_WITH(f.client.schedule(c.request), Catch::Contains(c.reason));
    CHECK(f.client.problem_with(c.request).has_value());
  }
  CHECK(count_of(*f.db, "SELECT count(*) FROM prescient.future_job") == 0);
}

TEST_CASE("the SQL functions refuse bad input from any caller, with SQLSTATE PR400") {
  ClientCallsFixture f;
  std::string state;
  const char* bad[] = {
      "SELECT * FROM prescient.schedule('', 'o', '1', now())",
      "SELECT * FROM prescient.schedule('noop', 'o', '1', now(), p_job_key => '')",
      "SELECT * FROM prescient.schedule('noop', 'o', '1', now(), p_payload => '[1]')",
      "SELECT * FROM prescient.schedule('noop', 'o', '1', now() + interval '400 days')",
      "SELECT * FROM prescient.schedule('noop', 'o', '1', now(), p_on_conflict => 'merge')",
      "SELECT * FROM prescient.schedule_many('{}')",
      "SELECT prescient.cancel()",
  };
  for (const char* sql : bad) {
    INFO(sql);
    CHECK_THROWS_WITH((*f.db << sql), Catch::Contains("PR400") || Catch::Contains("must") ||
                                          Catch::Contains("empty") || Catch::Contains("horizon") ||
                                          Catch::Contains("exactly one"));
  }
  CHECK(count_of(*f.db, "SELECT count(*) FROM prescient.future_job") == 0);
}

TEST_CASE("schedule_many from SQL names the first bad item or the repeated key, and writes nothing") {
  ClientCallsFixture f;
  const std::string item_ok = R"({"job":"noop","entity_name":"o","entity_key":"1","at":"2026-11-21T12:00:00Z"})";
  const std::string item_empty_key = R"({"job":"noop","entity_name":"o","entity_key":"","at":"2026-11-21T12:00:00Z"})";
  const std::string keyed = R"({"job":"noop","entity_name":"o","entity_key":"1","job_key":"k","at":"2026-11-21T12:00:00Z"})";
  const auto call = [&](const std::string& items) {
    *f.db << "SELECT count(*) FROM prescient.schedule_many(:items, 'sql', 'error', '2026-11-21T10:00:00Z')",
        soci::use(items);
  };
  CHECK_THROWS_WITH(call("[" + item_ok + "," + item_empty_key + "," + item_empty_key + "]"),
                    Catch::Contains("item 2: the entity key is empty"));
  CHECK_THROWS_WITH(call("[" + keyed + "," + item_ok + "," + keyed + "]"),
                    Catch::Contains("items 1 and 3 have the same job key 'k'"));
  CHECK(count_of(*f.db, "SELECT count(*) FROM prescient.future_job") == 0);
  call("[" + item_ok + "," + keyed + "]");
  CHECK(count_of(*f.db, "SELECT count(*) FROM prescient.future_job") == 2);
}

TEST_CASE("schedule_arrays from SQL: optional arrays, per-item defaults, and arrays of the wrong shape refused") {
  ClientCallsFixture f;
  long long created = 0;
  *f.db << "SELECT count(*) FROM prescient.schedule_arrays('{noop,noop}', '{o,o}', '{1,2}',"
           " '{2026-11-21T12:00:00Z,2026-11-21T12:05:00Z}', p_job_key => '{k1,NULL}',"
           " p_payload => ARRAY['{\"n\": 1}', NULL], p_enqueued_by => '{NULL,bob}', p_by => 'sql',"
           " p_now => '2026-11-21T10:00:00Z')",
      soci::into(created);
  CHECK(created == 2);
  const auto pending = Checks(*f.db).pending({});
  REQUIRE(pending.size() == 2);
  CHECK(*pending[0].job_key == "k1");
  CHECK(pending[0].payload == nlohmann::json{{"n", 1}});
  CHECK(pending[0].enqueued_by == "sql");
  CHECK_FALSE(pending[1].job_key.has_value());
  CHECK(pending[1].payload == nlohmann::json::object());
  CHECK(pending[1].enqueued_by == "bob");
  CHECK(format_time(pending[1].next_check_at) == "2026-11-21T12:15:00Z");

  const auto refused = [&](const std::string& call) {
    INFO(call);
    try {
      *f.db << "SELECT count(*) FROM prescient.schedule_arrays(" + call + ")";
    } catch (const soci::postgresql_soci_error& e) {
      CHECK(e.sqlstate() == "PR400");
      return std::string(e.what());
    }
    FAIL("accepted");
    return std::string();
  };
  CHECK_THAT(refused("'{noop,noop}', '{o}', '{3,4}', '{2026-11-21T12:00:00Z,2026-11-21T12:00:00Z}'"),
             Catch::Contains("as long as p_job (2): p_entity_name has 1"));
  CHECK_THAT(refused("'{noop}', '{o}', '{3}', '{2026-11-21T12:00:00Z}', p_group_key => '{a,b}'"),
             Catch::Contains("p_group_key has 2"));
  CHECK_THAT(refused("'{{noop}}', '{{o}}', '{{3}}', '{{2026-11-21T12:00:00Z}}'"),
             Catch::Contains("p_job has 2 dimensions"));
  CHECK_THAT(refused("'{noop,noop}', '{o,o}', '{3,\"\"}', '{2026-11-21T12:00:00Z,2026-11-21T12:00:00Z}'"),
             Catch::Contains("item 2: the entity key is empty"));
  CHECK(count_of(*f.db, "SELECT count(*) FROM prescient.future_job") == 2);
}

TEST_CASE("a check scheduled in the application's transaction exists only if it commits") {
  ClientCallsFixture f;
  {
    soci::transaction tx(*f.db);
    f.client.schedule(order_check("rolled-back"));
    tx.rollback();
  }
  CHECK(Checks(*f.db).pending({.job_key = "rolled-back"}).empty());
  {
    soci::transaction tx(*f.db);
    *f.db << "CREATE TABLE IF NOT EXISTS app_orders (id int)";
    *f.db << "INSERT INTO app_orders VALUES (42)";
    f.client.schedule(order_check("committed"));
    tx.commit();
  }
  CHECK(Checks(*f.db).pending({.job_key = "committed"}).size() == 1);
}

TEST_CASE("schedule_many: one statement, all or nothing, results in request order") {
  ClientCallsFixture f;
  std::vector<ScheduleRequest> batch{order_check("a"), order_check("b", 1h), order_check("c", 2h)};
  const auto results = f.client.schedule_many(batch);
  REQUIRE(results.size() == 3);
  CHECK(*results[0].job_key == "a");
  CHECK(format_time(*results[1].next_check_at) == "2026-11-21T11:15:00Z");
  CHECK(*results[2].job_key == "c");

  std::vector<ScheduleRequest> bad{order_check("d"), order_check("e"), order_check("f")};
  bad[1].job = "nope";
  CHECK_THROWS_WITH(f.client.schedule_many(bad), Catch::Contains("item 2") && Catch::Contains("nope"));
  std::vector<ScheduleRequest> twice{order_check("g"), order_check("g")};
  CHECK_THROWS_WITH(f.client.schedule_many(twice), Catch::Contains("same job key 'g'"));
  std::vector<ScheduleRequest> taken{order_check("h"), order_check("a")};
  CHECK_THROWS_WITH(f.client.schedule_many(taken), Catch::Contains("'a' already exists"));
  CHECK(count_of(*f.db, "SELECT count(*) FROM prescient.future_job") == 3);

  const auto reported = f.client.schedule_many(taken, true);
  CHECK(reported[0].status == Scheduled::Status::created);
  CHECK(reported[1].status == Scheduled::Status::conflict);
  CHECK(reported[1].id == results[0].id);
  CHECK_FALSE(reported[1].next_check_at.has_value());
  std::vector<ScheduleRequest> mixed{order_check("a"), order_check("b"), order_check("i")};
  mixed[0].on_conflict = OnConflict::keep;
  mixed[1].on_conflict = OnConflict::replace;
  const auto mixed_results = f.client.schedule_many(mixed);
  CHECK(mixed_results[0].status == Scheduled::Status::kept);
  CHECK(mixed_results[1].status == Scheduled::Status::replaced);
  CHECK(mixed_results[2].status == Scheduled::Status::created);
  CHECK(count_of(*f.db, "SELECT count(*) FROM prescient.future_job") == 5);
}

TEST_CASE("schedule_many without keys (a plain insert): each result is its item's row, bad items refused alike") {
  ClientCallsFixture f;
  std::vector<ScheduleRequest> batch;
  for (int i = 0; i < 50; ++i) {
    batch.push_back({.job = "noop", .entity_name = "o", .entity_key = "k" + std::to_string(i),
                     .at = f.clock.now() + std::chrono::minutes{i * 20}, .payload = {{"i", i}}});
  }
  const auto results = f.client.schedule_many(batch);
  REQUIRE(results.size() == batch.size());
  for (std::size_t i = 0; i < batch.size(); ++i) {
    INFO(i);
    CHECK(results[i].status == Scheduled::Status::created);
    CHECK_FALSE(results[i].job_key.has_value());
    std::string entity_key, payload;
    const long long id = results[i].id;
    const std::string at = format_time(*results[i].next_check_at);
    *f.db << "SELECT entity_key, payload::text FROM prescient.future_job WHERE id = :id"
             " AND next_check_at = CAST(:at AS timestamptz)",
        soci::use(id), soci::use(at), soci::into(entity_key), soci::into(payload);
    CHECK(entity_key == batch[i].entity_key);
    CHECK(nlohmann::json::parse(payload) == batch[i].payload);
  }
  batch[7].entity_key = "";
  CHECK_THROWS_WITH(f.client.schedule_many(batch), Catch::Contains("item 8") && Catch::Contains("entity key"));
  CHECK(count_of(*f.db, "SELECT count(*) FROM prescient.future_job") == 50);
}

TEST_CASE("bulk enqueue judges an item inline: the planner calls no rule per item but in a rare branch") {
  // A SQL function the planner does not inline is called once per item: priority_problem, declared IMMUTABLE
  // over format() (STABLE), cost bulk enqueue 1.1 us of an item's 13. The prescient functions still called
  // in the plan are each in a branch that only a rare item reaches: a message being written (duration_text),
  // or a field that nearly no item carries (a trace context, a debounce, digest or dedupe, a calendar).
  ClientCallsFixture f;
  const std::string plan = prescient::testing::plan_of(
      *f.db,
      "SELECT * FROM prescient.array_requests('{noop}', '{o}', '{k}', '{2030-01-01T00:00:00Z}', '{NULL}', '{NULL}',"
      " '{\"{}\"}', '{b}', '{error}', 'b', 'error', NULL, NULL, NULL, '{done}', '2029-12-31T23:00:00Z', 60, 31536000,"
      " NULL, NULL, NULL, NULL, 2097152, NULL, NULL)");
  std::set<std::string> called;
  soci::rowset<std::string> names =
      (f.db->prepare << "SELECT DISTINCT m[1] FROM regexp_matches(:plan, '([a-z_]+)\\(', 'g') AS m"
                        " WHERE m[1] IN (SELECT proname FROM pg_proc WHERE pronamespace = 'prescient'::regnamespace)",
       soci::use(plan));
  for (const std::string& name : names) called.insert(name);
  INFO(plan);
  CHECK(called.count("request_problem") == 0);  // the rules themselves are inlined...
  CHECK(called.count("priority_problem") == 0);
  CHECK(called.count("window_problem") == 0);
  CHECK(called.count("payload_problem") == 0);
  for (const std::string& name : called) {  // ...and what is left is rare
    INFO(name);
    CHECK((name == "duration_text" || name == "trace_problem" || name == "once_problem" ||
           name == "collect_bound_problem" || name == "business_problem"));
  }
}

TEST_CASE("two sessions scheduling the same key at the same moment leave exactly one row") {
  ClientCallsFixture f;
  auto a = connect_to(f.url), b = connect_to(f.url);
  Client ca(*a, {.clock = &f.clock}), cb(*b, {.clock = &f.clock});
  for (int round = 0; round < 25; ++round) {
    const std::string key = "race-" + std::to_string(round);
    std::atomic<int> ready{0};
    std::atomic<int> created{0}, conflicts{0}, other_errors{0};
    const auto contender = [&](Client& client) {
      ++ready;
      while (ready.load() < 2) {
      }
      try {
        client.schedule(order_check(key));
        ++created;
      } catch (const InvalidInput& e) {
        (std::string(e.what()).find("already exists") != std::string::npos ? conflicts : other_errors)++;
      } catch (...) {
        ++other_errors;
      }
    };
    std::thread ta(contender, std::ref(ca)), tb(contender, std::ref(cb));
    ta.join();
    tb.join();
    INFO(key);
    CHECK(created == 1);
    CHECK(conflicts == 1);
    CHECK(other_errors == 0);
    CHECK(count_of(*f.db, "SELECT count(*) FROM prescient.future_job WHERE job_key = '" + key + "'") == 1);
  }
}

TEST_CASE("keys, entities and payloads with quotes, unicode and SQL metacharacters round-trip unchanged") {
  ClientCallsFixture f;
  const std::string hostile[] = {
      "it's", "\"quoted\"", "'; DROP TABLE prescient.future_job; --", "back\\slash", "$1 $$ $body$", "üñí©ødé ✓ 日本",
      "tab\there", "new\nline", "semi;colon", "%s %L %I", "{\"json\": [1]}", std::string(1000, 'x'),
  };
  int n = 0;
  for (const std::string& text : hostile) {
    INFO(text);
    ScheduleRequest r{.job = "noop", .entity_name = text, .entity_key = text, .job_key = text + std::to_string(n++),
                      .group_key = text, .in = 1h, .payload = {{"text", text}, {text, nlohmann::json::array({text})}},
                      .by = text};
    const Scheduled s = f.client.schedule(r);
    const auto rows = Checks(*f.db).pending({.job_key = *r.job_key});
    REQUIRE(rows.size() == 1);
    CHECK(rows[0].id == s.id);
    CHECK(rows[0].entity_name == text);
    CHECK(rows[0].entity_key == text);
    CHECK(rows[0].group_key == text);
    CHECK(rows[0].enqueued_by == text);
    CHECK(rows[0].payload == r.payload);
    CHECK(f.client.cancel_job_key(*r.job_key, text) == s.id);
    const auto trace = Checks(*f.db).history({.job_key = *r.job_key});
    REQUIRE(trace.size() == 1);
    CHECK(trace[0].finished_by == text);
    CHECK(trace[0].payload == r.payload);
  }
  CHECK(count_of(*f.db, "SELECT count(*) FROM prescient.job_history") == static_cast<long long>(std::size(hostile)));
}

TEST_CASE("NUL bytes, invalid UTF-8 and over-long names are refused by name; a 1 MB payload round-trips") {
  ClientCallsFixture f;
  const std::string nul("with\0nul", 8);
  const std::string bad_utf8 = "caf\xC3";      // a truncated two-byte sequence
  const std::string overlong = "\xC0\xAF";     // '/' spelled in two bytes
  const std::string surrogate = "\xED\xA0\x80";  // U+D800
  const std::string long_key(kMaxNameBytes + 1, 'k');
  struct Case {
    ScheduleRequest request;
    const char* reason;
  };
  const auto with = [&](auto change) {
    ScheduleRequest r = order_check("base");
    change(r);
    return r;
  };
  const Case cases[] = {
      {with([&](auto& r) { r.entity_key = nul; }), "the entity key contains a NUL byte"},
      {with([&](auto& r) { r.job_key = nul; }), "the job key contains a NUL byte"},
      {with([&](auto& r) { r.entity_name = bad_utf8; }), "the entity name is not valid UTF-8"},
      {with([&](auto& r) { r.group_key = overlong; }), "the group key is not valid UTF-8"},
      {with([&](auto& r) { r.by = surrogate; }), "enqueued_by is not valid UTF-8"},
      {with([&](auto& r) { r.job_key = long_key; }), "the job key is 1025 bytes long (at most 1024)"},
      {with([&](auto& r) { r.payload = {{"note", nul}}; }), "a string of the payload contains a NUL byte"},
      {with([&](auto& r) { r.payload = {{bad_utf8, 1}}; }), "a key of the payload is not valid UTF-8"},
      {with([&](auto& r) { r.payload = {{"list", {1, bad_utf8}}}; }), "a string of the payload is not valid UTF-8"},
  };
  for (const Case& c : cases) {
    INFO(c.reason);
    CHECK_THROWS_WITH(f.client.schedule(c.request), c.reason);
  }
  CHECK_THROWS_WITH(f.client.schedule_many(std::vector<ScheduleRequest>{order_check("a"), cases[0].request}),
                    "item 2: the entity key contains a NUL byte");
  CHECK(count_of(*f.db, "SELECT count(*) FROM prescient.future_job") == 0);
  // From SQL too, where NUL and bad UTF-8 cannot arrive, the length limit names the field.
  CHECK_THROWS_WITH((*f.db << "SELECT * FROM prescient.schedule('noop', 'o', '1', now(), p_job_key => repeat('k', 2000))"),
                    Catch::Contains("the job key is 2000 bytes long (at most 1024)"));

  const std::string megabyte(1 << 20, 'm');
  const ScheduleRequest big = with([&](auto& r) {
    r.job_key = "big";
    r.payload = {{"blob", megabyte}, {"unicode", "\u65e5\u672c \xF0\x9F\x98\x80"}};
    r.entity_key = std::string(kMaxNameBytes, 'e');
  });
  f.client.schedule(big);
  const auto stored = Checks(*f.db).pending({.job_key = "big"});
  REQUIRE(stored.size() == 1);
  CHECK(stored[0].payload == big.payload);
  CHECK(stored[0].entity_key == big.entity_key);
}

// A payload's bound (prescient.settings.max_payload_bytes, 2 MiB unless set) is one rule in SQL
// (payload_problem), judged at every door that stores one, in SQL's words, and nothing is written.
TEST_CASE("a payload over max_payload_bytes is refused at every door, nothing written") {
  ClientCallsFixture f;
  long long default_bound = 0;
  *f.db << "SELECT max_payload_bytes FROM prescient.settings", soci::into(default_bound);
  CHECK(default_bound == 2097152);
  *f.db << "UPDATE prescient.settings SET max_payload_bytes = 1024";
  // {"blob": "x…"}: 12 bytes of JSON around the text.
  const nlohmann::json too_big = {{"blob", std::string(1101, 'x')}};
  const nlohmann::json just_fits = {{"blob", std::string(1012, 'x')}};
  REQUIRE(too_big.dump().size() == 1112);  // as nlohmann writes it; PostgreSQL adds a space after ':'
  const std::string message = "the payload is 1113 bytes of JSON (at most 1024: prescient.settings.max_payload_bytes)";

  ScheduleRequest request = {.job = "noop", .entity_name = "orders", .entity_key = "1", .in = 1h,
                             .payload = too_big};
  CHECK_THROWS_MATCHES(f.client.schedule(request), InvalidInput, Catch::Message(message));
  CHECK_THROWS_MATCHES(f.client.schedule_many(std::span(&request, 1)), InvalidInput,
                       Catch::Message("item 1: " + message));
  const std::string text = too_big.dump();
  const auto [state, refusal] = sql_refusal(
      *f.db, "SELECT * FROM prescient.schedule('noop', 'orders', '1', now() + interval '1 hour', p_payload => '" +
                 text + "')");
  CHECK(state == "PR400");
  CHECK(refusal == message);
  const auto cli = prescient::testing::run_prescient(prescient::testing::with_db(
      {"schedule", "--job", "noop", "--entity-name", "orders", "--entity-key", "1", "--in", "1h", "--payload", text},
      f.url));
  CHECK(cli.exit_code == 2);
  CHECK(cli.err == "prescient: " + message + "\n");
  Schedules schedules(*f.db, f.clock);
  CHECK_THROWS_WITH(schedules.add({.id = "big", .spec = "@daily", .payload = too_big}), Catch::Contains(message));
  schedules.add({.id = "small", .spec = "@daily", .payload = just_fits});
  CHECK_THROWS_WITH(
      (*f.db << "SELECT prescient.cron_update('small', '{\"payload\": " + text + "}'::jsonb)"),
      Catch::Contains(message));
  CHECK(count_of(*f.db, "SELECT count(*) FROM prescient.future_job WHERE job <> 'cron'") == 0);
  CHECK(count_of(*f.db, "SELECT count(*) FROM prescient.cron_schedule") == 1);

  // At the bound exactly, it is stored.
  request.payload = just_fits;
  CHECK(f.client.schedule(request).id > 0);
  CHECK(count_of(*f.db, "SELECT octet_length(payload::text) FROM prescient.future_job WHERE job = 'noop'") == 1024);
}

TEST_CASE("rows written by other tools that break the rules are refused by the schema") {
  ClientCallsFixture f;
  const std::string columns =
      "INSERT INTO prescient.future_job (job, entity_name, entity_key, payload, first_check_at, next_check_at,"
      " check_count, attempts, enqueued_on, enqueued_by) VALUES ";
  const char* bad_rows[] = {
      "('noop', 'o', '1', '[1]', now(), now(), 0, 0, now(), 'tool')",       // payload not an object
      "('noop', 'o', '1', '{}', now(), now(), -1, 0, now(), 'tool')",       // negative count
      "('noop', 'o', '1', '{}', now(), now(), 0, -3, now(), 'tool')",       // negative attempts
      "(NULL, 'o', '1', '{}', now(), now(), 0, 0, now(), 'tool')",          // no class
      "('noop', 'o', '1', '{}', now(), NULL, 0, 0, now(), 'tool')",         // no time
      "('', 'o', '1', '{}', now(), now(), 0, 0, now(), 'tool')",            // empty class
      "('noop', 'o', '', '{}', now(), now(), 0, 0, now(), 'tool')",         // empty key
  };
  for (const char* row : bad_rows) {
    INFO(row);
    CHECK_THROWS((*f.db << columns + row));
  }
  CHECK(count_of(*f.db, "SELECT count(*) FROM prescient.future_job") == 0);
}

TEST_CASE("the horizon comes from the database's settings") {
  ClientCallsFixture f;
  *f.db << "UPDATE prescient.settings SET max_horizon_seconds = 7200";
  Client fresh(*f.db, {.clock = &f.clock});
  CHECK_NOTHROW(fresh.schedule(order_check("near", 2h)));
  CHECK_THROWS_WITH(fresh.schedule(order_check("far", 2h + 1s)), Catch::Contains("at most 2h after now"));
}

TEST_CASE("the README example compiles and does what it says") {
  ClientCallsFixture f;
  soci::session& session = *f.db;
  {
    prescient::Client client(session);
    // As in README.md, with the built-in class standing in for the example plugin's.
    client.schedule({.job = "noop", .entity_name = "orders", .entity_key = "42",
                     .job_key = "order_unshipped:42", .in = std::chrono::hours{3}, .payload = {{"hours", 3}}});
    const auto pending = Checks(session).pending({.job_key = "order_unshipped:42"});
    REQUIRE(pending.size() == 1);
    CHECK(pending[0].payload == nlohmann::json{{"hours", 3}});
    CHECK(client.cancel_job_key("order_unshipped:42").has_value());
  }
  CHECK(Checks(session).history({.job_key = "order_unshipped:42"})[0].outcome == Outcome::cancelled);
}

namespace {

// A command line's flag set to a value: the value of the flag already there replaced, or the flag added.
void set_flag(std::vector<std::string>& args, const std::string& flag, const std::string& value) {
  const auto at = std::find(args.begin(), args.end(), flag);
  if (at != args.end()) {
    *(at + 1) = value;
  } else {
    args.push_back(flag);
    args.push_back(value);
  }
}

}  // namespace

// The three doors to the enqueue rules (docs/design.md, "Every rule has one home"): the same bad request
// through the CLI, the C++ Client and SQL gets the same message, written once by the SQL function that holds
// the rule. The CLI exits 2 with that message on one line; the Client throws InvalidInput with it; SQL raises
// it with SQLSTATE PR400. (Rows whose message holds the current time are left out: the CLI reads the wall
// clock.)
TEST_CASE("three doors: a bad request gets the same message from the CLI, the C++ API and SQL") {
  // A 15-minute slot and the default horizon (365 days).
  const std::string url = create_migrated_database(900);
  auto db = connect_to(url);
  Client client(*db, {.enqueued_by = "tester"});
  struct Door {
    const char* rule;
    std::vector<std::string> flags;       // after schedule --job noop --entity-name orders --entity-key 42 --in 1h
    std::function<void(ScheduleRequest&)> change;  // to a request of the same
    // After prescient.schedule('noop', 'orders', '42', now() + interval '1 hour', or the whole "(...)".
    std::string sql_arguments;
    std::string message;
  };
  const std::string long_key(1025, 'k');
  // The registry's refusal lists the classes this database knows: the SQL writes it, every door shows it.
  std::string unknown;
  *db << "SELECT prescient.unknown_class_message('htpp')", soci::into(unknown);
  REQUIRE_THAT(unknown, Catch::StartsWith("unknown job class 'htpp' (known: command, "));
  const Door doors[] = {
      {"job class", {"--job", "htpp"}, [](ScheduleRequest& r) { r.job = "htpp"; },
       "('htpp', 'orders', '42', now() + interval '1 hour')", unknown},
      {"entity", {"--entity-name", ""}, [](ScheduleRequest& r) { r.entity_name = ""; },
       "('noop', '', '42', now() + interval '1 hour')", "the entity name is empty"},
      {"job key", {"--job-key", ""}, [](ScheduleRequest& r) { r.job_key = ""; }, ", p_job_key => ''",
       "the job key is empty (leave it out for a check without a key)"},
      {"key length", {"--job-key", long_key}, [&](ScheduleRequest& r) { r.job_key = long_key; },
       ", p_job_key => repeat('k', 1025)", "the job key is 1025 bytes long (at most 1024)"},
      {"enqueued_by", {"--by", ""}, [](ScheduleRequest& r) { r.by = ""; }, ", p_by => ''", "enqueued_by is empty"},
      {"payload", {"--payload", "[1,2]"}, [](ScheduleRequest& r) { r.payload = nlohmann::json::array({1, 2}); },
       ", p_payload => '[1,2]'", "the payload must be a JSON object, not [1, 2]"},
      {"window", {"--window", "-5m"}, [](ScheduleRequest& r) { r.window = -5min; },
       ", p_window => '-5 minutes'", "the window -5m is negative"},
      {"debounce key", {"--on-conflict", "debounce", "--max-wait", "1h"},
       [](ScheduleRequest& r) { r.on_conflict = OnConflict::debounce; r.max_wait = 1h; },
       ", p_on_conflict => 'debounce', p_max_wait => '1 hour'",
       "debounce needs a job key: the enqueues it folds into one check share it"},
      {"debounce ceiling", {"--job-key", "k", "--on-conflict", "debounce"},
       [](ScheduleRequest& r) { r.job_key = "k"; r.on_conflict = OnConflict::debounce; },
       ", p_job_key => 'k', p_on_conflict => 'debounce'",
       "debounce needs max_wait, its ceiling (without one, use on_conflict replace)"},
      {"max_wait without debounce", {"--job-key", "k", "--on-conflict", "replace", "--max-wait", "1h"},
       [](ScheduleRequest& r) { r.job_key = "k"; r.on_conflict = OnConflict::replace; r.max_wait = 1h; },
       ", p_job_key => 'k', p_on_conflict => 'replace', p_max_wait => '1 hour'",
       "max_wait applies to on_conflict debounce or collect, not 'replace'"},
      {"collect key", {"--on-conflict", "collect", "--max-wait", "30m"},
       [](ScheduleRequest& r) { r.on_conflict = OnConflict::collect; r.max_wait = 30min; },
       ", p_on_conflict => 'collect', p_max_wait => '30 minutes'",
       "collect needs a job key: the enqueues it gathers into one check share it"},
      {"collect ceiling", {"--job-key", "k", "--on-conflict", "collect"},
       [](ScheduleRequest& r) { r.job_key = "k"; r.on_conflict = OnConflict::collect; },
       ", p_job_key => 'k', p_on_conflict => 'collect'",
       "collect needs max_wait, its ceiling: the longest a payload waits for its digest"},
      {"max_wait under the slot", {"--job-key", "k", "--on-conflict", "debounce", "--max-wait", "10m"},
       [](ScheduleRequest& r) { r.job_key = "k"; r.on_conflict = OnConflict::debounce; r.max_wait = 10min; },
       ", p_job_key => 'k', p_on_conflict => 'debounce', p_max_wait => '10 minutes'",
       "max_wait 10m is under the slot (15m)"},
      {"max_wait beyond the horizon", {"--job-key", "k", "--on-conflict", "debounce", "--max-wait", "400d"},
       [](ScheduleRequest& r) { r.job_key = "k"; r.on_conflict = OnConflict::debounce; r.max_wait = 400 * 24h; },
       ", p_job_key => 'k', p_on_conflict => 'debounce', p_max_wait => '400 days'",
       "max_wait 400d is beyond the horizon (365d)"},
      {"dedupe key", {"--dedupe-for", "1h"}, [](ScheduleRequest& r) { r.dedupe_for = 1h; },
       ", p_dedupe_for => '1 hour'", "dedupe_for needs a job key: it is what a settled check is found by"},
      {"dedupe negative", {"--job-key", "k", "--dedupe-for", "-1h"},
       [](ScheduleRequest& r) { r.job_key = "k"; r.dedupe_for = -1h; },
       ", p_job_key => 'k', p_dedupe_for => '-1 hour'", "the dedupe window -1h is not positive"},
      {"dedupe too long", {"--job-key", "k", "--dedupe-for", "400d"},
       [](ScheduleRequest& r) { r.job_key = "k"; r.dedupe_for = 400 * 24h; },
       ", p_job_key => 'k', p_dedupe_for => '400 days'", "the dedupe window 400d is over 366 days"},
  };
  for (const Door& door : doors) {
    INFO(door.rule);
    std::vector<std::string> args{"schedule", "--job", "noop", "--entity-name", "orders", "--entity-key", "42",
                                  "--in", "1h"};
    for (std::size_t i = 0; i + 1 < door.flags.size(); i += 2) set_flag(args, door.flags[i], door.flags[i + 1]);
    const auto cli = prescient::testing::run_prescient(prescient::testing::with_db(args, url));
    CHECK(cli.exit_code == 2);
    CHECK(cli.err == "prescient: " + door.message + "\n");

    ScheduleRequest request{.job = "noop", .entity_name = "orders", .entity_key = "42", .in = 1h};
    door.change(request);
    CHECK_THROWS_MATCHES(client.schedule(request), InvalidInput, Catch::Message(door.message));
    CHECK(client.problem_with(request) == door.message);
    CHECK_THROWS_MATCHES(client.schedule_many(std::span(&request, 1)), InvalidInput,
                         Catch::Message("item 1: " + door.message));

    const auto [state, message] = sql_refusal(
        *db, door.sql_arguments.starts_with("(")
                 ? "SELECT * FROM prescient.schedule" + door.sql_arguments
                 : "SELECT * FROM prescient.schedule('noop', 'orders', '42', now() + interval '1 hour'" +
                       door.sql_arguments + ")");
    CHECK(state == "PR400");
    CHECK(message == door.message);
  }
  CHECK(count_of(*db, "SELECT count(*) FROM prescient.future_job") == 0);
}

// The same for a schedule (docs/design.md, "Every rule has one home"): its fields, window, jitter, overlap policy
// and bounds are judged by SQL alone (cron_array_problems, cron_policy_problem), and `prescient cron add`, its
// bulk file, Schedules and prescient.cron_add / cron_add_arrays / cron_problems all give SQL's words. (An
// end_at before now is left out: its message holds the current time, and the CLI reads the wall clock.)
TEST_CASE("three doors: a bad schedule gets the same message from cron add, Schedules and SQL") {
  const std::string url = create_migrated_database();
  auto db = connect_to(url);
  const SystemClock clock;
  Schedules schedules(*db, clock);
  schedules.add({.id = "taken", .spec = "@daily"});
  std::string unknown_class;
  *db << "SELECT prescient.unknown_class_message('htpp')", soci::into(unknown_class);
  struct Door {
    const char* rule;
    // After cron add --id z --spec '0 * * * *'; also the fields of a line of cron add --file.
    std::vector<std::string> flags;
    std::function<void(ScheduleDefinition&)> change;  // to {.id = "z", .spec = "0 * * * *"}
    std::string sql_arguments;                        // after prescient.cron_add('z', '0 * * * *'
    std::string message;
    std::string sqlstate = "PR400";
  };
  const Door doors[] = {
      {"overlap policy", {"--job", "noop", "--overlap", "queue"},
       [](ScheduleDefinition& d) { d.job = "noop"; d.overlap = "queue"; },
       ", p_job => 'noop', p_options => '{\"overlap\": \"queue\"}'",
       "overlap: 'queue' is not a policy (use allow, skip, buffer_one or cancel_previous)"},
      {"overlap of emit", {"--overlap", "skip"}, [](ScheduleDefinition& d) { d.overlap = "skip"; },
       ", p_options => '{\"overlap\": \"skip\"}'",
       "overlap: skip is for schedules of a job class; emit publishes events, which do not overlap"},
      {"max_runs", {"--max-runs", "0"}, [](ScheduleDefinition& d) { d.max_runs = 0; },
       ", p_options => '{\"max_runs\": 0}'", "max_runs: 0 is not a count of runs (1 to 2147483647)"},
      {"bounds", {"--start-at", "2030-01-02T00:00:00Z", "--end-at", "2030-01-01T00:00:00Z"},
       [](ScheduleDefinition& d) {
         d.start_at = parse_time("2030-01-02T00:00:00Z");
         d.end_at = parse_time("2030-01-01T00:00:00Z");
       },
       ", p_options => '{\"start_at\": \"2030-01-02T00:00:00Z\", \"end_at\": \"2030-01-01T00:00:00Z\"}'",
       "end_at: 2030-01-01T00:00:00Z is not after start_at 2030-01-02T00:00:00Z"},
      {"window", {"--window", "-5m"}, [](ScheduleDefinition& d) { d.window = -5min; }, ", p_window_seconds => -300",
       "window_seconds: -300 is not a window (at least 1)"},
      {"window beyond the horizon", {"--window", "400d"}, [](ScheduleDefinition& d) { d.window = 400 * 24h; },
       ", p_window_seconds => 34560000", "window_seconds: 34560000 is over the horizon (31536000)"},
      {"jitter", {"--jitter", "0s"}, [](ScheduleDefinition& d) { d.jitter = 0s; }, ", p_jitter_seconds => 0",
       "jitter_seconds: 0 is not a jitter (at least 1)"},
      {"window and jitter", {"--window", "10m", "--jitter", "5m"},
       [](ScheduleDefinition& d) { d.window = 10min; d.jitter = 5min; },
       ", p_window_seconds => 600, p_jitter_seconds => 300",
       "jitter_seconds: a schedule has a window or a jitter, not both"},
      {"payload", {"--payload", "[1,2]"}, [](ScheduleDefinition& d) { d.payload = nlohmann::json::array({1, 2}); },
       ", p_payload => '[1,2]'", "payload: must be a JSON object"},
      {"catch-up", {"--catch-up", "some"}, [](ScheduleDefinition& d) { d.catch_up = "some"; },
       ", p_catch_up => 'some'", "catch_up: 'some' is not a policy (use one, all or none)"},
      {"deadline", {"--deadline", "0s"}, [](ScheduleDefinition& d) { d.deadline = 0s; },
       ", p_deadline_seconds => 0", "deadline_seconds: must be at least 1"},
      {"the cron class", {"--job", "cron"}, [](ScheduleDefinition& d) { d.job = "cron"; }, ", p_job => 'cron'",
       "job: a schedule cannot run the cron class itself"},
      {"an unknown class", {"--job", "htpp"}, [](ScheduleDefinition& d) { d.job = "htpp"; }, ", p_job => 'htpp'",
       "job: " + unknown_class},
      {"id in use", {"--id", "taken"}, [](ScheduleDefinition& d) { d.id = "taken"; },
       "('taken', '0 * * * *')", "id: schedule 'taken' exists already (update it instead)", "PR409"},
  };
  for (const Door& door : doors) {
    INFO(door.rule);
    std::vector<std::string> args{"cron", "add", "--id", "z", "--spec", "0 * * * *"};
    nlohmann::json line{{"id", "z"}, {"spec", "0 * * * *"}};
    for (std::size_t i = 0; i + 1 < door.flags.size(); i += 2) {
      set_flag(args, door.flags[i], door.flags[i + 1]);
      std::string field = door.flags[i].substr(2);
      std::replace(field.begin(), field.end(), '-', '_');
      const std::string& value = door.flags[i + 1];
      line[field] = field == "max_runs" ? nlohmann::json(std::stoi(value))
                    : field == "payload" ? nlohmann::json::parse(value)
                                         : nlohmann::json(value);
    }
    const auto cli = prescient::testing::run_prescient(prescient::testing::with_db(args, url));
    CHECK(cli.exit_code == 2);
    CHECK(cli.err == "prescient: " + door.message + "\n");
    const auto file = prescient::testing::run_prescient(
        prescient::testing::with_db({"cron", "add", "--file", "-"}, url), {}, line.dump() + "\n");
    CHECK(file.exit_code == 2);
    CHECK(prescient::testing::lines_of(file.err).front() == "prescient: line 1: " + door.message);

    ScheduleDefinition definition{.id = "z", .spec = "0 * * * *"};
    door.change(definition);
    CHECK_THROWS_MATCHES(schedules.add(definition), InvalidInput, Catch::Message(door.message));
    CHECK(schedules.problem_with(definition) == door.message);
    CHECK_THROWS_MATCHES(schedules.add_many(std::span(&definition, 1)), InvalidInput,
                         Catch::Message("item 1: " + door.message));

    const auto [state, message] =
        sql_refusal(*db, door.sql_arguments.starts_with("(")
                             ? "SELECT prescient.cron_add" + door.sql_arguments
                             : "SELECT prescient.cron_add('z', '0 * * * *'" + door.sql_arguments + ")");
    CHECK(state == door.sqlstate);
    CHECK(message == door.message);
  }
  CHECK(count_of(*db, "SELECT count(*) FROM prescient.cron_schedule") == 1);
}

// The class registry (docs/design.md, "The class registry"): a class that is not a row of prescient.job_class
// is refused at every enqueue door of SQL, with PR400 and the known classes, sorted, at most 20 of them;
// p_allow_unknown_class lets a caller that knows better through.
TEST_CASE("SQL refuses an unknown job class with PR400 and the known ones, unless p_allow_unknown_class") {
  ClientCallsFixture f;
  *f.db << "DELETE FROM prescient.job_class WHERE origin = 'tests'";  // as a database without the tests' classes
  const std::string message = "unknown job class 'htpp' (known: command, cron, emit, http, noop, sql; declare it "
                              "with prescient jobs add or allow an unknown class)";
  const std::string soon = "now() + interval '1 hour'";
  const std::pair<std::string, std::string> refused[] = {
      {"SELECT * FROM prescient.schedule('htpp', 'o', '1', " + soon + ")", message},
      {"SELECT * FROM prescient.schedule_arrays('{noop,htpp}', '{o,o}', '{1,2}', ARRAY[" + soon + ", " + soon + "])",
       "item 2: " + message},
      {R"(SELECT * FROM prescient.schedule_many('[{"job": "htpp", "entity_name": "o", "entity_key": "1",)"
       R"( "at": "2026-11-21T12:00:00Z"}]', p_now => '2026-11-21T10:00:00Z'))",
       "item 1: " + message},
      {"SELECT prescient.cron_add('c', '@daily', p_job => 'htpp')", "job: " + message},
  };
  for (const auto& [sql, expected] : refused) {
    INFO(sql);
    const auto [state, got] = sql_refusal(*f.db, sql);
    CHECK(state == "PR400");
    CHECK(got == expected);
  }
  std::string problem;
  *f.db << "SELECT problem FROM prescient.schedule_problems('{noop,htpp}', '{o,o}', '{1,2}', ARRAY[" + soon + ", " +
               soon + "])",
      soci::into(problem);
  CHECK(problem == message);
  CHECK(count_of(*f.db, "SELECT count(*) FROM prescient.future_job") == 0);

  // The caller knows better: a class deployed after its checks are written.
  CHECK(count_of(*f.db, "SELECT count(*) FROM prescient.schedule('htpp', 'o', '1', " + soon +
                            ", p_allow_unknown_class => true)") == 1);
  CHECK(count_of(*f.db, "SELECT count(*) FROM prescient.schedule_arrays('{htpp,htpp}', '{o,o}', '{2,3}', ARRAY[" +
                            soon + ", " + soon + "], p_allow_unknown_class => true)") == 2);
  CHECK(count_of(*f.db, "SELECT count(*) FROM prescient.schedule_problems('{htpp}', '{o}', '{4}', ARRAY[" + soon +
                            "], p_allow_unknown_class => true)") == 0);
  CHECK(count_of(*f.db, "SELECT count(*) FROM prescient.future_job WHERE job = 'htpp'") == 3);

  // Declared, it is known; the list is bounded.
  *f.db << "SELECT prescient.job_class_add('htpp')";
  CHECK(count_of(*f.db, "SELECT count(*) FROM prescient.schedule('htpp', 'o', '9', " + soon + ")") == 1);
  *f.db << "SELECT prescient.declare_job_classes(array_agg('c' || lpad(g::text, 2, '0')), array_agg('x.so'::text), 'r')"
           " FROM generate_series(1, 20) g";
  const auto [state, many] = sql_refusal(*f.db, "SELECT * FROM prescient.schedule('nope', 'o', '1', " + soon + ")");
  CHECK(state == "PR400");
  CHECK(many == "unknown job class 'nope' (known: c01, c02, c03, c04, c05, c06, c07, c08, c09, c10, c11, c12, c13, "
                "c14, c15, c16, c17, c18, c19, c20 and 7 more; declare it with prescient jobs add or allow an unknown "
                "class)");
}

TEST_CASE("the Client refuses an unknown class in SQL's words; allow_unknown_class lets it through") {
  ClientCallsFixture f;
  ScheduleRequest request = order_check("k");
  request.job = "htpp";
  std::string message;
  *f.db << "SELECT prescient.unknown_class_message('htpp')", soci::into(message);
  CHECK_THROWS_MATCHES(f.client.schedule(request), InvalidInput, Catch::Message(message));
  CHECK(f.client.problem_with(request) == message);
  CHECK_THROWS_MATCHES(f.client.schedule_many(std::span(&request, 1)), InvalidInput,
                       Catch::Message("item 1: " + message));
  Client knows_better(*f.db, {.clock = &f.clock, .enqueued_by = "tester", .allow_unknown_class = true});
  CHECK_FALSE(knows_better.problem_with(request).has_value());
  CHECK(knows_better.schedule(request).status == Scheduled::Status::created);
  request.job_key = "k2";
  CHECK(knows_better.schedule_many(std::span(&request, 1)).front().status == Scheduled::Status::created);
}

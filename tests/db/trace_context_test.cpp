// Trace context (docs/design.md, "Trace context"): a check carries the W3C trace it was created in through
// reschedules, retries, its history row and a revived dead letter; each run (each attempt) is a span of its
// own in that trace, which the run's class sees, its events keep and a worker's take gives; a schedule's
// occurrences each start a trace of their own. The http class's header is tested in http_job_test.cpp,
// the JSON log line in tests/cli/runner_cli_test.cpp.
#include <catch2/catch.hpp>
#include <soci/soci.h>

#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <mutex>
#include <set>

#include "prescient/checks.hpp"
#include "prescient/client.hpp"
#include "prescient/errors.hpp"
#include "prescient/job_classes.hpp"
#include "prescient/schedules.hpp"
#include "prescient/slot_runner.hpp"
#include "prescient/time_text.hpp"
#include "client_fixture.hpp"
#include "process.hpp"
#include "test_database.hpp"

using namespace prescient;
using namespace std::chrono_literals;
using prescient::testing::count_of;

namespace {

const std::string kTrace = "4bf92f3577b34da6a3ce929d0e0e4736";
const std::string kParent = "00f067aa0ba902b7";
const std::string kTraceparent = "00-" + kTrace + "-" + kParent + "-01";
const std::string kTracestate = "congo=t61rcWkgMzE,rojo=00f067aa0ba902b7";

// What each run saw of its trace context.
struct Seen {
  std::optional<std::string> traceparent, tracestate;
};

// Records each run's trace context; answers payload.next_once as its next time on its first run, fails
// while `failures` is above 0 (counting it down), and publishes one event.
class Traced final : public JobExec {
 public:
  Traced(std::vector<Seen>& seen, std::mutex& mutex, int& failures) : seen_(seen), mutex_(mutex), failures_(failures) {}
  JobPolicy policy() const override { return {.max_attempts = 2}; }
  JobResult run(const Check& check, JobContext&) override {
    const std::lock_guard lock(mutex_);
    seen_.push_back({check.traceparent, check.tracestate});
    if (failures_ > 0) {
      --failures_;
      throw std::runtime_error("failing on purpose");
    }
    JobResult out;
    if (check.check_count == 0 && check.payload.contains("next_once")) {
      out.next = parse_time(check.payload["next_once"].get<std::string>());
    }
    out.events.push_back({.type = "traced.ran", .id = "ran-" + std::to_string(seen_.size())});
    return out;
  }

 private:
  std::vector<Seen>& seen_;
  std::mutex& mutex_;
  int& failures_;
};

// A commands directory with `traced`, which answers done with its TRACEPARENT and TRACESTATE as its result.
std::string traced_commands_dir() {
  return prescient::testing::commands_dir_with(
      "traced", "#!/bin/sh\nprintf '{\"next\": null, \"result\": [\"%s\", \"%s\"]}\\n' \"$TRACEPARENT\" \"$TRACESTATE\"\n");
}

struct TraceContextFixture : prescient::testing::ClientFixture {
  std::vector<Seen> seen;
  std::mutex mutex;
  int failures = 0;

  TraceContextFixture() : ClientFixture("2026-11-21T09:00:00Z", 60, {.commands_dir = traced_commands_dir()}) {
    registry.add("traced", [this] { return std::make_unique<Traced>(seen, mutex, failures); });
    declare_job_classes(*db, registry, "r", clock.now());
  }
  SlotReport fire(const char* at) {
    clock.set(parse_time(at));
    SlotRunner runner({.database_url = url, .runner_id = "r"}, registry, clock);
    return runner.run_slot(runner.settings().grid().floor(clock.now()));
  }
  std::string text(const std::string& sql) {
    std::string out;
    soci::indicator null;
    *db << sql, soci::into(out, null);
    return null == soci::i_ok ? out : "NULL";
  }
};

ScheduleRequest traced_request(const std::string& key) {
  return {.job = "traced", .entity_name = "order", .entity_key = key, .job_key = key,
          .at = parse_time("2026-11-21T10:00:00Z"), .payload = {{"next_once", "2026-11-21T10:05:00Z"}},
          .traceparent = kTraceparent, .tracestate = kTracestate};
}

// The parts of a traceparent: version, trace id, parent id, flags.
std::vector<std::string> parts_of(const std::string& traceparent) {
  REQUIRE(traceparent.size() == 55);
  return {traceparent.substr(0, 2), traceparent.substr(3, 32), traceparent.substr(36, 16), traceparent.substr(53, 2)};
}

}  // namespace

TEST_CASE("trace context: refused in SQL's words at every door, nothing written") {
  TraceContextFixture f;
  ScheduleRequest bad = traced_request("bad");
  bad.traceparent = "00-" + kTrace + "-" + kParent + "-1";  // one flag digit
  CHECK_THROWS_WITH(f.client.schedule(bad), Catch::Contains("the traceparent '00-" + kTrace) &&
                                                Catch::Contains("is not a W3C traceparent"));
  bad.traceparent = "00-" + std::string(32, '0') + "-" + kParent + "-01";
  CHECK_THROWS_AS(f.client.schedule(bad), InvalidInput);
  bad.traceparent = "00-" + kTrace + "-" + kParent.substr(0, 15) + "X-01";
  CHECK_THROWS_AS(f.client.schedule(bad), InvalidInput);
  bad.traceparent.reset();
  CHECK_THROWS_WITH(f.client.schedule(bad), Catch::Contains("a tracestate needs a traceparent"));
  bad.traceparent = kTraceparent;
  bad.tracestate = "congo=t61rcWkgMzE,not a member";
  CHECK_THROWS_WITH(f.client.schedule(bad), Catch::Contains("is not a W3C tracestate"));
  bad.tracestate = std::string(513, 'a');
  CHECK_THROWS_WITH(f.client.schedule(bad), Catch::Contains("the tracestate is 513 characters long (at most 512)"));

  // A bulk call is refused whole, naming the item.
  std::vector<ScheduleRequest> many{traced_request("a"), bad};
  CHECK_THROWS_WITH(f.client.schedule_many(many), Catch::Contains("2") && Catch::Contains("tracestate"));
  CHECK(count_of(*f.db, "SELECT count(*) FROM prescient.future_job") == 0);

  // Good ones are kept as given, one at a time and in bulk.
  f.client.schedule(traced_request("one"));
  std::vector<ScheduleRequest> good{traced_request("two"), traced_request("three")};
  good[1].traceparent.reset();
  good[1].tracestate.reset();
  f.client.schedule_many(good);
  CHECK(count_of(*f.db, "SELECT count(*) FROM prescient.future_job WHERE traceparent = '" + kTraceparent +
                            "' AND tracestate = '" + kTracestate + "'") == 2);
  CHECK(f.text("SELECT traceparent FROM prescient.future_job WHERE job_key = 'three'") == "NULL");
}

TEST_CASE("trace context: each run is a span of the check's trace, through reschedules, retries, history and "
          "revival") {
  TraceContextFixture f;
  const std::int64_t id = f.client.schedule(traced_request("order-1")).id;
  f.fire("2026-11-21T10:00:00Z");  // answers 10:05
  f.failures = 2;
  f.fire("2026-11-21T10:05:00Z");  // fails: retried a slot later
  f.fire("2026-11-21T10:06:00Z");  // fails again: its second attempt of two, a dead letter
  CHECK(f.text("SELECT outcome || ' ' || traceparent || ' ' || tracestate FROM prescient.job_history WHERE id = " +
               std::to_string(id)) == "failed " + kTraceparent + " " + kTracestate);
  const PendingCheck revived = Checks(*f.db).revive_failed(id, parse_time("2026-11-21T10:10:00Z"));
  CHECK(revived.traceparent == kTraceparent);
  CHECK(revived.tracestate == kTracestate);
  f.fire("2026-11-21T10:10:00Z");  // done
  CHECK(f.text("SELECT string_agg(outcome || ' ' || traceparent, ',' ORDER BY history_id) FROM prescient.job_history"
               " WHERE id = " + std::to_string(id)) == "failed " + kTraceparent + ",done " + kTraceparent);

  REQUIRE(f.seen.size() == 4);
  std::set<std::string> spans;
  for (const Seen& s : f.seen) {
    REQUIRE(s.traceparent);
    const auto parts = parts_of(*s.traceparent);
    CHECK(parts[0] == "00");
    CHECK(parts[1] == kTrace);  // the check's trace
    CHECK(parts[2] != kParent);  // a span of the run's own under it
    CHECK(parts[2].find_first_not_of("0123456789abcdef") == std::string::npos);
    CHECK(parts[3] == "01");  // its flags kept
    CHECK(s.tracestate == kTracestate);
    spans.insert(parts[2]);
  }
  CHECK(spans.size() == 4);  // each attempt a span of its own

  // The runs' events keep the traceparent their run saw.
  CHECK(f.text("SELECT traceparent FROM prescient.event WHERE id = 'ran-1'") == *f.seen[0].traceparent);
  CHECK(f.text("SELECT traceparent FROM prescient.event WHERE id = 'ran-4'") == *f.seen[3].traceparent);
}

TEST_CASE("trace context: the command class exports the run's TRACEPARENT and TRACESTATE") {
  TraceContextFixture f;
  ScheduleRequest request = traced_request("cmd");
  request.job = "command";
  request.payload = {{"command", "traced"}};
  const std::int64_t id = f.client.schedule(request).id;
  f.fire("2026-11-21T10:00:00Z");
  const nlohmann::json result =
      nlohmann::json::parse(f.text("SELECT result::text FROM prescient.job_history WHERE id = " + std::to_string(id)));
  const auto parts = parts_of(result.at(0).get<std::string>());
  CHECK(parts[1] == kTrace);
  CHECK(parts[2] != kParent);
  CHECK(result.at(1) == kTracestate);
}

TEST_CASE("trace context: a check without one runs without one; a malformed one written by another is not sent") {
  TraceContextFixture f;
  ScheduleRequest plain = traced_request("plain");
  plain.traceparent.reset();
  plain.tracestate.reset();
  plain.payload = nlohmann::json::object();
  f.client.schedule(plain);
  const std::int64_t other = f.client.schedule(traced_request("other")).id;
  *f.db << "UPDATE prescient.future_job SET traceparent = 'garbage', payload = '{}' WHERE id = :id", soci::use(other);
  f.fire("2026-11-21T10:00:00Z");
  REQUIRE(f.seen.size() == 2);
  for (const Seen& s : f.seen) {
    CHECK_FALSE(s.traceparent);
    CHECK_FALSE(s.tracestate);
  }
  CHECK(count_of(*f.db, "SELECT count(*) FROM prescient.event WHERE traceparent IS NULL") == 2);
}

TEST_CASE("trace context: a worker's take gives each attempt a span of the check's trace") {
  TraceContextFixture f;
  *f.db << "SELECT prescient.job_class_add('mailer', true)";
  *f.db << "UPDATE prescient.settings SET workers_may_pin_clock = true";  // the worker's calls below pin the clock
  ScheduleRequest request = traced_request("mail-1");
  request.job = "mailer";
  const std::int64_t id = f.client.schedule(request).id;
  std::vector<std::string> spans;
  for (int attempt = 0; attempt < 2; ++attempt) {
    std::string traceparent, tracestate;
    long long token = 0;
    *f.db << "SELECT traceparent, tracestate, lease_token FROM prescient.worker_take('w', '{mailer}', 1, 60,"
             " '2026-11-21T10:00:30Z')",
        soci::into(traceparent), soci::into(tracestate), soci::into(token);
    const auto parts = parts_of(traceparent);
    CHECK(parts[1] == kTrace);
    CHECK(parts[2] != kParent);
    CHECK(tracestate == kTracestate);
    spans.push_back(parts[2]);
    // Let go of it (a failed attempt due at once), so the next take is a new attempt.
    *f.db << "UPDATE prescient.future_job SET claimed_by = NULL, claimed_until = NULL, claim_token = NULL"
             " WHERE id = :id", soci::use(id);
  }
  CHECK(spans[0] != spans[1]);
}

TEST_CASE("trace context: each occurrence of a schedule starts a trace of its own, naming it") {
  TraceContextFixture f;
  Schedules schedules(*f.db, f.clock);
  f.clock.set(parse_time("2026-11-21T09:59:30Z"));
  schedules.add({.id = "hourly report", .spec = "0 * * * *", .job = "noop"});
  schedules.add({.id = "nightly", .spec = "0 * * * *", .job = "noop", .overlap = "skip"});  // through SQL's path
  for (const char* at : {"2026-11-21T10:00:00Z", "2026-11-21T10:01:00Z", "2026-11-21T11:00:00Z",
                         "2026-11-21T11:01:00Z"}) {
    f.fire(at);  // an occurrence's check is due at the boundary after its schedule's check made it
  }
  CHECK(count_of(*f.db, "SELECT count(*) FROM prescient.job_history WHERE job = 'noop' AND outcome = 'done'") == 4);
  const std::string occurrences = "(SELECT entity_key, traceparent, tracestate FROM prescient.job_history"
                                  "  WHERE job = 'noop' UNION ALL"
                                  " SELECT entity_key, traceparent, tracestate FROM prescient.future_job"
                                  "  WHERE job = 'noop') o";
  CHECK(count_of(*f.db, "SELECT count(*) FROM " + occurrences +
                            " WHERE traceparent ~ '^00-[0-9a-f]{32}-[0-9a-f]{16}-01$'") == 4);
  CHECK(count_of(*f.db, "SELECT count(DISTINCT substr(traceparent, 4, 32)) FROM " + occurrences) == 4);
  CHECK(f.text("SELECT string_agg(tracestate, ',' ORDER BY tracestate) FROM " + occurrences) ==
        "prescient=schedule:hourly%20report;occurrence:2026-11-21T10:00:00Z,"
        "prescient=schedule:hourly%20report;occurrence:2026-11-21T11:00:00Z,"
        "prescient=schedule:nightly;occurrence:2026-11-21T10:00:00Z,"
        "prescient=schedule:nightly;occurrence:2026-11-21T11:00:00Z");
}

// The runner thread's logic without a database: claim, run, judge, settle, and the isolation of a check the
// database refuses, driven through an in-memory store in milliseconds. (The same behaviour against
// PostgreSQL: tests/db/isolation_test.cpp, runner_test.cpp.)
#include <catch2/catch.hpp>
#include <soci/soci.h>

#include <chrono>
#include <thread>

#include "captured_log.hpp"
#include "fake_runner_store.hpp"
#include "prescient/errors.hpp"
#include "prescient/time_text.hpp"
#include "run_log.hpp"
#include "runner/abandoned_jobs.hpp"
#include "runner/runner_thread.hpp"

using namespace prescient;
using namespace prescient::runner;
using namespace std::chrono_literals;
using prescient::testing::CapturedLog;
using prescient::testing::FakeRunnerStore;
using prescient::testing::RunLog;

namespace {

// Emits payload.emit as an event type when there is one, sleeps payload.sleep_ms; then done.
class Emitter final : public JobExec {
 public:
  explicit Emitter(RunLog& runs) : runs_(runs) {}
  JobResult run(const Check& check, JobContext&) override {
    runs_.record(check.id);
    if (check.payload.contains("sleep_ms")) {
      std::this_thread::sleep_for(std::chrono::milliseconds(check.payload["sleep_ms"].get<int>()));
    }
    JobResult result;
    if (check.payload.contains("emit")) result.events.push_back({.type = check.payload["emit"].get<std::string>()});
    return result;
  }

 private:
  RunLog& runs_;
};

// Declares a policy and is done.
class Declared final : public JobExec {
 public:
  explicit Declared(JobPolicy policy) : policy_(policy) {}
  JobPolicy policy() const override { return policy_; }
  JobResult run(const Check&, JobContext&) override { return {}; }

 private:
  JobPolicy policy_;
};

struct RunnerThreadFixture {
  const TimePoint slot = parse_time("2026-11-21T10:00:00Z");
  ManualClock clock{slot};
  Settings settings;  // a 1-minute grid, 5 attempts
  RunLog runs;
  Registry registry;
  RunnerOptions options{.runner_id = "w", .batch_size = 100};
  FakeRunnerStore* store = nullptr;  // owned by the runner thread: valid while it lives

  RunnerThreadFixture() {
    registry.add("emitter", [this] { return std::make_unique<Emitter>(runs); });
  }

  std::unique_ptr<RunnerThread> runner_thread(FakeRunnerStore& setup) {
    auto owned = std::make_unique<FakeRunnerStore>(std::move(setup));
    store = owned.get();
    return std::make_unique<RunnerThread>(options, registry, clock, settings, std::move(owned),
                                          []() -> std::unique_ptr<soci::session> { throw std::logic_error("no database in unit tests"); });
  }

  Check check(std::int64_t id, nlohmann::json payload = nlohmann::json::object()) const {
    return {.id = id, .job = "emitter", .entity_name = "e", .entity_key = std::to_string(id),
            .payload = std::move(payload), .first_check_at = slot, .slot = slot};
  }

  const SettleItem& settled(std::int64_t id) const {
    const auto it = std::ranges::find_if(store->committed, [&](const SettleItem& i) { return i.id == id; });
    REQUIRE(it != store->committed.end());
    return *it;
  }
};

}  // namespace

TEST_CASE("runner thread: a batch settles in one statement and one commit when nothing is refused") {
  RunnerThreadFixture f;
  FakeRunnerStore setup;
  for (int i = 1; i <= 10; ++i) setup.due.push_back(f.check(i, {{"emit", "fine"}}));
  auto runner_thread = f.runner_thread(setup);
  const SlotReport r = runner_thread->drain(f.slot);
  CHECK(r.claimed == 10);
  CHECK(r.done == 10);
  CHECK(r.events == 10);
  CHECK(f.store->settle_statements == 1);
  CHECK(f.store->commits == 1);
  CHECK(f.store->due.empty());
  // Event ids are deterministic: <check id>-<check count after the run>.
  CHECK(f.settled(7).events.at(0).id == "7-1");
}

TEST_CASE("runner thread: refused items become failed attempts naming the refusal; the others settle in one transaction") {
  RunnerThreadFixture f;
  FakeRunnerStore setup;
  for (int i = 1; i <= 40; ++i) setup.due.push_back(f.check(i, {{"emit", i == 3 || i == 17 || i == 18 ? "poison" : "fine"}}));
  auto runner_thread = f.runner_thread(setup);
  const SlotReport r = runner_thread->drain(f.slot);
  CHECK(r.done == 37);
  CHECK(r.retried == 3);
  CHECK(r.events == 37);
  CHECK(f.store->commits == 1);  // one claim, one transaction: the culprits did not cost the others a rerun
  for (int i = 1; i <= 40; ++i) CHECK(f.runs.of(i) == 1);
  for (const std::int64_t culprit : {3, 17, 18}) {
    const SettleItem& s = f.settled(culprit);
    CHECK(s.answer.failed);
    CHECK(s.check.attempts == 0);  // before this run: the judge makes it 1
    CHECK_THAT(s.answer.error, Catch::StartsWith("the database refused its settlement: ") &&
                                   Catch::Contains("no_poison") && Catch::Contains("23514"));
    CHECK(f.settled(culprit).events.empty());
  }
  // The batch, then its culprits' failed attempts together: two calls, whatever the number of culprits.
  CHECK(f.store->settle_statements == 2);
}

TEST_CASE("runner thread: after a refusal the next 16 batches start in chunks, then whole again") {
  RunnerThreadFixture f;
  f.options.batch_size = 10;
  FakeRunnerStore setup;
  // 20 batches of 10: a culprit in the first and the fifth, none after.
  for (int i = 1; i <= 200; ++i) setup.due.push_back(f.check(i, {{"emit", i == 5 || i == 45 ? "poison" : "fine"}}));
  auto runner_thread = f.runner_thread(setup);
  const SlotReport r = runner_thread->drain(f.slot);
  CHECK(r.done == 198);
  CHECK(r.retried == 2);
  // Per batch, the settle calls: the first whole (then its culprit's failed attempt, in chunks); the next
  // sixteen in chunks, the fifth's culprit starting sixteen more; so batches 2 to 20 all start in chunks.
  const std::vector<bool>& chunks = f.store->settled_in_chunks;
  REQUIRE(chunks.size() == 22);
  CHECK_FALSE(chunks[0]);
  CHECK(std::ranges::all_of(chunks.begin() + 1, chunks.end(), [](bool c) { return c; }));
}

TEST_CASE("runner thread: a batch after sixteen clean chunked ones starts whole again") {
  RunnerThreadFixture f;
  f.options.batch_size = 10;
  FakeRunnerStore setup;
  for (int i = 1; i <= 190; ++i) setup.due.push_back(f.check(i, {{"emit", i == 5 ? "poison" : "fine"}}));
  auto runner_thread = f.runner_thread(setup);
  runner_thread->drain(f.slot);
  const std::vector<bool>& chunks = f.store->settled_in_chunks;
  // Batch 1 (whole) and its culprit's attempt, batches 2 to 17 in chunks, 18 and 19 whole.
  REQUIRE(chunks.size() == 20);
  CHECK_FALSE(chunks[0]);
  CHECK(std::ranges::all_of(chunks.begin() + 1, chunks.begin() + 18, [](bool c) { return c; }));
  CHECK_FALSE(chunks[18]);
  CHECK_FALSE(chunks[19]);
}

TEST_CASE("runner thread: a failure of the server fails the batch; nothing settles, the rows stay due") {
  RunnerThreadFixture f;
  FakeRunnerStore setup;
  for (int i = 1; i <= 5; ++i) setup.due.push_back(f.check(i));
  setup.server_failure = "08006";
  auto runner_thread = f.runner_thread(setup);
  CHECK_THROWS_AS(runner_thread->drain(f.slot), DatabaseError);
  CHECK(f.store->committed.empty());
  CHECK(f.store->rollbacks == 1);
  CHECK(f.store->settle_statements == 1);  // no halves: a connection failure is nobody's values
  CHECK(f.store->due.size() == 5);
}

TEST_CASE("runner thread: a check refused in any form stays due and is left out of the rest of the drain") {
  RunnerThreadFixture f;
  FakeRunnerStore setup;
  for (int i = 1; i <= 6; ++i) setup.due.push_back(f.check(i));
  setup.refused_ids = {4};
  auto runner_thread = f.runner_thread(setup);
  const SlotReport r = runner_thread->drain(f.slot);
  CHECK(r.done == 5);
  CHECK(f.runs.of(4) == 1);  // claimed and run once, then not claimed again in this drain
  REQUIRE(f.store->pending_check(4) != nullptr);
  CHECK(f.store->pending_check(4)->attempts == 0);
  CHECK(f.store->claims.back().ids == std::vector<std::int64_t>{4});
}

TEST_CASE("runner thread: a row whose payload cannot be read fails without a run") {
  RunnerThreadFixture f;
  FakeRunnerStore setup;
  for (int i = 1; i <= 3; ++i) setup.due.push_back(f.check(i));
  setup.unreadable[2] = "its payload cannot be read: number overflow";
  auto runner_thread = f.runner_thread(setup);
  const SlotReport r = runner_thread->drain(f.slot);
  CHECK(r.claimed == 3);
  CHECK(r.done == 2);
  CHECK(r.retried == 1);
  CHECK(f.runs.of(2) == 0);
  CHECK(f.settled(2).answer.error == "its payload cannot be read: number overflow");
}

TEST_CASE("runner thread: past the batch deadline no job starts; the rest is claimed again in later transactions") {
  RunnerThreadFixture f;
  f.options.batch_deadline = 120ms;
  FakeRunnerStore setup;
  for (int i = 1; i <= 8; ++i) setup.due.push_back(f.check(i, {{"sleep_ms", 50}}));
  auto runner_thread = f.runner_thread(setup);
  const SlotReport r = runner_thread->drain(f.slot);
  CHECK(r.done == 8);
  CHECK(f.store->commits >= 2);  // each transaction held its rows for about the deadline, not for all 8 jobs
  for (int i = 1; i <= 8; ++i) CHECK(f.runs.of(i) == 1);
}

TEST_CASE("runner thread: a class with too many abandoned jobs is left out of its claims") {
  RunnerThreadFixture f;
  f.options.max_abandoned_per_class = 1;
  runner::AbandonedJobs::process().add("stuck");
  FakeRunnerStore setup;
  setup.due.push_back(f.check(1));
  auto runner_thread = f.runner_thread(setup);
  runner_thread->drain(f.slot);
  runner::AbandonedJobs::process().remove("stuck");
  REQUIRE_FALSE(f.store->claims.empty());
  CHECK(f.store->claims.front().jobs == std::vector<std::string>{"stuck"});
}

TEST_CASE("runner thread: checks a flow limit applies to are admitted with their key values and run under a lease") {
  RunnerThreadFixture f;
  FakeRunnerStore setup;
  setup.limits = {{.name = "per-tenant", .key = "payload.tenant", .concurrency = 2}};
  for (int i = 1; i <= 3; ++i) setup.due.push_back(f.check(i, {{"tenant", "a"}}));
  for (int i = 4; i <= 5; ++i) setup.due.push_back(f.check(i));
  auto runner_thread = f.runner_thread(setup);
  const SlotReport r = runner_thread->drain(f.slot);
  CHECK(r.done == 5);
  REQUIRE(f.store->admitted_pairs.size() == 1);
  const auto& pairs = f.store->admitted_pairs.front();
  REQUIRE(pairs.size() == 3);
  for (const auto& p : pairs) {
    CHECK(p.limit == "per-tenant");
    CHECK(p.key == "a");
    CHECK(p.id <= 3);
  }
  CHECK(f.store->leased == std::vector<std::int64_t>{1, 2, 3});  // the unlimited ones took the fast path
}

TEST_CASE("runner thread: a check deferred to a time within the slot runs at that time, never before") {
  RunnerThreadFixture f;
  FakeRunnerStore setup;
  setup.limits = {{.name = "elsewhere", .key = "payload.tenant", .rate = 10}};  // limits in force, none applies
  Check later = f.check(1);
  later.slot = f.slot + 30s;  // flow control moved it there
  setup.due.push_back(later);
  setup.due.push_back(f.check(2));
  auto runner_thread = f.runner_thread(setup);
  int early_runs = -1, on_time_runs = -1;  // seen before the clock reached the deferred time
  std::thread advance([&] {
    std::this_thread::sleep_for(300ms);
    early_runs = f.runs.of(1);
    on_time_runs = f.runs.of(2);
    f.clock.set(f.slot + 30s);
  });
  const SlotReport r = runner_thread->drain(f.slot);
  advance.join();
  CHECK(early_runs == 0);
  CHECK(on_time_runs == 1);
  CHECK(r.done == 2);
  CHECK(f.runs.of(1) == 1);
  // Under flow limits every claim looks from the slot's start: a deferral moves checks within the slot.
  CHECK(std::ranges::none_of(f.store->claims_after, [](const auto& after) { return after.has_value(); }));
}

TEST_CASE("runner thread: a claim starts where the slot's threads have claimed to; a check behind it still runs, last") {
  RunnerThreadFixture f;
  f.options.batch_size = 2;
  FakeRunnerStore setup;
  for (int i = 1; i <= 5; ++i) setup.due.push_back(f.check(i));
  auto runner_thread = f.runner_thread(setup);
  ClaimMark mark;
  mark.advance({.due = f.slot, .id = 2});  // as if another runner thread had claimed 1 and 2, then given them back
  const SlotReport r = runner_thread->drain(f.slot, mark);
  CHECK(r.done == 5);
  CHECK(f.store->due.empty());
  std::vector<std::int64_t> order;
  for (const SettleItem& item : f.store->committed) order.push_back(item.id);
  CHECK(order == std::vector<std::int64_t>{3, 4, 5, 1, 2});
  // After 2, after 4; after 5 finds nothing, so from the start (1 and 2); then nothing either way.
  const auto at = [&](std::int64_t id) { return std::optional(ClaimKey{.due = f.slot, .id = id}); };
  CHECK(f.store->claims_after == std::vector{at(2), at(4), at(5), std::optional<ClaimKey>{}, at(5), std::optional<ClaimKey>{}});
  CHECK(mark.get() == at(5));
}

TEST_CASE("runner thread: a class's limits are the store's answer, asked with its coded policy and the config, again each slot") {
  RunnerThreadFixture f;
  f.registry.add("declared", [] { return std::make_unique<Declared>(JobPolicy{.max_checks = 3}); });
  f.options.default_policy = {.max_attempts = 9};
  FakeRunnerStore setup;
  setup.due = {f.check(1), f.check(2)};
  setup.due[1].job = "declared";
  setup.limits_by_class["declared"] = {.limits = {.max_checks = 7, .max_attempts = 2}, .timeout = 10s};
  auto runner_thread = f.runner_thread(setup);
  runner_thread->drain(f.slot);
  CHECK(f.settled(2).check.limits == GuardLimits{.max_checks = 7, .max_attempts = 2});
  CHECK(f.settled(1).check.limits == GuardLimits{});
  // Each class when it is first made, with its coded policy and the config file's defaults.
  REQUIRE(f.store->limits_asked.size() == 2);
  CHECK(f.store->limits_asked[1].first == std::map<std::string, JobPolicy>{{"declared", {.max_checks = 3}}});
  CHECK(f.store->limits_asked[1].second == JobPolicy{.max_attempts = 9});
  // The next slot: every class made, in one call (a change in the registry takes effect within a slot).
  f.store->limits_by_class["declared"].limits.max_checks = 1;
  f.store->due.push_back(f.check(3));
  f.store->due.back().job = "declared";
  f.store->due.back().slot = f.slot + 1min;
  f.clock.set(f.slot + 1min);
  runner_thread->drain(f.slot + 1min);
  REQUIRE(f.store->limits_asked.size() == 3);
  CHECK(f.store->limits_asked[2].first ==
        std::map<std::string, JobPolicy>{{"declared", {.max_checks = 3}}, {"emitter", {}}});
  CHECK(f.settled(3).check.limits.max_checks == 1);
}

TEST_CASE("runner thread: a class whose coded policy the store finds a problem in fails its checks without a run") {
  RunnerThreadFixture f;
  FakeRunnerStore setup;
  setup.due = {f.check(1)};
  setup.limits_by_class["emitter"] = {.timeout = 30s, .coded_problem = "timeout 0s is not within 1s to 1d"};
  auto runner_thread = f.runner_thread(setup);
  const SlotReport r = runner_thread->drain(f.slot);
  CHECK(r.retried == 1);
  CHECK(f.runs.of(1) == 0);
  CHECK(f.settled(1).answer.error == "job class 'emitter' has an invalid policy: timeout 0s is not within 1s to 1d");
}

TEST_CASE("runner thread: a registry timeout cut to a day is warned of when the limits first take it, not every slot") {
  RunnerThreadFixture f;
  FakeRunnerStore setup;
  setup.due = {f.check(1)};
  setup.limits_by_class["emitter"] = {.timeout = 86400s, .timeout_cut_from = 172800s};
  auto runner_thread = f.runner_thread(setup);
  CapturedLog log;
  runner_thread->drain(f.slot);
  f.clock.set(f.slot + 1min);
  runner_thread->drain(f.slot + 1min);
  const std::string warning = "the registry's timeout for class emitter (172800s) is beyond a day: a day is used";
  const std::string text = log.text();
  REQUIRE(text.find(warning) != std::string::npos);
  CHECK(text.find(warning, text.find(warning) + 1) == std::string::npos);
}

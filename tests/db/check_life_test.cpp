// A check's life as an application team lives it (docs/guarantees.md, "Late answers", "Policies"; docs/design.md,
// "A check's timeline"): an answer already past but after what was asked for is late, not dead; policies set
// from SQL (the class registry's row) bound checks and retries in absolute time; every run that leaves a check
// pending is a row of its timeline, which `prescient show` prints. Time is pinned: the runner's clock is a
// ManualClock, SQL's p_now is given.
#include <catch2/catch.hpp>
#include <httplib.h>
#include <soci/soci.h>

#include <atomic>
#include <mutex>
#include <thread>

#include "builtin_jobs.hpp"
#include "http.hpp"
#include "prescient/checks.hpp"
#include "prescient/client.hpp"
#include "prescient/registry.hpp"
#include "prescient/slot_runner.hpp"
#include "prescient/time_text.hpp"
#include "process.hpp"
#include "test_database.hpp"

using namespace prescient;
using namespace prescient::jobs;
using namespace std::chrono_literals;
using prescient::testing::connect_to;
using prescient::testing::count_of;
using prescient::testing::create_migrated_database;
using prescient::testing::free_loopback_port;
using prescient::testing::run_prescient;
using prescient::testing::with_db;

namespace {

// The application's receiver: down (HTTP 500) or answering {"next": ...} as it is told.
class Shop {
 public:
  Shop() : port_(free_loopback_port()) {
    server_.set_keep_alive_timeout(1);
    server_.Post("/hooks/reminder", [this](const httplib::Request&, httplib::Response& response) {
      const std::lock_guard lock(mutex_);
      if (down_) {
        response.status = 500;
        response.set_content("shop database down", "text/plain");
        return;
      }
      response.set_content(nlohmann::json{{"next", next_}}.dump(), "application/json");
    });
    if (!server_.bind_to_port("127.0.0.1", port_)) throw std::runtime_error("the shop cannot bind its port");
    thread_ = std::thread([this] { server_.listen_after_bind(); });
  }
  ~Shop() {
    server_.stop();
    thread_.join();
  }
  int port() const { return port_; }
  void down(bool on) {
    const std::lock_guard lock(mutex_);
    down_ = on;
  }
  void answer(std::string next) {
    const std::lock_guard lock(mutex_);
    next_ = std::move(next);
  }

 private:
  int port_;
  httplib::Server server_;
  std::thread thread_;
  std::mutex mutex_;
  bool down_ = false;
  std::string next_;
};

// Reminds daily (slot + 1 day) until the order ships.
class DailyReminder final : public JobExec {
 public:
  explicit DailyReminder(const std::atomic<bool>& shipped, JobPolicy policy = {}) : shipped_(shipped), policy_(policy) {}
  JobPolicy policy() const override { return policy_; }
  JobResult run(const Check&, JobContext& ctx) override {
    if (shipped_) return {};
    return {.next = ctx.slot() + 24h};
  }

 private:
  const std::atomic<bool>& shipped_;
  JobPolicy policy_;
};

// Always fails, as a job whose receiver is down.
class Unreachable final : public JobExec {
 public:
  JobResult run(const Check&, JobContext&) override { throw std::runtime_error("receiver down"); }
};

// Three looks an hour apart, then one failure, then done.
class ThreeLooksThenDone final : public JobExec {
 public:
  JobResult run(const Check& check, JobContext& ctx) override {
    if (check.check_count < 3) return {.next = ctx.slot() + 1h};
    if (check.attempts == 0) throw std::runtime_error("receiver down");
    return {};
  }
};

struct CheckLifeFixture {
  explicit CheckLifeFixture(int slot_seconds) : url(create_migrated_database(slot_seconds)), db(connect_to(url)) {
    auto targets = std::make_shared<HttpTargets>();
    (*targets)["shop"] = {.name = "shop", .base_url = "http://127.0.0.1:" + std::to_string(shop.port()) + "/hooks",
                          .secret = "whsec-test", .timeout = 2s, .max_concurrent = 4, .ca_file = std::nullopt};
    register_builtin_jobs(registry, {.commands_dir = std::nullopt, .http_targets = targets});
    registry.add("reminder", [this] { return std::make_unique<DailyReminder>(shipped); });
    registry.add("reminder_bounded",
                 [this] { return std::make_unique<DailyReminder>(shipped, JobPolicy{.max_checks = 4}); });
    registry.add("unreachable", [] { return std::make_unique<Unreachable>(); });
    registry.add("three_looks", [] { return std::make_unique<ThreeLooksThenDone>(); });
    // Declared ahead of the runner, as an application's classes are, so that enqueue accepts them.
    for (const std::string job : {"reminder", "reminder_bounded", "unreachable", "three_looks"}) {
      *db << "SELECT prescient.job_class_add(:job, false, 'test', now())", soci::use(job);
    }
  }

  // Sets a class's policy in the registry from SQL, as an application would: `arguments` of
  // prescient.set_job_policy, by name.
  void set_policy(const std::string& job, const std::string& arguments) {
    *db << "SELECT 1 FROM prescient.set_job_policy(:job, " + arguments + ")", soci::use(job);
  }

  long long schedule(const std::string& job, const std::string& key, const std::string& at, const std::string& now,
                     const nlohmann::json& payload = nlohmann::json::object()) {
    long long id = 0;
    const std::string text = payload.dump();
    *db << "SELECT id FROM prescient.schedule(:job, 'order', :key, :at::timestamptz, p_job_key => :job_key,"
           " p_payload => :p::jsonb, p_now => :now::timestamptz)",
        soci::use(job), soci::use(key), soci::use(at), soci::use(key), soci::use(text), soci::use(now), soci::into(id);
    return id;
  }

  // Fires the slot `at` falls in, with the runner's clock at `at`.
  SlotReport fire(TimePoint at) {
    clock.set(at);
    SlotRunner runner({.database_url = url, .runner_id = "r1", .default_policy = config_defaults}, registry, clock);
    return runner.run_slot(runner.settings().grid().floor(at));
  }
  SlotReport fire(const char* at) { return fire(parse_time(at)); }

  std::optional<PendingCheck> pending(long long id) {
    const auto rows = Checks(*db).pending({.id = id, .limit = 1});
    return rows.empty() ? std::nullopt : std::optional(rows.front());
  }
  HistoryEntry ended(long long id) {
    const auto rows = Checks(*db).history({.id = id, .limit = 1});
    REQUIRE(rows.size() == 1);
    return rows.front();
  }
  std::string asked_for(long long id) {
    std::string at;
    *db << "SELECT prescient.iso(asked_for_at) FROM prescient.future_job WHERE id = :id", soci::use(id), soci::into(at);
    return at;
  }

  Shop shop;
  std::string url;
  std::unique_ptr<soci::session> db;
  ManualClock clock{parse_time("2026-11-21T07:00:00Z")};
  Registry registry;
  std::atomic<bool> shipped{false};
  JobPolicy config_defaults;  // as the runner's config file gives them
};

}  // namespace

TEST_CASE("an http answer in the past after the retried check's due time is late: it runs at the next slot") {
  CheckLifeFixture f(60);
  f.set_policy("http", "p_max_attempts => 1");
  // Placed at 07:00; the email is due 3 h later, at 10:00. The receiver is down then: the check fails.
  const long long id = f.schedule("http", "order-unshipped:1", "2026-11-21T10:00:00Z", "2026-11-21T07:00:00Z",
                                  {{"target", "shop"}, {"path", "/reminder"}});
  f.shop.down(true);
  f.fire("2026-11-21T10:00:05Z");
  CHECK(f.ended(id).outcome == Outcome::failed);
  // At 14:00 someone retries it; the receiver is up, sends the email and answers placed + 6 h = 13:00: a time
  // that passed while it was down, but after the 10:00 it was asked for. It is late, not dead.
  Checks(*f.db).revive_failed(id, parse_time("2026-11-21T14:00:00Z"));
  f.shop.down(false);
  f.shop.answer("2026-11-21T13:00:00Z");
  const SlotReport late = f.fire("2026-11-21T14:00:05Z");
  CHECK(late.rescheduled == 1);
  CHECK(late.guarded == 0);
  const auto next = f.pending(id);
  REQUIRE(next);
  CHECK(format_time(next->next_check_at) == "2026-11-21T14:01:00Z");  // the next slot
  CHECK(next->check_count == 1);
  CHECK(f.asked_for(id) == "2026-11-21T13:00:00Z");
  // The escalation runs there; answering 13:00 again does not advance: guard_past, naming both times.
  f.fire("2026-11-21T14:01:05Z");
  const HistoryEntry loop = f.ended(id);
  CHECK(loop.outcome == Outcome::guard_past);
  CHECK(loop.last_error ==
        "answered 2026-11-21T13:00:00Z, not after the time this run was asked for (2026-11-21T13:00:00Z): a next time "
        "must advance");
}

TEST_CASE("remind daily until shipped: max_checks unlimited set from SQL runs ten times; max_checks 3 says so") {
  CheckLifeFixture f(900);
  f.set_policy("reminder", "p_max_checks => 0");
  const long long id = f.schedule("reminder", "remind:1", "2026-11-21T09:00:00Z", "2026-11-21T08:00:00Z");
  const TimePoint first = parse_time("2026-11-21T09:00:05Z");
  for (int day = 0; day < 9; ++day) {
    INFO("day " << day);
    CHECK(f.fire(first + day * 24h).rescheduled == 1);
  }
  f.shipped = true;
  CHECK(f.fire(first + 9 * 24h).done == 1);
  const HistoryEntry done = f.ended(id);
  CHECK(done.outcome == Outcome::done);
  CHECK(done.check_count == 10);
  CHECK(count_of(*f.db, "SELECT count(*) FROM prescient.check_run WHERE id = " + std::to_string(id)) == 9);

  // The same class bounded at three runs: the third run's "again tomorrow" ends it, saying why.
  f.shipped = false;
  f.set_policy("reminder", "p_max_checks => 3");
  const long long bounded = f.schedule("reminder", "remind:2", "2026-12-01T09:00:00Z", "2026-12-01T08:00:00Z");
  const TimePoint start = parse_time("2026-12-01T09:00:05Z");
  for (int day = 0; day < 3; ++day) f.fire(start + day * 24h);
  const HistoryEntry guarded = f.ended(bounded);
  CHECK(guarded.outcome == Outcome::guard_max_checks);
  CHECK(guarded.last_error ==
        "asked to look again at 2026-12-04T09:00:00Z after run 3: max_checks is 3 (prescient jobs set reminder "
        "--max-checks N|unlimited)");
}

TEST_CASE("backoff set from SQL is absolute: 1, 2, 4, 8 minutes on a 1-second grid, the next boundary on 15 minutes") {
  const auto retry_times = [](int slot_seconds) {
    CheckLifeFixture f(slot_seconds);
    f.set_policy("unreachable", "p_backoff => '1 minute', p_max_attempts => 10");
    const long long id = f.schedule("unreachable", "flaky:1", "2026-11-21T10:00:00Z", "2026-11-21T09:00:00Z");
    std::vector<std::string> times{"2026-11-21T10:00:00Z"};
    for (int attempt = 0; attempt < 4; ++attempt) {
      f.fire(parse_time(times.back()) + 500ms);
      const auto row = f.pending(id);
      REQUIRE(row);
      CHECK(row->attempts == attempt + 1);
      CHECK(row->last_error == "receiver down");
      times.push_back(format_time(row->next_check_at));
    }
    return times;
  };
  CHECK(retry_times(1) == std::vector<std::string>{"2026-11-21T10:00:00Z", "2026-11-21T10:01:00Z",
                                                   "2026-11-21T10:03:00Z", "2026-11-21T10:07:00Z",
                                                   "2026-11-21T10:15:00Z"});
  CHECK(retry_times(900) == std::vector<std::string>{"2026-11-21T10:00:00Z", "2026-11-21T10:15:00Z",
                                                     "2026-11-21T10:30:00Z", "2026-11-21T10:45:00Z",
                                                     "2026-11-21T11:00:00Z"});
}

TEST_CASE("a check rescheduled three times, failed once, retried and done: its timeline has five entries") {
  CheckLifeFixture f(900);
  const long long id = f.schedule("three_looks", "order-unshipped:5", "2026-11-21T10:00:00Z", "2026-11-21T09:00:00Z");
  for (const char* at : {"2026-11-21T10:00:01Z", "2026-11-21T11:00:01Z", "2026-11-21T12:00:01Z",
                         "2026-11-21T13:00:01Z", "2026-11-21T13:15:01Z"}) {
    f.fire(at);
  }
  const CheckTrace trace = Checks(*f.db).trace(id, std::nullopt);
  REQUIRE(trace.runs.size() == 4);
  CHECK(trace.runs[0].result == "rescheduled");
  CHECK(format_time(trace.runs[0].due_at) == "2026-11-21T10:00:00Z");
  CHECK(format_time(trace.runs[0].finished_at) == "2026-11-21T10:00:01Z");
  CHECK(format_time(*trace.runs[0].answered_at) == "2026-11-21T11:00:00Z");
  CHECK(trace.runs[0].runner == "r1");
  CHECK(trace.runs[0].run_micros.has_value());
  CHECK(trace.runs[3].result == "retried");
  CHECK(trace.runs[3].error == "receiver down");
  CHECK(format_time(trace.runs[3].next_check_at) == "2026-11-21T13:15:00Z");
  REQUIRE(trace.history.size() == 1);
  CHECK(trace.history[0].outcome == Outcome::done);

  const auto shown = run_prescient(with_db({"show", "--job-key", "order-unshipped:5"}, f.url));
  INFO(shown.out << shown.err);
  REQUIRE(shown.exit_code == 0);
  CHECK_THAT(shown.out, Catch::Contains("timeline: 5 entries, oldest first\n"));
  CHECK_THAT(shown.out, Catch::Contains("  2026-11-21T10:00:01Z  check " + std::to_string(id) +
                                        " ran for 2026-11-21T10:00:00Z on r1 in "));
  CHECK_THAT(shown.out, Catch::Contains(": rescheduled to 2026-11-21T11:00:00Z (answered 2026-11-21T11:00:00Z), "
                                        "checks 1, attempts 0\n"));
  CHECK_THAT(shown.out, Catch::Contains(": retried to 2026-11-21T13:15:00Z, checks 3, attempts 1: receiver down\n"));
  CHECK_THAT(shown.out, Catch::Contains("  2026-11-21T13:15:01Z  check " + std::to_string(id) + " ended done by r1"));
  const auto json = nlohmann::json::parse(
      run_prescient(with_db({"show", "--job-key", "order-unshipped:5", "--json"}, f.url)).out);
  CHECK(json["runs"].size() == 4);
  CHECK(json["runs"][1]["answered_at"] == "2026-11-21T12:00:00Z");
}

TEST_CASE("policy precedence: the registry's row, then the class's coded policy, then the config file's, then the settings") {
  CheckLifeFixture f(900);
  // How many runs a daily reminder of `job` makes before a guard ends it (the settings say 5).
  int day = 0;
  const TimePoint nine = parse_time("2026-11-21T09:00:00Z");
  const auto runs_of = [&](const std::string& job, std::optional<int> own_max_checks = std::nullopt) {
    const long long id = f.schedule(job, "remind:" + std::to_string(day), format_time(nine + day * 24h),
                                    format_time(nine + day * 24h - 1h));
    if (own_max_checks) {
      *f.db << "SELECT prescient.set_check_policy(:id, p_max_checks => :n)", soci::use(id), soci::use(*own_max_checks);
    }
    for (int runs = 1; runs <= 10; ++runs) {
      f.fire(nine + day++ * 24h + 5s);
      if (!f.pending(id)) {
        CHECK(f.ended(id).outcome == Outcome::guard_max_checks);
        return runs;
      }
    }
    return -1;
  };
  CHECK(runs_of("reminder") == 5);          // the settings
  f.config_defaults.max_checks = 2;
  CHECK(runs_of("reminder") == 2);          // the config file's default
  CHECK(runs_of("reminder_bounded") == 4);  // the class's coded policy over the config file
  f.set_policy("reminder_bounded", "p_max_checks => 3");
  CHECK(runs_of("reminder_bounded") == 3);  // the registry's row over both
  CHECK(runs_of("reminder_bounded", 6) == 6);  // the check's own over all of them
}

TEST_CASE("a registry change takes effect at the next slot of a runner that has already made the class") {
  CheckLifeFixture f(900);
  // One runner for every slot: its runner threads keep the classes they made, and read the limits in force
  // again each slot (prescient.class_limits).
  const TimePoint nine = parse_time("2026-11-21T09:00:00Z");
  f.clock.set(nine - 1h);
  SlotRunner runner({.database_url = f.url, .runner_id = "r1"}, f.registry, f.clock);
  const long long id = f.schedule("reminder_bounded", "remind", format_time(nine), format_time(nine - 1h));
  const auto fire = [&](int day) {
    f.clock.set(nine + day * 24h + 5s);
    runner.run_slot(runner.settings().grid().floor(f.clock.now()));
  };
  fire(0);
  REQUIRE(f.pending(id));  // one run of the coded policy's 4
  f.set_policy("reminder_bounded", "p_max_checks => 2");
  fire(1);
  REQUIRE_FALSE(f.pending(id));
  CHECK(f.ended(id).outcome == Outcome::guard_max_checks);
  CHECK(f.ended(id).check_count == 2);
}

TEST_CASE("a check's own policy at enqueue: from the C++ client in one transaction, kept by a retry, refused by SQL's rules") {
  CheckLifeFixture f(900);
  Client client(*f.db, {.clock = &f.clock, .enqueued_by = "test"});
  f.clock.set(parse_time("2026-11-21T08:00:00Z"));
  const Scheduled twice = client.schedule({.job = "reminder", .entity_name = "order", .entity_key = "8",
                                           .at = parse_time("2026-11-21T09:00:00Z"),
                                           .policy = {.max_checks = 2}});
  f.fire("2026-11-21T09:00:05Z");
  f.fire("2026-11-22T09:00:05Z");
  const HistoryEntry guarded = f.ended(twice.id);
  CHECK(guarded.outcome == Outcome::guard_max_checks);
  CHECK(guarded.last_error ==
        "asked to look again at 2026-11-23T09:00:00Z after run 2: max_checks is 2 (the check's own policy)");

  // Failing with its own max_attempts 1 and backoff: failed at once; retried, it keeps them.
  const Scheduled flaky = client.schedule({.job = "unreachable", .entity_name = "order", .entity_key = "9",
                                           .at = parse_time("2026-11-24T09:00:00Z"),
                                           .policy = {.max_attempts = 2, .backoff = 1h}});
  f.fire("2026-11-24T09:00:05Z");
  const auto retrying = f.pending(flaky.id);
  REQUIRE(retrying);
  CHECK(format_time(retrying->next_check_at) == "2026-11-24T10:00:00Z");  // its own backoff, not one slot
  f.fire("2026-11-24T10:00:05Z");
  CHECK(f.ended(flaky.id).outcome == Outcome::failed);
  Checks(*f.db).revive_failed(flaky.id, parse_time("2026-11-24T11:00:00Z"));
  CHECK(count_of(*f.db, "SELECT count(*) FROM prescient.future_job WHERE id = " + std::to_string(flaky.id) +
                            " AND max_attempts = 2 AND backoff_seconds = 3600") == 1);

  // SQL's rules, from every door: nothing is written when refused.
  CHECK_THROWS_WITH(client.schedule({.job = "reminder", .entity_name = "order", .entity_key = "10",
                                     .job_key = std::string("k10"), .at = parse_time("2026-11-25T09:00:00Z"),
                                     .policy = {.max_attempts = 0}}),
                    Catch::Contains("max_attempts 0 is under 1"));
  CHECK(count_of(*f.db, "SELECT count(*) FROM prescient.future_job WHERE job_key = 'k10'") == 0);
  CHECK_THROWS_WITH((*f.db << "SELECT prescient.set_check_policy(1, p_backoff => '1 hour', p_backoff_max => '1 minute')"),
                    Catch::Contains("backoff_max 1m is under the backoff 1h"));
}

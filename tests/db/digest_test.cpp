// Digests (docs/concepts.md, "Digests"; sql/functions/042_collect.sql): on_conflict 'collect' gathers the
// payloads of one job key's enqueues into the pending check's list, moved by the debounce rule within its
// ceiling; every payload reaches exactly one run, in order, whether it arrives before a run, while a
// fast-path run holds the row, or while a written lease (a worker, a long-running class) holds the check.
// On a 1-minute grid, time driven by a ManualClock.
#include <catch2/catch.hpp>
#include <soci/soci.h>

#include <atomic>
#include <future>
#include <mutex>
#include <numeric>
#include <thread>

#include "builtin_jobs.hpp"
#include "prescient/client.hpp"
#include "prescient/errors.hpp"
#include "prescient/slot_runner.hpp"
#include "prescient/time_text.hpp"
#include "client_fixture.hpp"
#include "test_database.hpp"

using namespace prescient;
using namespace std::chrono_literals;
using prescient::testing::connect_to;
using prescient::testing::count_of;
using prescient::testing::sql_refusal;

namespace {

// Says when its first run starts, sleeps (so that enqueues race the run), then answers done, or an hour
// after its slot with `again`. On the fast path (the claim's row lock held while it runs) or, long-running,
// on the slow one (a written lease).
class Sleepy : public JobExec {
 public:
  Sleepy(std::promise<void>& started, std::atomic<bool>& told, bool long_running, bool again = false)
      : started_(started), told_(told), long_running_(long_running), again_(again) {}
  JobPolicy policy() const override { return {.long_running = long_running_}; }
  JobResult run(const Check& check, JobContext&) override {
    if (!told_.exchange(true)) started_.set_value();
    std::this_thread::sleep_for(600ms);
    return {.next = again_ ? std::optional(check.slot + 1h) : std::nullopt};
  }

 private:
  std::promise<void>& started_;
  std::atomic<bool>& told_;
  bool long_running_;
  bool again_;
};

struct DigestFixture : prescient::testing::ClientFixture {
  std::promise<void> started;
  std::atomic<bool> told{false};
  DigestFixture() : ClientFixture("2026-11-21T00:00:00Z") {
    registry.add("sleepy", [this] { return std::make_unique<Sleepy>(started, told, false); });
    registry.add("sleepy_slow", [this] { return std::make_unique<Sleepy>(started, told, true); });
    registry.add("sleepy_again", [this] { return std::make_unique<Sleepy>(started, told, false, true); });
    *db << "SELECT prescient.job_class_add(c, c = 'digest_worker')"
           " FROM unnest(ARRAY['sleepy', 'sleepy_slow', 'sleepy_again', 'digest_worker']) c";
  }

  // Fires every slot boundary after `from` up to `to` where something is due.
  void run_until(SlotRunner& runner, TimePoint from, TimePoint to) {
    for (TimePoint t = std::chrono::ceil<std::chrono::minutes>(from); t <= to; t += 1min) {
      if (count_of(*db, "SELECT count(*) FROM prescient.future_job WHERE next_check_at <= '" + format_time(t) +
                            "'::timestamptz") == 0) {
        continue;
      }
      clock.set(t);
      runner.run_slot(t);
    }
  }
  // The numbers ("n") of the payloads each finished run read, run by run, in order.
  std::vector<std::vector<int>> runs() {
    std::vector<std::vector<int>> out;
    soci::rowset<std::string> rows =
        (db->prepare << "SELECT coalesce(string_agg(e ->> 'n', ',' ORDER BY o), '') FROM prescient.job_history h"
                        " LEFT JOIN LATERAL jsonb_array_elements(h.payload -> 'collected') WITH ORDINALITY x(e, o)"
                        " ON true WHERE h.collects GROUP BY h.history_id ORDER BY h.history_id");
    for (const std::string& list : rows) out.push_back(numbers(list));
    return out;
  }
  // The numbers in a pending check's list, or in its collect_pending.
  std::vector<int> pending(const std::string& key, const char* column = "payload -> 'collected'") {
    std::string list;
    *db << "SELECT coalesce(string_agg(e ->> 'n', ',' ORDER BY o), '') FROM prescient.future_job f"
           " CROSS JOIN LATERAL jsonb_array_elements(coalesce(f." + std::string(column) + ", '[]'))"
           " WITH ORDINALITY x(e, o) WHERE f.job_key = :k",
        soci::use(key), soci::into(list);
    return numbers(list);
  }
  static std::vector<int> numbers(const std::string& list) {
    std::vector<int> out;
    for (std::size_t start = 0; start < list.size();) {
      const std::size_t comma = std::min(list.find(',', start), list.size());
      out.push_back(std::stoi(list.substr(start, comma - start)));
      start = comma + 1;
    }
    return out;
  }
};

ScheduleRequest payload_of(const std::string& job, int n, std::chrono::seconds in = 5min,
                           std::chrono::seconds max_wait = 30min) {
  return {.job = job, .entity_name = "user", .entity_key = "7", .job_key = "digest:7", .in = in,
          .payload = {{"n", n}}, .on_conflict = OnConflict::collect, .max_wait = max_wait};
}

std::vector<int> iota(int from, int to) {  // [from, to)
  std::vector<int> out(static_cast<std::size_t>(to - from));
  std::iota(out.begin(), out.end(), from);
  return out;
}

}  // namespace

TEST_CASE("digest: 1 000 payloads over 50 minutes with a 30-minute ceiling fire twice, each payload once, in order") {
  DigestFixture f;
  SlotRunner runner({.database_url = f.url, .runner_id = "r"}, f.registry, f.clock);
  const TimePoint start = f.clock.now();
  std::map<Scheduled::Status, int> statuses;
  for (int i = 0; i < 1000; ++i) {
    const TimePoint at = start + i * 3s;
    f.run_until(runner, f.clock.now(), at);  // what fell due before this payload fires first
    f.clock.set(at);
    ++statuses[f.client.schedule(payload_of("noop", i)).status];
  }
  f.run_until(runner, f.clock.now(), start + 60min);
  // Payloads every 3 s, each asking for 5 minutes on: only the ceiling stops the chain, 30 minutes after its
  // first payload (00:30, with the 600 of 00:00 to 00:29:57). The next payload starts a new list, whose last
  // payload (00:49:57) asks for 00:55.
  CHECK(f.runs() == std::vector<std::vector<int>>{iota(0, 600), iota(600, 1000)});
  CHECK(count_of(*f.db, "SELECT count(*) FROM prescient.job_history WHERE outcome = 'done'"
                        " AND last_check_at IN ('2026-11-21T00:30:00Z', '2026-11-21T00:55:00Z')") == 2);
  CHECK(statuses[Scheduled::Status::created] == 2);
  CHECK(statuses[Scheduled::Status::collected] == 998);
  CHECK(count_of(*f.db, "SELECT count(*) FROM prescient.future_job") == 0);
}

TEST_CASE("digest: 16 sessions collecting 100 payloads each into one key lose none and repeat none") {
  DigestFixture f;
  std::promise<void> go;
  std::shared_future<void> start = go.get_future().share();
  std::vector<std::future<void>> done;
  for (int t = 0; t < 16; ++t) {
    done.push_back(std::async(std::launch::async, [&f, start, t] {
      auto db = connect_to(f.url);
      Client client(*db, {.clock = &f.clock});
      start.wait();
      for (int i = 0; i < 100; ++i) client.schedule(payload_of("noop", t * 100 + i));
    }));
  }
  go.set_value();
  for (auto& d : done) d.get();
  std::vector<int> all = f.pending("digest:7");
  CHECK(all.size() == 1600);
  // Each session's payloads in the order it sent them.
  for (int t = 0; t < 16; ++t) {
    std::vector<int> mine;
    std::copy_if(all.begin(), all.end(), std::back_inserter(mine), [t](int n) { return n / 100 == t; });
    CHECK(mine == iota(t * 100, t * 100 + 100));
  }
  std::sort(all.begin(), all.end());
  CHECK(all == iota(0, 1600));
  CHECK(count_of(*f.db, "SELECT count(*) FROM prescient.future_job") == 1);
}

TEST_CASE("digest: payloads that arrive while a worker holds the check go to its next run, or to a new check") {
  DigestFixture f;
  *f.db << "UPDATE prescient.settings SET workers_may_pin_clock = true";  // the worker's calls below pin the clock
  for (int i = 0; i < 2; ++i) f.client.schedule(payload_of("digest_worker", i));  // due at 00:05
  const auto take = [&](const std::string& now) {
    long long id = 0, token = 0;
    std::string payload;
    *f.db << "SELECT id, lease_token, payload::text FROM prescient.worker_take('w', '{digest_worker}', 1, 60,"
             " CAST(:now AS timestamptz))", soci::use(now), soci::into(id), soci::into(token), soci::into(payload);
    return std::tuple(id, token, nlohmann::json::parse(payload));
  };
  // A settlement's outcome: worker_complete's or worker_fail's call, after the check's id and token.
  const auto settle = [&](const std::string& call, long long id, long long token, const std::string& rest) {
    std::string outcome;
    *f.db << "SELECT outcome FROM prescient." + call + "('w', ARRAY[:id]::bigint[], ARRAY[:t]::bigint[], " + rest + ")",
        soci::use(id), soci::use(token), soci::into(outcome);
    return outcome;
  };
  const auto list = [](const char* json) { return nlohmann::json::parse(json); };
  const auto three_more = [&] {
    f.clock.set(parse_time("2026-11-21T00:05:10Z"));
    for (int i = 2; i < 5; ++i) CHECK(f.client.schedule(payload_of("digest_worker", i)).status ==
                                      Scheduled::Status::collected);
  };

  SECTION("settled done: a new check holds exactly the three, due when they asked") {
    const auto [id, token, payload] = take("2026-11-21T00:05:00Z");
    CHECK(payload == list(R"({"collected": [{"n": 0}, {"n": 1}]})"));
    three_more();
    CHECK(f.pending("digest:7") == std::vector<int>{0, 1});  // the list the worker read is untouched
    CHECK(f.pending("digest:7", "collect_pending") == std::vector<int>{2, 3, 4});
    CHECK(settle("worker_complete", id, token, "ARRAY[NULL]::timestamptz[], NULL, '2026-11-21T00:05:20Z'") ==
          "done");
    CHECK(f.runs() == std::vector<std::vector<int>>{{0, 1}});
    CHECK(f.pending("digest:7") == std::vector<int>{2, 3, 4});
    // Asked for 00:10:10, rounded up to the grid; the ceiling counts from 00:05:10.
    CHECK(count_of(*f.db, "SELECT count(*) FROM prescient.future_job WHERE id <> " + std::to_string(id) +
                              " AND collects AND next_check_at = '2026-11-21T00:11:00Z'"
                              " AND collect_since = '2026-11-21T00:05:10Z' AND collect_pending IS NULL") == 1);
  }
  SECTION("settled with a next time: the next run sees only the three, no later than they asked") {
    const auto [id, token, payload] = take("2026-11-21T00:05:00Z");
    three_more();
    CHECK(settle("worker_complete", id, token,
                 "ARRAY['2026-11-21T01:00:00Z']::timestamptz[], NULL, '2026-11-21T00:05:20Z'") == "rescheduled");
    CHECK(count_of(*f.db, "SELECT count(*) FROM prescient.future_job WHERE check_count = 1"
                          " AND next_check_at = '2026-11-21T00:11:00Z' AND collect_pending IS NULL") == 1);
    // The timeline says where the check was put, not the hour the run answered.
    CHECK(count_of(*f.db, "SELECT count(*) FROM prescient.check_run WHERE next_check_at = '2026-11-21T00:11:00Z'"
                          " AND answered_at = '2026-11-21T01:00:00Z'") == 1);
    const auto [again, token2, next_payload] = take("2026-11-21T00:11:00Z");
    CHECK(again == id);
    CHECK(next_payload == list(R"({"collected": [{"n": 2}, {"n": 3}, {"n": 4}]})"));
  }
  SECTION("a failed attempt keeps the list it ran with, then the three") {
    const auto [id, token, payload] = take("2026-11-21T00:05:00Z");
    three_more();
    CHECK(settle("worker_fail", id, token, "ARRAY['boom'], '2026-11-21T00:05:20Z'") == "retried");
    CHECK(f.pending("digest:7") == iota(0, 5));
    CHECK(count_of(*f.db, "SELECT count(*) FROM prescient.future_job WHERE attempts = 1 AND check_count = 0"
                          " AND collect_pending IS NULL") == 1);
  }
  SECTION("given back unrun: the three join the list") {
    const auto [id, token, payload] = take("2026-11-21T00:05:00Z");
    three_more();
    *f.db << "SELECT prescient.worker_release('w', ARRAY[:id]::bigint[], ARRAY[:t]::bigint[])", soci::use(id),
        soci::use(token);
    CHECK(f.pending("digest:7") == iota(0, 5));
  }
  SECTION("cancelled: nothing comes back; the history keeps the list and the three") {
    take("2026-11-21T00:05:00Z");
    three_more();
    f.client.cancel_job_key("digest:7");
    CHECK(count_of(*f.db, "SELECT count(*) FROM prescient.future_job") == 0);
    CHECK(count_of(*f.db, "SELECT count(*) FROM prescient.job_history WHERE outcome = 'cancelled'"
                          " AND jsonb_array_length(payload -> 'collected') = 2"
                          " AND collect_pending = '[{\"n\": 2}, {\"n\": 3}, {\"n\": 4}]'") == 1);
  }
}

TEST_CASE("digest: enqueues racing a fast-path run wait for its settlement and start the next list") {
  DigestFixture f;
  // Done: the row goes and the first racing enqueue makes a new check. Going on: the row stays, its list
  // emptied by the settlement before the racing enqueues add to it.
  const bool again = GENERATE(false, true);
  const std::string job = again ? "sleepy_again" : "sleepy";
  for (int i = 0; i < 10; ++i) f.client.schedule(payload_of(job, i, 1min));  // due at 00:01
  SlotRunner runner({.database_url = f.url, .runner_id = "r"}, f.registry, f.clock);
  f.clock.set(parse_time("2026-11-21T00:01:00Z"));
  std::future<SlotReport> fired =
      std::async(std::launch::async, [&] { return runner.run_slot(parse_time("2026-11-21T00:01:00Z")); });
  f.started.get_future().wait();  // the run holds the row now
  auto db = connect_to(f.url);
  Client racing(*db, {.clock = &f.clock});
  for (int i = 10; i < 30; ++i) racing.schedule(payload_of(job, i, 1min));
  const SlotReport report = fired.get();
  CHECK(report.done == (again ? 0 : 1));
  CHECK(report.rescheduled == (again ? 1 : 0));
  CHECK(count_of(*f.db, "SELECT count(*) FROM prescient.check_run WHERE next_check_at = '2026-11-21T01:01:00Z'") ==
        (again ? 1 : 0));
  if (!again) CHECK(f.runs() == std::vector<std::vector<int>>{iota(0, 10)});
  CHECK(f.pending("digest:7") == iota(10, 30));
  CHECK(count_of(*f.db, "SELECT count(*) FROM prescient.future_job WHERE check_count = " +
                            std::string(again ? "1" : "0")) == 1);
}

TEST_CASE("digest: enqueues during a long-running run wait in collect_pending, not for the run") {
  DigestFixture f;
  for (int i = 0; i < 10; ++i) f.client.schedule(payload_of("sleepy_slow", i, 1min));
  SlotRunner runner({.database_url = f.url, .runner_id = "r"}, f.registry, f.clock);
  f.clock.set(parse_time("2026-11-21T00:01:00Z"));
  std::future<SlotReport> fired =
      std::async(std::launch::async, [&] { return runner.run_slot(parse_time("2026-11-21T00:01:00Z")); });
  f.started.get_future().wait();
  auto db = connect_to(f.url);
  Client racing(*db, {.clock = &f.clock});
  for (int i = 10; i < 30; ++i) racing.schedule(payload_of("sleepy_slow", i, 1min));
  // The run is still under way (it sleeps 600 ms): nothing waited for it.
  CHECK(fired.wait_for(0s) == std::future_status::timeout);
  CHECK(f.pending("digest:7", "collect_pending") == iota(10, 30));
  CHECK(fired.get().done == 1);
  CHECK(f.runs() == std::vector<std::vector<int>>{iota(0, 10)});
  CHECK(f.pending("digest:7") == iota(10, 30));
}

TEST_CASE("digest: past 10 000 payloads or 1 MiB an enqueue is refused whole with PR400; bad options too") {
  DigestFixture f;
  f.client.schedule(payload_of("noop", 0));
  // 9 999 payloads more, put there directly (one enqueue each would take minutes), then the 10 000th.
  *f.db << "UPDATE prescient.future_job SET payload = jsonb_build_object('collected',"
           " (SELECT jsonb_agg(jsonb_build_object('n', g) ORDER BY g) FROM generate_series(0, 9998) g))";
  CHECK(f.client.schedule(payload_of("noop", 9999)).status == Scheduled::Status::collected);
  const std::string before = "SELECT count(*) FROM prescient.future_job WHERE jsonb_array_length(payload -> 'collected')"
                             " = 10000 AND next_check_at = '2026-11-21T00:05:00Z'";
  REQUIRE(count_of(*f.db, before) == 1);
  const std::string enqueue = "SELECT count(*) FROM prescient.schedule('noop', 'user', '7', '2026-11-21T00:20:00Z',"
                              " 'digest:7', p_on_conflict => 'collect', p_max_wait => '30 minutes',"
                              " p_now => '2026-11-21T00:00:00Z', p_payload => ";
  CHECK(sql_refusal(*f.db, enqueue + "'{\"n\": 10000}')") ==
        std::pair<std::string, std::string>{"PR400", "the check with key 'digest:7' would collect 10001 payloads"
                                                     " (at most 10000): refused, nothing written"});
  CHECK(count_of(*f.db, before) == 1);  // nothing changed, not even the time

  *f.db << "DELETE FROM prescient.future_job";
  const std::string half(600 * 1024, 'x');
  CHECK(sql_refusal(*f.db, enqueue + "jsonb_build_object('x', '" + half + "'))").first.empty());
  const auto [state, message] = sql_refusal(*f.db, enqueue + "jsonb_build_object('y', '" + half + "'))");
  CHECK(state == "PR400");
  CHECK(message == "the check with key 'digest:7' would collect 1228822 bytes of payloads (at most 1048576, 1 MiB):"
                   " refused, nothing written");
  CHECK(count_of(*f.db, "SELECT count(*) FROM prescient.future_job WHERE payload -> 'collected' -> 0 ? 'x'"
                        " AND jsonb_array_length(payload -> 'collected') = 1") == 1);
  // One payload alone over the bound: refused before anything is written.
  *f.db << "DELETE FROM prescient.future_job";
  const std::string whole(1 << 20, 'x');
  CHECK(sql_refusal(*f.db, enqueue + "jsonb_build_object('x', '" + whole + "'))").first == "PR400");
  CHECK(count_of(*f.db, "SELECT count(*) FROM prescient.future_job") == 0);

  // Each new option's bad values, named; a collecting check and another never take each other's enqueues.
  ScheduleRequest r = payload_of("noop", 1);
  r.job_key.reset();
  CHECK_THROWS_WITH(f.client.schedule(r), "collect needs a job key: the enqueues it gathers into one check share it");
  r = payload_of("noop", 1);
  r.max_wait.reset();
  CHECK_THROWS_WITH(f.client.schedule(r),
                    "collect needs max_wait, its ceiling: the longest a payload waits for its digest");
  CHECK(sql_refusal(*f.db, "SELECT count(*) FROM prescient.schedule('noop', 'u', '7', now(), 'k',"
                       " p_on_conflict => 'collect')").first == "PR400");
  f.client.schedule(payload_of("noop", 1));
  r = payload_of("noop", 2);
  r.on_conflict = OnConflict::debounce;
  CHECK_THROWS_WITH(f.client.schedule(r), Catch::Contains("collects payloads: on_conflict debounce would drop them"));
  CHECK(f.pending("digest:7") == std::vector<int>{1});
  CHECK(count_of(*f.db, "SELECT count(*) FROM prescient.future_job") == 1);
}

TEST_CASE("digest: bulk enqueue starts a digest for a new key and joins a pending one") {
  DigestFixture f;
  f.client.schedule(payload_of("noop", 0));
  std::vector<ScheduleRequest> bulk{payload_of("noop", 1), payload_of("noop", 2)};
  bulk[1].job_key = "digest:8";
  const std::vector<Scheduled> done = f.client.schedule_many(bulk);
  CHECK(done[0].status == Scheduled::Status::collected);
  CHECK(done[1].status == Scheduled::Status::created);
  CHECK(f.pending("digest:7") == std::vector<int>{0, 1});
  CHECK(f.pending("digest:8") == std::vector<int>{2});
  CHECK(count_of(*f.db, "SELECT count(*) FROM prescient.future_job WHERE collects") == 2);
}

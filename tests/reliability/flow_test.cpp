// Flow control with real daemons (child processes) on a real PostgreSQL: limits hold across every
// runner of the cluster, survive a server restart, and change while the daemons run. The ledger (the
// `ledger` test class) records when each run started, by the server's clock.
#include <soci/soci.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <set>
#include <thread>

#include "daemons.hpp"
#include "prescient/client.hpp"
#include "prescient/clock.hpp"
#include "prescient/time_text.hpp"
#include "process.hpp"
#include "test_database.hpp"

using namespace prescient;
using namespace prescient::testing;
using namespace std::chrono_literals;

namespace {

// `count` ledger checks of payload.tenant `tenant`, due at `at`, each holding its run `sleep_ms`.
void schedule_herd(soci::session& db, long count, const std::string& tenant, TimePoint at, int sleep_ms = 0) {
  SystemClock clock;
  Client client(db, {.clock = &clock});
  std::vector<ScheduleRequest> requests;
  for (long i = 0; i < count; ++i) {
    requests.push_back({.job = "ledger", .entity_name = tenant, .entity_key = std::to_string(i), .at = at,
                        .payload = {{"tenant", tenant}, {"sleep_ms", sleep_ms}}});
  }
  client.schedule_many(requests);
}

TimePoint seconds_ahead(int seconds) {
  return std::chrono::ceil<std::chrono::seconds>(SystemClock().now() + std::chrono::seconds(seconds));
}

// Microseconds since the epoch at which each run of `tenant` started, sorted.
std::vector<long long> starts_of(soci::session& db, const std::string& tenant) {
  std::vector<long long> starts;
  soci::rowset<long long> rows =
      (db.prepare << "SELECT prescient.us(l.ran_at) FROM ledger l JOIN prescient.job_history h ON h.id = l.check_id"
                     " WHERE h.payload->>'tenant' = :tenant ORDER BY 1",
       soci::use(tenant));
  for (const long long us : rows) starts.push_back(us);
  return starts;
}

// The most starts within any window of `width`.
std::size_t most_within(const std::vector<long long>& sorted, std::chrono::microseconds width) {
  std::size_t most = 0;
  for (std::size_t i = 0, j = 0; j < sorted.size(); ++j) {
    while (sorted[j] - sorted[i] >= width.count()) ++i;
    most = std::max(most, j - i + 1);
  }
  return most;
}

// The most runs of `tenant` under way at once, each run taken as `hold` from its start.
int most_at_once(soci::session& db, const std::string& tenant, std::chrono::microseconds hold) {
  std::vector<std::pair<long long, int>> edges;
  for (const long long start : starts_of(db, tenant)) {
    edges.emplace_back(start, 1);
    edges.emplace_back(start + hold.count(), -1);
  }
  std::sort(edges.begin(), edges.end());  // an end sorts before a start at the same microsecond
  int now = 0, most = 0;
  for (const auto& [at, delta] : edges) most = std::max(most, now += delta);
  return most;
}

void set_limit(const std::string& url, std::vector<std::string> args) {
  args.insert(args.begin(), {"limits", "set"});
  args.insert(args.end(), {"--db", url});
  const ProcessResult set = run_prescient(args);
  INFO(set.err);
  REQUIRE(set.exit_code == 0);
}

// A private cluster (restarted by the test), stopped and removed at the end.
struct PrivateCluster {
  std::filesystem::path dir = std::filesystem::temp_directory_path() / ("prescient-flow-" + std::to_string(::getpid()));
  std::string pg = "PRESCIENT_PGDATA=" + (dir / "pg").string() + " " PRESCIENT_SOURCE_DIR "/scripts/pg.sh";
  std::string url;
  PrivateCluster() {
    url = shell(pg + " start 2>/dev/null");
    while (!url.empty() && (url.back() == '\n' || url.back() == ' ')) url.pop_back();
  }
  ~PrivateCluster() {
    // Whatever its status: a cluster that is down already is what this wants.
    [[maybe_unused]] const int stopped = std::system((pg + " stop >/dev/null 2>&1").c_str());
    std::filesystem::remove_all(dir);
  }
};

}  // namespace

TEST_CASE("flow: a rate holds across 4 daemons and a PostgreSQL restart; other tenants are not held back") {
  PrivateCluster cluster;
  REQUIRE(run_prescient({"migrate", "--slot", "1s", "--db", cluster.url}).exit_code == 0);
  set_limit(cluster.url, {"crm", "--key", "payload.tenant", "--value", "crm", "--rate", "200/s"});
  const long first = soak() ? 10000 : 1400, second = soak() ? 2000 : 400;
  auto db = connect_to(cluster.url);
  declare_test_classes(*db);
  create_ledger(*db);
  const TimePoint herd = seconds_ahead(3);
  schedule_herd(*db, first, "crm", herd);
  schedule_herd(*db, 100, "small", herd);
  {
    Daemons daemons(cluster.url, 4);
    while (SystemClock().now() < herd + 3s) std::this_thread::sleep_for(50ms);
    daemons.stop();  // mid-herd: what is left holds its reservations in the database
  }
  CHECK(count_of(*db, "SELECT count(*) FROM prescient.future_job") > 0);
  // The small tenant's checks were not held behind the big one's.
  CHECK(count_of(*db, "SELECT count(*) FROM prescient.job_history WHERE payload->>'tenant' = 'small'") == 100);
  db.reset();
  shell(cluster.pg + " restart 2>/dev/null");
  db = connect_to(cluster.url);
  // More of the same key value after the restart: charged after the reservations made before it.
  schedule_herd(*db, second, "crm", seconds_ahead(2));
  std::set<int> runners;
  {
    Daemons daemons(cluster.url, 4);
    wait_until_all_settled(*db, 120s);
    daemons.stop();
  }
  verify_ledger(*db, first + second + 100, {}, 1);  // every check once, none lost, none before its time
  const std::vector<long long> starts = starts_of(*db, "crm");
  REQUIRE(starts.size() == static_cast<std::size_t>(first + second));
  CHECK(most_within(starts, 5s) <= 1050);  // 200/s: 1 000 in 5 s, and never 5 % more
  // Reservations are exact; a run starts after its reservation by its runner thread's lag (a first connection,
  // a slow job), which shifts that thread's starts onto the next reservations: shorter windows see it
  // (docs/flow-control.md, "The guarantees": at most rate x (W + lag + 50 ms) + burst). A lag of 0.35 s is
  // allowed: 0.27 s was seen in CI, the whole suite beside this test on two cores.
  CHECK(most_within(starts, 1s) <= 280);
  // The rate is used, not just respected: the herd took about (first + second) / 200 seconds of runs.
  CHECK(starts.back() - starts.front() >= (first + second) * 1000000LL / 200 - 1000000);
  CHECK(count_of(*db, "SELECT sum(deferred) FROM prescient.flow_figure WHERE key_value = 'crm'") >= first / 2);
  CHECK(count_of(*db, "SELECT count(*) FROM prescient.flow_deferral WHERE limit_name = 'crm'") ==
        count_of(*db, "SELECT sum(deferred) FROM prescient.flow_figure WHERE key_value = 'crm'"));
}

TEST_CASE("flow: a concurrency limit holds across 2 daemons, per key value") {
  const std::string url = create_migrated_database(1);
  auto db = connect_to(url);
  create_ledger(*db);
  set_limit(url, {"per-customer", "--key", "payload.tenant", "--concurrency", "3"});
  const TimePoint at = seconds_ahead(2);
  schedule_herd(*db, 30, "acme", at, 200);
  schedule_herd(*db, 30, "globex", at, 200);
  {
    Daemons daemons(url, 2);
    wait_until_all_settled(*db, 60s);
    daemons.stop();
  }
  verify_ledger(*db, 60, {}, 1);
  for (const char* tenant : {"acme", "globex"}) {
    INFO(tenant);
    const int most = most_at_once(*db, tenant, 200ms);
    CHECK(most <= 3);
    CHECK(most >= 2);  // four workers: the limit, not one worker, is what bounds it
  }
}

TEST_CASE("flow: a limit set or removed while daemons run takes effect within a slot") {
  const std::string url = create_migrated_database(1);
  auto db = connect_to(url);
  create_ledger(*db);
  Daemons daemons(url, 2);
  wait_until_runners_seen(*db, 2, 30s);  // running, with no limit
  set_limit(url, {"slow", "--key", "payload.tenant", "--rate", "20/s"});
  schedule_herd(*db, 60, "limited", seconds_ahead(2));
  wait_until_all_settled(*db, 30s);
  const std::vector<long long> limited = starts_of(*db, "limited");
  CHECK(most_within(limited, 1s) <= 25);  // 20/s, and a runner thread's lag (docs/flow-control.md)
  CHECK(limited.back() - limited.front() >= 2500000);
  REQUIRE(run_prescient({"limits", "remove", "slow", "--db", url}).exit_code == 0);
  schedule_herd(*db, 60, "free", seconds_ahead(2));
  wait_until_all_settled(*db, 30s);
  const std::vector<long long> free = starts_of(*db, "free");
  CHECK(free.back() - free.front() < 1000000);
  daemons.stop();
}

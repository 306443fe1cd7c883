// Automatic failover (docs/operations.md, "High availability"): the cluster of scripts/ha.sh (three
// PostgreSQL nodes under Patroni, synchronous_mode_strict, etcd, HAProxy); two daemons and two worker
// clients (their conformance drivers: Python on the multi-host URL and Go through the proxy in the kill
// case, Java and Node in the others, Node always through the proxy); checks due over the next slots, half
// of the `ledger` class (the daemons') and half of a worker class; a client enqueueing all along; a reader
// following the outbox; in the switchover, `prescient web` on the multi-host URL, which must find a check
// committed after the failover, and `prescient sweep` after it. Then faults: the leader node killed
// mid-run (kill -9 of its Patroni and its postmaster; twice, the second once the killed node has rejoined),
// its Patroni frozen (SIGSTOP: everyone through the proxy, since the frozen node's PostgreSQL still takes
// connections as a primary), or a switchover. Every check the client saw committed settles exactly once, none runs before
// its slot; each settled ledger check's event is in the outbox once and the reader read it once; and each
// daemon and each worker settles again within the election (or the switchover), one slot and 2 s. The
// election ends, for a writer, when the new leader takes a commit (in strict mode, once a standby streams
// from it).
// PRESCIENT_SOAK=1: five kills (the killed node rejoining before the next) and 30 000 checks.
#include <signal.h>
#include <soci/soci.h>
#include <unistd.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <future>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <thread>

#include "daemons.hpp"
#include "db/connection.hpp"
#include "db/pg_runner_store.hpp"
#include "db/pq.hpp"
#include "http.hpp"
#include "prescient/client.hpp"
#include "prescient/clock.hpp"
#include "prescient/errors.hpp"
#include "prescient/events.hpp"
#include "prescient/time_text.hpp"
#include "process.hpp"
#include "test_database.hpp"
#include "wait.hpp"
#include "worker_drivers.hpp"

using namespace prescient;
using namespace prescient::testing;
using namespace std::chrono_literals;

namespace {

using SteadyTime = std::chrono::steady_clock::time_point;

// scripts/ha.sh in a directory of its own; stopped and removed when it goes.
class HaCluster {
 public:
  HaCluster()
      : dir_(std::filesystem::temp_directory_path() / ("prescient-ha-" + std::to_string(::getpid()))),
        script_("PRESCIENT_HA_DIR=" + dir_.string() + " " PRESCIENT_SOURCE_DIR "/scripts/ha.sh") {}
  ~HaCluster() {
    // Whatever its state: a node killed already is what this wants.
    [[maybe_unused]] const int stopped = std::system((script_ + " stop >/dev/null 2>&1").c_str());
    std::filesystem::remove_all(dir_);
  }
  HaCluster(const HaCluster&) = delete;
  HaCluster& operator=(const HaCluster&) = delete;
  // Starts what is not running (everything, the first time; a killed node, later).
  void start() {
    const std::vector<std::string> urls = lines_of(shell(script_ + " start 2>/dev/null"));
    REQUIRE(urls.size() == 2);
    multi_host_url_ = urls[0];
    proxy_url_ = urls[1];
  }
  std::string kill_leader() { return trimmed(shell(script_ + " kill-leader 2>/dev/null")); }
  std::string freeze_leader() { return trimmed(shell(script_ + " freeze-leader 2>/dev/null")); }
  void switchover() { shell(script_ + " switchover >/dev/null 2>&1"); }
  // The node holding the leader key, "" when none does.
  std::string leader() const {
    FILE* pipe = ::popen((script_ + " leader 2>/dev/null").c_str(), "r");
    char buffer[64] = {};
    const std::size_t n = pipe ? std::fread(buffer, 1, sizeof buffer - 1, pipe) : 0;
    if (pipe) ::pclose(pipe);
    return trimmed(std::string(buffer, n));
  }
  const std::string& multi_host_url() const { return multi_host_url_; }
  const std::string& proxy_url() const { return proxy_url_; }

 private:
  std::filesystem::path dir_;
  std::string script_;
  std::string multi_host_url_, proxy_url_;
};

// A session on whichever node leads now: tries until one takes it (within the limit).
std::unique_ptr<soci::session> session_on_leader(const std::string& url, std::chrono::seconds limit = 60s) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  while (true) {
    try {
      return connect_to(url);
    } catch (const std::exception& e) {
      if (std::chrono::steady_clock::now() >= deadline) FAIL("no leader took a session: " << e.what());
      std::this_thread::sleep_for(100ms);
    }
  }
}

// The worker class of the test: run by the Python and the Go worker. A failed attempt (a handler's ledger
// session lost with the leader) is tried again a second later.
constexpr const char* kWorkerClass = "ha_work";
// The event the `ledger` class emits on each run (tests/plugins/test_jobs.cpp).
constexpr const char* kLedgerEvent = "ledger.ran";

// A client enqueueing a check every 50 ms, due 1 to 3 s later, of the ledger class and the worker class in
// turn, through its own session on the multi-host URL. A failure on a session (it died with the leader)
// leaves that check's outcome unknown, and it connects again; while no node takes a session, it enqueues
// nothing. Keeps the keys of the checks it saw committed.
class Enqueuer {
 public:
  explicit Enqueuer(std::string url) : url_(std::move(url)), thread_([this] { run(); }) {}
  ~Enqueuer() { stop(); }
  Enqueuer(const Enqueuer&) = delete;
  Enqueuer& operator=(const Enqueuer&) = delete;
  void stop() {
    stop_ = true;
    if (thread_.joinable()) thread_.join();
  }
  std::vector<std::string> committed() {
    const std::lock_guard lock(mutex_);
    return committed_;
  }
  long unknown() const { return unknown_; }

 private:
  void run() {
    SystemClock clock;
    std::unique_ptr<soci::session> db;
    for (long n = 0; !stop_; ++n) {
      const std::string key = "stream-" + std::to_string(n);
      if (!db) {
        try {
          db = connect_to(url_);
        } catch (const std::exception&) {
          std::this_thread::sleep_for(50ms);
          continue;
        }
      }
      try {
        Client(*db, {.clock = &clock})
            .schedule({.job = n % 2 == 0 ? "ledger" : kWorkerClass, .entity_name = "ha", .entity_key = key,
                       .at = std::chrono::ceil<std::chrono::seconds>(clock.now() + 1s + std::chrono::seconds(n % 3))});
        const std::lock_guard lock(mutex_);
        committed_.push_back(key);
      } catch (const std::exception&) {
        db.reset();
        ++unknown_;
      }
      std::this_thread::sleep_for(50ms);
    }
  }

  std::string url_;
  std::atomic<bool> stop_{false};
  std::atomic<long> unknown_{0};
  std::mutex mutex_;
  std::vector<std::string> committed_;
  std::thread thread_;
};

// An application following the outbox: an EventReader on a session of its own, reading the ledger's events
// from the beginning. A failure (the session died with the leader) leaves its cursor where it was, and it
// connects again. Keeps the ids it read, in order, and whether the cursor ever failed to move forward.
class OutboxReader {
 public:
  explicit OutboxReader(std::string url) : url_(std::move(url)), thread_([this] { run(); }) {}
  ~OutboxReader() { finish(); }
  OutboxReader(const OutboxReader&) = delete;
  OutboxReader& operator=(const OutboxReader&) = delete;
  // Call once nothing writes any more: it reads until a read finds nothing, then stops.
  void finish() {
    finishing_ = true;
    if (thread_.joinable()) thread_.join();
  }
  const std::vector<std::string>& read_ids() const { return ids_; }
  long failures() const { return failures_; }
  long backward_steps() const { return backward_steps_; }

 private:
  void run() {
    EventCursor cursor;
    std::unique_ptr<soci::session> db;
    const auto limit = std::chrono::minutes(5);  // a reader that never gets through ends; the verdict fails
    const auto started = std::chrono::steady_clock::now();
    while (std::chrono::steady_clock::now() < started + limit) {
      const bool last_look = finishing_;  // nothing is written any more: a read that finds nothing is the end
      try {
        if (!db) db = connect_to(url_);
        const std::vector<EventRow> events = EventReader(*db).read(cursor, std::string(kLedgerEvent), 500);
        for (const EventRow& event : events) {
          const EventCursor next{event.tx, event.seq};
          if (std::make_pair(std::stoull(next.tx), next.seq) <= std::make_pair(std::stoull(cursor.tx), cursor.seq)) {
            ++backward_steps_;
          }
          ids_.push_back(event.id);
          cursor = next;
        }
        if (!events.empty()) continue;
        if (last_look) return;
      } catch (const std::exception&) {
        db.reset();
        ++failures_;
      }
      std::this_thread::sleep_for(100ms);
    }
  }

  std::string url_;
  std::atomic<bool> finishing_{false};
  std::atomic<long> failures_{0};
  long backward_steps_ = 0;
  std::vector<std::string> ids_;
  std::thread thread_;
};

// The time of each runner's first settlement at or after `since` (the server's clock: this machine's).
std::map<std::string, TimePoint> first_settlements_since(soci::session& db, TimePoint since) {
  std::map<std::string, TimePoint> first;
  const std::string at = format_time(since);
  soci::rowset<soci::row> rows = (db.prepare << "SELECT finished_by, prescient.us(min(finished_at))"
                                                " FROM prescient.job_history WHERE finished_at >= :at::timestamptz"
                                                " GROUP BY finished_by",
                                  soci::use(at));
  for (const soci::row& row : rows) first[row.get<std::string>(0)] = from_unix_micros(row.get<long long>(1));
  return first;
}

// `prescient web` on the multi-host URL, on a free loopback port: a dashboard open across the failover.
class Dashboard {
 public:
  Dashboard(const std::string& url, const std::string& log) : port_(free_loopback_port()) {
    pid_ = start_prescient({"web", "--db", url, "--addr", "127.0.0.1:" + std::to_string(port_)}, "/dev/null", log);
    wait_until("prescient web to answer", 30s, [&] { return http_get(port_, "/api/config").has_value(); }, 100ms);
    // Sessions in its pool, as a dashboard in use has: 4 pages' reads at once.
    std::vector<std::future<std::optional<std::string>>> reads;
    for (int i = 0; i < 4; ++i) {
      reads.push_back(std::async(std::launch::async, [this] { return http_get(port_, "/api/jobs"); }));
    }
    for (auto& read : reads) REQUIRE(read.get());
  }
  ~Dashboard() {
    if (pid_ > 0) {
      ::kill(pid_, SIGKILL);
      wait_for(pid_);
    }
  }
  Dashboard(const Dashboard&) = delete;
  Dashboard& operator=(const Dashboard&) = delete;

  // A check committed on the leader now (of the ledger class, due at the next slot; entity `web`) is found
  // through the dashboard's API within 2 s: it reads from the new leader. One answer may fail first (on a
  // session to the old leader, which closes the others with it). Prints how long that took.
  void finds_a_check_committed_now(soci::session& leader, const std::string& key) {
    SystemClock clock;
    const Scheduled probe = Client(leader, {.clock = &clock})
                                .schedule({.job = "ledger", .entity_name = "web", .entity_key = key,
                                           .at = std::chrono::ceil<std::chrono::seconds>(clock.now() + 1s)});
    const auto committed = std::chrono::steady_clock::now();
    int failed = 0;
    while (!http_get(port_, "/api/checks/" + std::to_string(probe.id))) {
      ++failed;
      REQUIRE(std::chrono::steady_clock::now() < committed + 30s);
      std::this_thread::sleep_for(50ms);
    }
    const auto found = std::chrono::steady_clock::now() - committed;
    WARN("the dashboard found check " << probe.id << ", committed after the failover, "
                                      << std::chrono::duration_cast<std::chrono::milliseconds>(found).count()
                                      << " ms later, after " << failed << " failed answer(s)");
    CHECK(found <= 2s);
    CHECK(failed <= 1);
  }
  // SIGTERM: it must stop cleanly (exit 0).
  void stop() {
    REQUIRE(::kill(pid_, SIGTERM) == 0);
    CHECK(wait_for(pid_) == 0);
    pid_ = -1;
  }

 private:
  int port_;
  pid_t pid_ = -1;
};

// `prescient sweep` after the failover, on the multi-host URL, with no daemon left: it runs the checks of
// slots missed before it (built-in class noop, entity `sweep`, scheduled on a clock a minute behind, so
// due in the slots before the current one), all of them, once.
void sweeps_missed_slots(soci::session& leader, const std::string& multi_host_url) {
  constexpr long kMissed = 100;
  ManualClock behind(SystemClock().now() - 60s);
  std::vector<ScheduleRequest> requests;
  for (long i = 0; i < kMissed; ++i) {
    requests.push_back({.job = "noop", .entity_name = "sweep", .entity_key = std::to_string(i),
                        .at = std::chrono::ceil<std::chrono::seconds>(behind.now() + 1s) + std::chrono::seconds(i % 10)});
  }
  Client(leader, {.clock = &behind}).schedule_many(requests);
  const auto started = std::chrono::steady_clock::now();
  const ProcessResult swept = run_prescient({"sweep", "--db", multi_host_url, "--runner-id", "ha-sweep"});
  INFO(swept.err);
  CHECK(swept.exit_code == 0);
  const auto took = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - started);
  WARN("prescient sweep after the failover: " << swept.out << "(" << took.count() << " ms)");
  CHECK(count_of(leader, "SELECT count(*) FROM prescient.job_history WHERE finished_by = 'ha-sweep' AND"
                         " entity_name = 'sweep' AND outcome = 'done'") == kMissed);
}

enum class Fault { kill, freeze, switchover };

// How a worker client reaches the leader: the multi-host URL (libpq's, psycopg's, pgx's and pgjdbc's; not
// node-postgres's) or HAProxy's address.
enum class Reach { multi_host, proxy };

struct WorkerPlan {
  std::string language;  // its conformance driver's folder under jobs/workers
  Reach reach;
};

// A run under load: `failovers` faults of one kind, `planned` checks due over `slots` slots. The daemons,
// the client and the outbox's reader are on the multi-host URL or (`through_proxy`) on HAProxy's; each
// worker client as its plan says. `sweep_and_web`: `prescient web` on the multi-host URL all along, and
// `prescient sweep` once the faults are over.
struct LoadRun {
  Fault fault;
  bool through_proxy = false;
  std::vector<WorkerPlan> workers;
  int failovers = 1;
  long planned = 0;
  int slots = 0;
  bool sweep_and_web = false;
};

void failover_under_load(const LoadRun& run) {
  const Fault fault = run.fault;
  const int failovers = run.failovers;
  const long planned = run.planned;
  const int slots = run.slots;
  // The Go driver, built by this test into a directory of its own; the Java and Node drivers run from the
  // workers' own build (the CTest fixtures workers_java and workers_node), Python's from the sources.
  const std::string workers_dir = PRESCIENT_HA_WORKERS_DIR;
  std::filesystem::create_directories(workers_dir);
  const auto build_dir_of = [&](const std::string& language) {
    return language == "go" ? workers_dir : std::string(PRESCIENT_WORKERS_BUILD_DIR);
  };
  for (const WorkerPlan& plan : run.workers) {
    if (plan.language == "go") build_go_driver(workers_dir);
  }
  HaCluster cluster;
  const auto started = std::chrono::steady_clock::now();
  cluster.start();
  const auto ms = [](auto d) { return std::chrono::duration_cast<std::chrono::milliseconds>(d).count(); };
  WARN("scripts/ha.sh start took " << ms(std::chrono::steady_clock::now() - started) << " ms");
  const std::string url = run.through_proxy ? cluster.proxy_url() : cluster.multi_host_url();
  {
    const ProcessResult migrated = run_prescient({"migrate", "--slot", "1s", "--db", url});
    INFO(migrated.err);
    REQUIRE(migrated.exit_code == 0);
  }
  for (const std::vector<std::string>& declare :
       {std::vector<std::string>{"jobs", "add", kWorkerClass, "--worker"},
        std::vector<std::string>{"jobs", "set", kWorkerClass, "--backoff", "1s", "--max-attempts", "10"}}) {
    const ProcessResult declared = run_prescient(with_db(declare, url));
    INFO(declared.err);
    REQUIRE(declared.exit_code == 0);
  }
  {
    auto db = connect_to(url);
    declare_test_classes(*db);
    create_ledger(*db);
    create_conformance_ledger(*db);
  }

  std::vector<std::string> committed;
  long unknown = 0;
  std::vector<std::string> events_read;
  long reader_failures = 0, reader_backward_steps = 0;
  {
    const auto worker_log = [&](const std::string& name) { return workers_dir + "/" + name + ".log"; };
    std::vector<std::unique_ptr<WorkerDriver>> workers;
    for (const WorkerPlan& plan : run.workers) {
      const std::string name = "ha-" + plan.language;
      const std::string& worker_url = plan.reach == Reach::proxy ? cluster.proxy_url() : cluster.multi_host_url();
      workers.push_back(std::make_unique<WorkerDriver>(plan.language, name, kWorkerClass, worker_url,
                                                       build_dir_of(plan.language), worker_log(name)));
    }
    const std::size_t runners = 2 + workers.size();  // the two daemons and the workers
    Daemons daemons(url, 2);
    std::optional<Dashboard> dashboard;
    if (run.sweep_and_web) dashboard.emplace(cluster.multi_host_url(), workers_dir + "/web.log");
    Enqueuer enqueuer(url);
    OutboxReader reader(url);
    wait_until_runners_seen(*session_on_leader(url), 2, 30s);
    // `planned` checks over the next `slots` one-second slots, the first 3 s ahead, of the two classes in
    // turn, once the daemons fire (however long they took to start). Each fault must come before the last
    // slot, so that the checks due during the election wait for every runner when it ends. Otherwise only
    // the client's checks are left, due seconds after it resumes enqueueing, and a runner's gap measures
    // the lack of work, not its recovery.
    TimePoint last_planned;
    {
      SystemClock clock;
      const TimePoint first = std::chrono::ceil<std::chrono::seconds>(clock.now() + 3s);
      last_planned = first + std::chrono::seconds(slots - 1);
      std::vector<ScheduleRequest> requests;
      for (long i = 0; i < planned; ++i) {
        requests.push_back({.job = i % 2 == 0 ? "ledger" : kWorkerClass, .entity_name = "ha",
                            .entity_key = std::to_string(i), .at = first + std::chrono::seconds(i % slots)});
      }
      Client(*session_on_leader(url), {.clock = &clock}).schedule_many(requests);
    }
    for (int f = 0; f < failovers; ++f) {
      std::this_thread::sleep_for(f == 0 ? 5s : 10s);  // a few slots fired on this leader
      const TimePoint fault_at = SystemClock().now();
      INFO("fault " << f + 1 << " came " << ms(last_planned - fault_at) << " ms before the planned checks' last slot");
      REQUIRE(last_planned - fault_at >= 5s);
      const SteadyTime fault_steady = std::chrono::steady_clock::now();
      std::string hit;
      switch (fault) {
        case Fault::kill: hit = cluster.kill_leader(); break;
        case Fault::freeze: hit = cluster.freeze_leader(); break;
        case Fault::switchover:
          hit = cluster.leader();
          cluster.switchover();
          break;
      }
      std::string leader;
      while ((leader = cluster.leader()).empty() || leader == hit) {
        REQUIRE(std::chrono::steady_clock::now() < fault_steady + 60s);
        std::this_thread::sleep_for(100ms);
      }
      const auto election = std::chrono::steady_clock::now() - fault_steady;
      // And takes a commit: in strict mode, once a standby streams from it. The election, as far as a
      // writer can tell, ends here.
      wait_until("the new leader to take a commit", 30s, [&] {
        try {
          count_of(*connect_to(url), "SELECT txid_current()");
          return true;
        } catch (const std::exception&) {
          return false;
        }
      }, 50ms);
      const TimePoint writable_at = SystemClock().now();
      const auto writable = std::chrono::steady_clock::now() - fault_steady;
      if (dashboard) dashboard->finds_a_check_committed_now(*session_on_leader(url), "probe-" + std::to_string(f + 1));
      // Each daemon and each worker settles on the new leader within one slot and 2 s of its first commit.
      // (Counted from there, not from the fault: a frozen leader, or one being switched over, still settles
      // for a while.)
      constexpr auto kBound = 1s + 2s;
      std::map<std::string, TimePoint> resumed;
      while (resumed.size() < runners && std::chrono::steady_clock::now() < fault_steady + writable + kBound + 10s) {
        std::this_thread::sleep_for(200ms);
        try {
          resumed = first_settlements_since(*connect_to(url), writable_at);
        } catch (const std::exception&) {
          // A session lost again: the next look takes another.
        }
      }
      const char* what = fault == Fault::kill ? "killed" : fault == Fault::freeze ? "frozen" : "switched over";
      WARN("fault " << f + 1 << ": " << hit << " " << what << ", " << leader << " leading after " << ms(election)
                    << " ms, taking commits after " << ms(writable) << " ms; bound " << ms(writable + kBound)
                    << " ms; the planned checks' last slot " << ms(last_planned - fault_at) << " ms after the fault");
      CHECK(resumed.size() == runners);
      for (const auto& [runner, at] : resumed) {
        WARN("  " << (runner.rfind("ha-", 0) == 0 ? "worker " : "runner ") << runner << " settled again "
                  << ms(at - fault_at) << " ms after the fault, " << ms(at - writable_at)
                  << " ms after the first commit");
        CHECK(at - writable_at <= kBound);
      }
      for (const auto& worker : workers) CHECK(resumed.count(worker->name()) == 1);
      CHECK(daemons.all_running());
      for (const auto& worker : workers) CHECK(worker->running());
      if (f + 1 < failovers) {
        cluster.start();  // the killed node started again, the frozen one thawed
        wait_until("the node hit to stream again", 60s, [&] {
          try {
            return count_of(*connect_to(url), "SELECT count(*) FROM pg_stat_replication") == 2;
          } catch (const std::exception&) {
            return false;
          }
        }, 200ms);
      }
    }
    // The planned checks' last slot has passed, and the client's, once it stops.
    enqueuer.stop();
    committed = enqueuer.committed();
    unknown = enqueuer.unknown();
    wait_until_all_settled(*session_on_leader(url), 120s);
    CHECK(daemons.all_running());
    daemons.stop();
    for (const auto& worker : workers) worker->stop();
    if (dashboard) dashboard->stop();
    reader.finish();
    events_read = reader.read_ids();
    reader_failures = reader.failures();
    reader_backward_steps = reader.backward_steps();
  }

  auto db = session_on_leader(url);
  if (run.sweep_and_web) sweeps_missed_slots(*db, cluster.multi_host_url());
  WARN(committed.size() << " checks enqueued during the run, " << unknown << " with their outcome unknown");
  CHECK(committed.size() > 40);  // one every 50 ms for the run; fewer on a loaded machine (92 seen in CI)
  // Every committed check settled exactly once (the client's may have more beside them: those whose
  // outcome it does not know may have committed too), none before its slot; repeats of runs only within
  // the batches in flight at a kill (2 daemons x 2 workers x 50, each failover).
  CHECK(count_of(*db, "SELECT count(*) FROM prescient.future_job") == 0);
  CHECK(count_of(*db, "SELECT count(*) - count(DISTINCT id) FROM prescient.job_history") == 0);
  CHECK(count_of(*db, "SELECT count(*) FROM prescient.job_history WHERE entity_name = 'ha' AND entity_key NOT LIKE"
                      " 'stream-%'") == planned);
  std::string keys = "{";
  for (const std::string& key : committed) keys += (keys.size() > 1 ? "," : "") + key;
  keys += "}";
  long long settled_of_committed = 0;
  *db << "SELECT count(*) FROM prescient.job_history WHERE entity_key = ANY (:keys::text[])",
      soci::into(settled_of_committed), soci::use(keys);
  CHECK(settled_of_committed == static_cast<long long>(committed.size()));
  CHECK(count_of(*db, "SELECT count(*) FROM prescient.job_history WHERE outcome <> 'done'") == 0);
  CHECK(count_of(*db, "SELECT count(*) FROM ledger WHERE ran_at < slot") == 0);
  CHECK(count_of(*db, "SELECT count(*) FROM conformance_ledger WHERE started_at < due_at") == 0);
  CHECK(count_of(*db, "SELECT count(*) FROM prescient.job_history h WHERE job = 'ledger' AND NOT EXISTS"
                      " (SELECT FROM ledger l WHERE l.check_id = h.id)") == 0);
  CHECK(count_of(*db, "SELECT count(*) FROM prescient.job_history h WHERE job = '" + std::string(kWorkerClass) +
                          "' AND NOT EXISTS (SELECT FROM conformance_ledger l WHERE l.check_id = h.id)") == 0);
  // Repeats only within the batches in flight at each failover: a daemon's 2 workers x 50, a worker's
  // take of 50 and its 2 running.
  const long long repeats = count_of(*db, "SELECT count(*) - count(DISTINCT check_id) FROM ledger");
  WARN(repeats << " run(s) of the daemons repeated after a failover");
  CHECK(repeats <= 2LL * 2 * 50 * failovers);
  soci::rowset<soci::row> worker_repeats =
      (db->prepare << "SELECT language, count(*) - count(DISTINCT check_id) FROM conformance_ledger GROUP BY language"
                      " ORDER BY language");
  long long all_worker_repeats = 0;
  for (const soci::row& row : worker_repeats) {
    WARN(row.get<long long>(1) << " run(s) of the " << row.get<std::string>(0) << " worker repeated after a failover");
    all_worker_repeats += row.get<long long>(1);
  }
  CHECK(all_worker_repeats <= 2LL * (50 + 2) * failovers);
  // The outbox: each settled ledger check's event (its id <check id>-<check_count>), and no other; the
  // reader read each of them once, its cursor always moving forward, across every failover.
  const long long ledger_settled = count_of(*db, "SELECT count(*) FROM prescient.job_history WHERE job = 'ledger'");
  CHECK(count_of(*db, "SELECT count(*) FROM prescient.job_history h WHERE job = 'ledger' AND NOT EXISTS"
                      " (SELECT FROM prescient.event e WHERE e.id = h.id || '-' || h.check_count)") == 0);
  CHECK(count_of(*db, "SELECT count(*) FROM prescient.event WHERE type = '" + std::string(kLedgerEvent) + "'") ==
        ledger_settled);
  WARN("the outbox reader read " << events_read.size() << " events, " << ledger_settled
                                 << " ledger checks settled; its reads failed " << reader_failures << " times");
  CHECK(std::set<std::string>(events_read.begin(), events_read.end()).size() == events_read.size());
  CHECK(static_cast<long long>(events_read.size()) == ledger_settled);
  CHECK(reader_backward_steps == 0);
}

}  // namespace

TEST_CASE("automatic failover under 2 daemons and 2 workers: the leader killed twice, every committed check "
          "settles once, each event is read once, firing resumes") {
  failover_under_load({.fault = Fault::kill,
                       .workers = {{"python", Reach::multi_host}, {"go", Reach::proxy}},
                       .failovers = soak() ? 5 : 2,
                       .planned = soak() ? 30000 : 6000,
                       .slots = soak() ? 240 : 60});
}

// (Catch wraps a case's name under its first ": ", which must come within the first line.)
// The Java and Node workers (the fixtures build them: tag [java-node]), Node's through the proxy in any case:
// node-postgres has no multi-host URL.
TEST_CASE("a frozen leader under 2 daemons and 2 workers: its Patroni stopped, through the proxy, the same",
          "[java-node]") {
  failover_under_load({.fault = Fault::freeze,
                       .through_proxy = true,
                       .workers = {{"java", Reach::proxy}, {"node", Reach::proxy}},
                       .planned = 6000,
                       .slots = 30});
}

TEST_CASE("a switchover under 2 daemons and 2 workers: nothing lost, firing resumes within the switchover, a "
          "slot and 2 s, the dashboard follows it, the sweep runs after it", "[java-node]") {
  failover_under_load({.fault = Fault::switchover,
                       .workers = {{"java", Reach::multi_host}, {"node", Reach::proxy}},
                       .planned = 4000,
                       .slots = 20,
                       .sweep_and_web = true});
}

// A COMMIT waiting for a synchronous standby that never comes (a frozen leader's, whose standbys follow
// the new one) is ended by closing the connection, its outcome unknown; it is never cancelled, since a
// cancelled wait reports success for what only this server holds. Here no standby of the name exists.
TEST_CASE("a commit that waits for a synchronous standby is ended by closing the connection, never cancelled") {
  Cluster alone("commit-wait");
  alone.start();
  auto admin = connect_to(alone.url());
  *admin << "CREATE TABLE marks (n int)";
  *admin << "ALTER SYSTEM SET synchronous_standby_names = 'absent'";
  *admin << "SELECT pg_reload_conf()";
  wait_until("the setting to be in force", 10s, [&] {
    std::string names;
    *connect_to(alone.url()) << "SHOW synchronous_standby_names", soci::into(names);
    return names == "absent";
  }, 100ms);

  auto runner_session = connect_to(alone.url());
  db::PgRunnerStore store(*runner_session);
  store.set_commit_limit(1s);
  store.begin();
  *runner_session << "INSERT INTO marks VALUES (1)";
  const auto began = std::chrono::steady_clock::now();
  try {
    store.commit();
    FAIL("the commit returned");
  } catch (const DatabaseError& e) {
    CHECK(e.sqlstate() == "08006");
    CHECK_THAT(e.what(), Catch::Contains("whether it took effect is unknown"));
  }
  const auto waited = std::chrono::steady_clock::now() - began;
  CHECK(waited >= 1s);
  CHECK(waited < 3s);
  // The session is gone, not left mid-commit: the worker holding it drops it and opens another.
  CHECK_THROWS_AS(db::pq::exec(db::native_connection(*runner_session), "probe", "SELECT 1"), DatabaseError);
  CHECK(PQstatus(db::native_connection(*runner_session)) == CONNECTION_BAD);
  // The outcome was unknown indeed: the server committed it locally and waited for the standby.
  *admin << "ALTER SYSTEM RESET synchronous_standby_names";
  *admin << "SELECT pg_reload_conf()";
  wait_until("the row to be visible once the wait is lifted", 10s,
             [&] { return count_of(*connect_to(alone.url()), "SELECT count(*) FROM marks") == 1; }, 100ms);
}

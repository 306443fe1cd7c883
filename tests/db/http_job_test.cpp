// The http class against a real receiver on loopback (cpp-httplib, started by the test) and a real
// PostgreSQL: every kind of answer, with its history row or next time; the signature verified the way
// docs/http.md tells receivers to; the idempotency key stable across a retry; refusals without a request.
#include <catch2/catch.hpp>
#include <unistd.h>
#include <httplib.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <soci/soci.h>

#include <atomic>
#include <filesystem>
#include <csignal>
#include <fstream>
#include <map>
#include <set>
#include <mutex>
#include <thread>

#include "builtin_jobs.hpp"
#include "http.hpp"
#include "process.hpp"
#include "prescient/flow_limits.hpp"
#include "prescient/registry.hpp"
#include "prescient/slot_runner.hpp"
#include "prescient/time_text.hpp"
#include "test_database.hpp"

using namespace prescient;
using namespace prescient::jobs;
using namespace std::chrono_literals;
using prescient::testing::connect_to;
using prescient::testing::count_of;
using prescient::testing::create_migrated_database;
using prescient::testing::free_loopback_port;

namespace {

const std::string kWebhookSecret = "whsec-test-secret";

std::string hmac_hex(const std::string& key, const std::string& text) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int size = 0;
  HMAC(EVP_sha256(), key.data(), static_cast<int>(key.size()), reinterpret_cast<const unsigned char*>(text.data()),
       text.size(), digest, &size);
  std::string hex;
  for (unsigned int i = 0; i < size; ++i) {
    static const char* const digits = "0123456789abcdef";
    hex += digits[digest[i] >> 4];
    hex += digits[digest[i] & 0xf];
  }
  return hex;
}

// The result the receiver answers on /result: about 1 KiB of JSON.
nlohmann::json kilobyte_result() {
  nlohmann::json out = {{"sent", 2}, {"note", std::string(1000, 'n')}};
  return out;
}

// What the receiver saw of one request.
struct Seen {
  std::string path, idempotency_key, traceparent, tracestate;
  bool signature_ok = false;
  nlohmann::json body;
};

// The application's endpoint: answers by path, verifies every signature, records every request.
class Receiver {
 public:
  Receiver() : port_(free_loopback_port()) {
    server_.new_task_queue = [] { return new httplib::ThreadPool(16); };
    server_.set_keep_alive_timeout(1);  // its stop() waits for idle connections to time out
    server_.Post(R"(/hooks/(.*))", [this](const httplib::Request& request, httplib::Response& response) {
      Seen seen;
      seen.path = request.matches[1].str();
      seen.idempotency_key = request.get_header_value("Idempotency-Key");
      seen.traceparent = request.get_header_value("traceparent");
      seen.tracestate = request.get_header_value("tracestate");
      const std::string timestamp = request.get_header_value("Prescient-Timestamp");
      seen.signature_ok =
          request.get_header_value("Prescient-Signature") == "v1=" + hmac_hex(kWebhookSecret, timestamp + "." + request.body);
      seen.body = nlohmann::json::parse(request.body, nullptr, false);
      {
        const std::lock_guard lock(mutex_);
        seen_.push_back(seen);
      }
      const int now_in_flight = ++in_flight_;
      for (int most = most_in_flight_; now_in_flight > most && !most_in_flight_.compare_exchange_weak(most, now_in_flight);) {
      }
      if (seen.path == "slow") {
        for (int waited = 0; held_ && waited < 1000; ++waited) std::this_thread::sleep_for(10ms);
        if (!held_) std::this_thread::sleep_for(300ms);
        response.status = 204;
      } else {
        answer(seen.path, response);
      }
      --in_flight_;
    });
    // Bound (and listening) before the test goes on; accepting starts in the thread.
    if (!server_.bind_to_port("127.0.0.1", port_)) throw std::runtime_error("the receiver cannot bind its port");
    thread_ = std::thread([this] { server_.listen_after_bind(); });
  }
  ~Receiver() {
    server_.stop();
    thread_.join();
  }
  int port() const { return port_; }
  // While held, "slow" answers only when let go (or after 10 s); otherwise after 300 ms.
  void hold(bool on) { held_ = on; }
  int most_in_flight() const { return most_in_flight_; }
  std::vector<Seen> seen() {
    const std::lock_guard lock(mutex_);
    return seen_;
  }

 private:
  static void answer(const std::string& path, httplib::Response& response) {
    if (path == "done") {
      response.status = 204;
    } else if (path == "empty") {
      response.status = 200;
    } else if (path == "later") {
      response.set_content(R"({"next": "2026-11-21T12:00:00Z", "events": [{"type": "order.late", "payload": {"n": 42}}]})",
                           "application/json");
    } else if (path == "busy") {
      response.status = 429;
      response.set_header("Retry-After", "600");
    } else if (path == "down") {
      response.status = 500;
      response.set_content("database down", "text/plain");
    } else if (path == "missing") {
      response.status = 404;
      response.set_content("<h1>no check 'x'</h1>", "text/html");
    } else if (path == "garbage") {
      response.set_content("ok!", "text/plain");
    } else if (path == "huge") {
      response.set_content(std::string(10 << 20, 'x'), "application/json");
    } else if (path == "result") {
      response.set_content(nlohmann::json{{"next", nullptr}, {"result", kilobyte_result()}}.dump(), "application/json");
    } else if (path == "result_huge") {
      response.set_content(nlohmann::json{{"result", std::string(100 * 1024, 'r')}}.dump(), "application/json");
    } else if (path == "redirect") {
      response.set_redirect("http://169.254.169.254/latest/meta-data/");
    } else if (path == "hang") {
      std::this_thread::sleep_for(3s);
      response.status = 204;
    } else if (path == "cut") {
      // Promises 1 000 bytes, sends 10, closes.
      response.set_content_provider(1000, "application/json", [](size_t offset, size_t, httplib::DataSink& sink) {
        if (offset > 0) return false;
        sink.write("{\"next\": \"", 10);
        return false;
      });
    } else {
      response.status = 418;
    }
  }

  int port_;
  std::atomic<bool> held_{false};
  std::atomic<int> in_flight_{0}, most_in_flight_{0};
  httplib::Server server_;
  std::thread thread_;
  std::mutex mutex_;
  std::vector<Seen> seen_;
};

struct HttpJobFixture {
  std::string url = create_migrated_database(60);
  std::unique_ptr<soci::session> db = connect_to(url);
  Receiver receiver;
  ManualClock clock{parse_time("2026-11-21T10:00:00Z")};
  Registry registry;

  HttpJobFixture() {
    auto targets = std::make_shared<HttpTargets>();
    (*targets)["shop"] = {.name = "shop", .base_url = "http://127.0.0.1:" + std::to_string(receiver.port()) + "/hooks",
                          .secret = kWebhookSecret, .timeout = 2s, .max_concurrent = 4, .ca_file = std::nullopt};
    // Nothing listens there: connection refused.
    (*targets)["closed"] = {.name = "closed", .base_url = "http://127.0.0.1:" + std::to_string(free_loopback_port()),
                            .secret = kWebhookSecret, .timeout = 2s, .max_concurrent = 4, .ca_file = std::nullopt};
    register_builtin_jobs(registry, {.commands_dir = std::nullopt, .http_targets = targets});
  }

  long long schedule(const std::string& key, const nlohmann::json& payload) {
    long long id = 0;
    const std::string text = payload.dump();
    *db << "SELECT id FROM prescient.schedule('http', 'order', :key, '2026-11-21T10:00:00Z', p_payload => :p::jsonb,"
           " p_now => '2026-11-21T09:00:00Z')",
        soci::use(key), soci::use(text), soci::into(id);
    return id;
  }
  long long to(const std::string& path, const std::string& target = "shop") {
    return schedule(path, {{"target", target}, {"path", "/" + path}});
  }
  SlotReport fire(const char* at) {
    clock.set(parse_time(at));
    SlotRunner runner({.database_url = url, .runner_id = "r"}, registry, clock);
    return runner.run_slot(runner.settings().grid().floor(clock.now()));
  }
  std::string outcome(long long id) {
    std::string outcome;
    soci::indicator none;
    *db << "SELECT outcome FROM prescient.job_history WHERE id = :id ORDER BY history_id DESC LIMIT 1", soci::use(id),
        soci::into(outcome, none);
    return none == soci::i_ok ? outcome : "pending";
  }
  // The pending row's next time, attempts and last error.
  std::tuple<std::string, int, std::string> pending(long long id) {
    std::string next, error;
    int attempts = -1;
    soci::indicator no_error;
    *db << "SELECT to_char(next_check_at AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"'), attempts, last_error"
           "  FROM prescient.future_job WHERE id = :id",
        soci::use(id), soci::into(next), soci::into(attempts), soci::into(error, no_error);
    return {next, attempts, no_error == soci::i_ok ? error : ""};
  }
};

}  // namespace

TEST_CASE("http: each answer settles its check as documented, signed, with a stable idempotency key") {
  HttpJobFixture f;
  const long long done = f.to("done"), empty = f.to("empty"), later = f.to("later"), busy = f.to("busy"),
                  down = f.to("down"), missing = f.to("missing"), garbage = f.to("garbage"), huge = f.to("huge"),
                  redirect = f.to("redirect"), hang = f.to("hang"), cut = f.to("cut"), refused = f.to("x", "closed");
  const SlotReport report = f.fire("2026-11-21T10:00:05Z");
  CHECK(report.claimed == 12);

  CHECK(f.outcome(done) == "done");
  CHECK(f.outcome(empty) == "done");
  CHECK(f.pending(later) == std::tuple<std::string, int, std::string>{"2026-11-21T12:00:00Z", 0, ""});
  CHECK(count_of(*f.db, "SELECT count(*) FROM prescient.event WHERE type = 'order.late' AND payload = '{\"n\": 42}'"
                        " AND source = '" + std::to_string(later) + "'") == 1);
  // 429 with Retry-After: 600 s: look again then (the next slot from 10:10:05), no attempt counted.
  CHECK(f.pending(busy) == std::tuple<std::string, int, std::string>{"2026-11-21T10:11:00Z", 0, ""});

  const auto failed_with = [&](long long id, const std::string& why) {
    const auto [next, attempts, error] = f.pending(id);
    INFO(id << ": " << error);
    CHECK(attempts == 1);
    CHECK_THAT(error, Catch::Contains(why));
  };
  failed_with(down, "http target 'shop': HTTP 500: database down");
  failed_with(missing, "HTTP 404: <h1>no check 'x'</h1>");
  failed_with(garbage, "HTTP 200 with a body that is not JSON: ok!");
  failed_with(huge, "HTTP 200: the answer is longer than 256 KiB");
  failed_with(redirect, "HTTP 302: redirects are not followed (to http://169.254.169.254/latest/meta-data/)");
  failed_with(hang, "no answer from http://127.0.0.1:" + std::to_string(f.receiver.port()) + "/hooks/hang within 2s");
  failed_with(cut, "http target 'shop': http://127.0.0.1:");
  failed_with(refused, "http target 'closed': http://127.0.0.1:");

  const auto seen = f.receiver.seen();
  CHECK(seen.size() == 11);  // all but the one whose target refuses connections
  for (const Seen& s : seen) {
    INFO(s.path);
    CHECK(s.signature_ok);
    CHECK(s.body["entity_name"] == "order");
    CHECK(s.body["entity_key"] == s.path);
    CHECK(s.idempotency_key == std::to_string(s.body["id"].get<long long>()) + "-0");
    CHECK(s.body["slot"] == "2026-11-21T10:00:00Z");
  }

  // The failed one is tried again after its backoff, with the same idempotency key (the same run of it).
  const std::string first_key = std::to_string(down) + "-0";
  const std::string retry_at = std::get<0>(f.pending(down));
  CHECK(retry_at > "2026-11-21T10:00:00Z");
  f.fire((retry_at.substr(0, 17) + "05Z").c_str());
  std::vector<std::string> keys;
  for (const Seen& s : f.receiver.seen()) {
    if (s.path == "down") keys.push_back(s.idempotency_key);
  }
  CHECK(keys == std::vector<std::string>{first_key, first_key});
  CHECK(std::get<1>(f.pending(down)) == 2);
}

TEST_CASE("http: each attempt sends the check's trace as traceparent, with a parent id of its own") {
  HttpJobFixture f;
  const std::string trace = "0af7651916cd43dd8448eb211c80319c";
  const std::string given = "00-" + trace + "-b7ad6b7169203331-01";
  long long id = 0;
  *f.db << "SELECT id FROM prescient.schedule('http', 'order', 'down', '2026-11-21T10:00:00Z',"
           " p_payload => '{\"target\": \"shop\", \"path\": \"/down\"}', p_now => '2026-11-21T09:00:00Z',"
           " p_traceparent => :tp, p_tracestate => 'shop=1')",
      soci::use(given), soci::into(id);
  const long long untraced = f.to("done");
  f.fire("2026-11-21T10:00:00Z");
  f.fire((std::get<0>(f.pending(id)).substr(0, 17) + "05Z").c_str());  // the retry
  std::vector<std::string> parents;
  for (const Seen& s : f.receiver.seen()) {
    if (s.path == "done") {
      CHECK(s.traceparent.empty());  // a check without a trace sends none
      CHECK(s.tracestate.empty());
      continue;
    }
    INFO(s.traceparent);
    REQUIRE(s.traceparent.size() == 55);
    CHECK(s.traceparent.substr(0, 36) == "00-" + trace + "-");  // the trace given at enqueue
    CHECK(s.traceparent.substr(52) == "-01");
    CHECK(s.tracestate == "shop=1");
    parents.push_back(s.traceparent.substr(36, 16));
  }
  REQUIRE(parents.size() == 2);
  CHECK(parents[0] != parents[1]);  // each attempt a span of its own
  CHECK(parents[0] != "b7ad6b7169203331");
  CHECK(f.outcome(untraced) == "done");
}

TEST_CASE("http: an answer's result is kept in the history; one over 64 KiB fails its check alone") {
  HttpJobFixture f;
  const long long kept = f.to("result");
  const long long huge = f.to("result_huge");
  const long long done = f.to("done");
  f.fire("2026-11-21T10:00:00Z");
  std::string text;
  *f.db << "SELECT result::text FROM prescient.job_history WHERE id = :id", soci::use(kept), soci::into(text);
  CHECK(nlohmann::json::parse(text) == kilobyte_result());
  CHECK(f.outcome(done) == "done");
  const auto [next, attempts, error] = f.pending(huge);
  CHECK(attempts == 1);
  CHECK(error == "its result is " + std::to_string(100 * 1024 + 2) + " bytes of JSON (at most 65536)");
}

TEST_CASE("http: a payload that names no known target, or a path leaving it, fails with the reason and sends nothing") {
  HttpJobFixture f;
  const std::vector<std::pair<nlohmann::json, std::string>> cases{
      {{{"target", "intranet"}, {"path", "/x"}}, "unknown http target 'intranet' (configured: closed, shop)"},
      {{{"target", "shop"}, {"path", "/../admin"}}, "the path '/../admin' contains a '..' segment"},
      {{{"target", "shop"}, {"path", "http://169.254.169.254/"}}, "the path 'http://169.254.169.254/' must start with '/'"},
      {{{"target", "shop"}, {"path", "//other-host/x"}}, "the path '//other-host/x' contains '//'"},
      {{{"path", "/x"}}, "the payload names no target"},
      {{{"target", "shop"}}, "the payload names no path below target 'shop'"},
  };
  std::vector<long long> ids;
  for (std::size_t i = 0; i < cases.size(); ++i) ids.push_back(f.schedule("bad" + std::to_string(i), cases[i].first));
  f.fire("2026-11-21T10:00:05Z");
  for (std::size_t i = 0; i < cases.size(); ++i) {
    INFO(cases[i].first.dump());
    const auto [next, attempts, error] = f.pending(ids[i]);
    CHECK(attempts == 1);
    CHECK_THAT(error, Catch::Contains(cases[i].second));
  }
  CHECK(f.receiver.seen().empty());
}

TEST_CASE("http: a batch's requests run at once, never more than the target's max_concurrent across workers") {
  HttpJobFixture f;
  for (int i = 0; i < 16; ++i) f.schedule("slow" + std::to_string(i), {{"target", "shop"}, {"path", "/slow"}});
  const auto started = std::chrono::steady_clock::now();
  f.clock.set(parse_time("2026-11-21T10:00:05Z"));
  SlotRunner runner({.database_url = f.url, .runner_id = "r", .workers = 2, .batch_size = 8}, f.registry, f.clock);
  const SlotReport report = runner.run_slot(parse_time("2026-11-21T10:00:00Z"));
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  CHECK(report.done == 16);
  CHECK(f.receiver.most_in_flight() == 4);  // the target's max_concurrent, held across both workers
  CHECK(seconds < 16 * 0.3 / 2);             // one by one (or one per worker) would take 4.8 s (2.4 s)
}

TEST_CASE("http: a concurrency limit on a payload key holds across runners: the receiver never sees more at once") {
  HttpJobFixture f;
  FlowLimits(*f.db).set({.name = "per-customer", .key = "payload.customer", .concurrency = 3}, "test",
                        SystemClock().now());
  // Due in the slot that is current now, on the real clock: early enough in its minute to drain within it.
  while (SystemClock().now() - std::chrono::floor<std::chrono::minutes>(SystemClock().now()) > 40s) {
    std::this_thread::sleep_for(200ms);
  }
  *f.db << "SELECT prescient.schedule('http', 'order', 'k' || i, date_trunc('minute', now()),"
           "  p_payload => '{\"target\": \"shop\", \"path\": \"/slow\", \"customer\": \"acme\"}',"
           "  p_now => now() - interval '1 minute')"
           "  FROM generate_series(1, 12) i";
  SystemClock clock;
  const auto drain = [&](const char* id) {
    SlotRunner runner({.database_url = f.url, .runner_id = id, .workers = 2}, f.registry, clock);
    runner.run_slot(runner.settings().grid().floor(clock.now()));
  };
  std::thread other([&] { drain("r2"); });
  drain("r1");
  other.join();
  CHECK(count_of(*f.db, "SELECT count(*) FROM prescient.job_history WHERE outcome = 'done'") == 12);
  // The target allows 4 in flight (max_concurrent); the customer's limit holds it to 3, and it is used.
  CHECK(f.receiver.most_in_flight() == 3);
  CHECK(f.receiver.seen().size() == 12);
}

TEST_CASE("http: a runner killed with requests in flight: after its lease every check is answered again and settled once") {
  HttpJobFixture f;
  const std::string dir = "/tmp/prescient-http-kill-" + std::to_string(::getpid());
  std::filesystem::create_directories(dir);
  std::ofstream(dir + "/secret") << kWebhookSecret << "\n";
  std::filesystem::permissions(dir + "/secret", std::filesystem::perms::owner_read | std::filesystem::perms::owner_write);
  std::ofstream(dir + "/targets.json") << nlohmann::json{
      {"targets", {{"shop", {{"url", "http://127.0.0.1:" + std::to_string(f.receiver.port()) + "/hooks"},
                             {"secret_file", dir + "/secret"}, {"timeout", "20s"}, {"max_concurrent", 4}}}}}}.dump();
  // Due in the slot that is current now, for the real clock of the child runner.
  *f.db << "SELECT prescient.schedule('http', 'order', 'k' || i, date_trunc('minute', now()),"
           "  p_payload => '{\"target\": \"shop\", \"path\": \"/slow\"}', p_now => now() - interval '1 minute')"
           "  FROM generate_series(1, 12) i";
  f.receiver.hold(true);
  const pid_t child = prescient::testing::start_prescient(
      prescient::testing::with_db({"run-slot", "--http-targets", dir + "/targets.json", "--workers", "1"}, f.url));
  for (int i = 0; i < 500 && f.receiver.seen().size() < 4; ++i) std::this_thread::sleep_for(20ms);
  REQUIRE(f.receiver.seen().size() == 4);  // four in flight (max_concurrent), the rest waiting in the runner
  ::kill(child, SIGKILL);
  prescient::testing::wait_for(child);
  f.receiver.hold(false);
  // Leased: nobody takes them until the lease ends. After it, the daemon's sweep rescues them all.
  CHECK(count_of(*f.db, "SELECT count(*) FROM prescient.future_job WHERE claimed_until > now()") == 12);
  long long lease_end_us = 0;
  *f.db << "SELECT prescient.us(max(claimed_until)) FROM prescient.future_job", soci::into(lease_end_us);
  f.clock.set(from_unix_micros(lease_end_us) + 1min);
  SlotRunner rescuer({.database_url = f.url, .runner_id = "rescuer", .workers = 2}, f.registry, f.clock);
  const SlotReport rescued = rescuer.sweep(rescuer.settings().grid().floor(f.clock.now()), SweepMode::run);
  CHECK(rescued.done == 12);
  CHECK(count_of(*f.db, "SELECT count(*) FROM prescient.future_job") == 0);
  CHECK(count_of(*f.db, "SELECT count(*) FROM prescient.job_history WHERE outcome = 'done' AND finished_by = 'rescuer'") == 12);
  CHECK(count_of(*f.db, "SELECT count(DISTINCT id) FROM prescient.job_history") == 12);  // each settled once
  // The receiver saw each check at most twice (once more for the four in flight at the kill), with one key.
  std::map<long long, std::set<std::string>> keys;
  std::map<long long, int> requests;
  for (const Seen& s : f.receiver.seen()) {
    const long long id = s.body["id"].get<long long>();
    keys[id].insert(s.idempotency_key);
    ++requests[id];
  }
  CHECK(keys.size() == 12);
  int repeated = 0;
  for (const auto& [id, count] : requests) {
    CHECK(count <= 2);
    CHECK(keys[id].size() == 1);
    repeated += count - 1;
  }
  CHECK(repeated == 4);
  std::filesystem::remove_all(dir);
}

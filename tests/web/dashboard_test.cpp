// The dashboard as its users meet it: `prescient web` started as a process, read by headless Chromium
// (tests/support/chromium.hpp) and by an HTTP client; what it shows compared with what SQL says, and its
// buttons checked against the database after. Screenshots go to PRESCIENT_SCREENSHOT_DIR.
#include <catch2/catch.hpp>
#include <httplib.h>
#include <soci/soci.h>
#include <unistd.h>

#include <csignal>
#include <fstream>
#include <regex>
#include <thread>

#include "chromium.hpp"
#include "http.hpp"
#include "process.hpp"
#include "test_database.hpp"

using namespace prescient::testing;
using nlohmann::json;

namespace {

const std::string kHostileKey = "<img src=x onerror=\"document.title='pwned'\">";

// `prescient web` on a free loopback port, stopped (SIGTERM) when it goes out of scope.
class WebProcess {
 public:
  WebProcess(const std::string& url, std::vector<std::string> extra = {}) : port_(free_loopback_port()) {
    std::vector<std::string> args{"web", "--addr", "127.0.0.1:" + std::to_string(port_)};
    args.insert(args.end(), extra.begin(), extra.end());
    log_ = "/tmp/prescient-web-test-" + std::to_string(::getpid()) + "-" + std::to_string(port_) + ".log";
    pid_ = start_prescient(with_db(args, url), log_, log_);
    for (int i = 0; i < 100; ++i) {
      httplib::Client client("127.0.0.1", port_);
      if (client.Get("/api/config")) return;
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    FAIL("prescient web did not start: " << std::ifstream(log_).rdbuf());
  }
  ~WebProcess() {
    ::kill(pid_, SIGTERM);
    wait_for(pid_);
    ::unlink(log_.c_str());
  }
  int port() const { return port_; }
  std::string base() const { return "http://127.0.0.1:" + std::to_string(port_); }

 private:
  int port_;
  pid_t pid_ = -1;
  std::string log_;
};

std::string screenshot_path(const std::string& name) { return std::string(PRESCIENT_SCREENSHOT_DIR) + "/" + name; }

std::string text_of(Chromium& browser, const std::string& selector) {
  return browser.eval("document.querySelector(" + json(selector).dump() + ").textContent").get<std::string>();
}

// A database with pending checks (one keyed with markup), settled ones of the last hour and a dead letter
// whose error is markup.
std::string dashboard_database() {
  const std::string url = create_migrated_database(60);
  auto db = connect_to(url);
  *db << "SELECT prescient.schedule('emit', 'user', 'u' || i, now() + i * interval '3 minutes') FROM generate_series(1, 7) i";
  *db << "SELECT prescient.schedule('noop', 'user', :key, now() + interval '10 minutes')", soci::use(kHostileKey);
  *db << "INSERT INTO prescient.job_history (id, job, entity_name, entity_key, payload, first_check_at, last_check_at,"
         "    check_count, attempts, last_error, enqueued_on, enqueued_by, finished_at, finished_by, outcome)"
         " SELECT 9000 + i, 'emit', 'user', 'h' || i, '{}', now() - interval '30 minutes', now() - interval '30 minutes',"
         "        1, 1, NULL, now() - interval '1 hour', 'app', now() - interval '30 minutes' + interval '2 seconds', 'r',"
         "        'done' FROM generate_series(1, 4) i";
  *db << "INSERT INTO prescient.job_history (id, job, entity_name, entity_key, payload, first_check_at, last_check_at,"
         "    check_count, attempts, last_error, enqueued_on, enqueued_by, finished_at, finished_by, outcome)"
         " VALUES (9100, 'emit', 'user', 'dead', '{}', now() - interval '2 hours', now() - interval '2 hours', 1, 5,"
         "         '<script>document.title=''pwned''</script>', now() - interval '3 hours', 'app', now() - interval '1 hour',"
         "         'r', 'failed')";
  return url;
}

}  // namespace

TEST_CASE("the dashboard in a real browser: its figures are SQL's, database text stays text, its buttons act") {
  const std::string url = dashboard_database();
  auto db = connect_to(url);
  const WebProcess web(url);
  Chromium browser;

  SECTION("overview") {
    browser.open(web.base() + "/");
    CHECK(text_of(browser, "[data-figure=pending]") == std::to_string(count_of(*db, "SELECT count(*) FROM prescient.future_job")));
    CHECK(text_of(browser, "[data-figure=dead_letters]") == "1");
    CHECK(text_of(browser, "[data-figure=overdue]") == "0");
    CHECK(text_of(browser, "[data-figure=finished_last_hour]") == "4");
    // The future: every pending check is within the next hour, one bar per slot that has any.
    CHECK(text_of(browser, "[data-figure=future_total]") == "8 checks");
    CHECK(browser.eval("document.querySelectorAll('[data-chart=future] rect').length") ==
          count_of(*db, "SELECT count(DISTINCT next_check_at) FROM prescient.future_job"));
    CHECK(browser.eval("document.querySelectorAll('[data-table=lateness] tbody tr').length") >= 1);
    browser.screenshot(screenshot_path("overview.png"));

    browser.open(web.base() + "/?zoom=day&job=noop");
    CHECK(text_of(browser, "[data-figure=future_total]") == "1 checks");
  }

  SECTION("checks: search, markup in a key shown as text, the trace, cancel and fire") {
    browser.open(web.base() + "/checks?entity_key=" + httplib::detail::encode_query_param(kHostileKey));
    CHECK(browser.eval("document.querySelectorAll('[data-table=checks] tbody tr').length") == 1);
    CHECK(text_of(browser, "[data-table=checks] tbody td.mono") == "user/" + kHostileKey);
    CHECK(browser.eval("document.querySelectorAll('main img').length") == 0);
    CHECK(browser.eval("document.title") == "prescient");
    browser.screenshot(screenshot_path("checks.png"));

    const long long hostile = count_of(*db, "SELECT id FROM prescient.future_job WHERE job = 'noop'");
    browser.open(web.base() + "/checks/" + std::to_string(hostile));
    CHECK(browser.eval("document.querySelector('[data-pending]').dataset.pending") == std::to_string(hostile));
    browser.screenshot(screenshot_path("trace.png"));
    browser.eval("window.confirm = () => true; document.querySelector('[data-action=cancel]').click(); true");
    browser.wait_until("document.querySelector('[data-pending=none]')");
    CHECK(count_of(*db, "SELECT count(*) FROM prescient.job_history WHERE id = " + std::to_string(hostile) +
                            " AND outcome = 'cancelled' AND finished_by = 'web'") == 1);
    CHECK(browser.eval("document.querySelector('[data-outcome=cancelled]') !== null") == true);

    // Fire at the next slot: the check moves to the slot after now, from minutes away.
    const long long later = count_of(*db, "SELECT max(id) FROM prescient.future_job");
    browser.open(web.base() + "/checks/" + std::to_string(later));
    browser.eval("document.querySelector('[data-action=fire]').click(); true");
    const std::string moved = "SELECT count(*) FROM prescient.future_job WHERE id = " + std::to_string(later) +
                              " AND next_check_at <= now() + interval '1 minute'";
    for (int i = 0; i < 100 && count_of(*db, moved) == 0; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(50));
    CHECK(count_of(*db, moved) == 1);
  }

  SECTION("dead letters: the error shown as text, retry puts the check back") {
    browser.open(web.base() + "/dead-letters");
    CHECK(text_of(browser, "[data-table=dead-letters] tr[data-id='9100'] td:nth-child(6)") ==
          "<script>document.title='pwned'</script>");
    CHECK(browser.eval("document.title") == "prescient");
    browser.screenshot(screenshot_path("dead-letters.png"));
    browser.eval("document.querySelector('[data-action=retry]').click(); true");
    browser.wait_until("document.querySelectorAll('[data-table=dead-letters]').length === 0");
    CHECK(count_of(*db, "SELECT count(*) FROM prescient.future_job WHERE id = 9100") == 1);
  }
}

TEST_CASE("the dashboard read-only: no button, and an action refused even with the page's token") {
  const std::string url = dashboard_database();
  auto db = connect_to(url);
  const WebProcess web(url, {"--read-only"});
  Chromium browser;
  const long long id = count_of(*db, "SELECT min(id) FROM prescient.future_job");
  browser.open(web.base() + "/checks/" + std::to_string(id));
  CHECK(browser.eval("document.querySelectorAll('[data-action]').length") == 0);
  CHECK(text_of(browser, "#mode") == "read-only");
  const json status = browser.eval("fetch('/api/checks/" + std::to_string(id) +
                                   "/cancel', {method: 'POST', headers: {'X-CSRF-Token': document.querySelector("
                                   "'meta[name=\"csrf-token\"]').content}}).then(r => r.status)");
  CHECK(status == 403);
  browser.open(web.base() + "/dead-letters");
  CHECK(browser.eval("document.querySelectorAll('[data-action=retry]').length") == 0);
  CHECK(count_of(*db, "SELECT count(*) FROM prescient.future_job WHERE id = " + std::to_string(id)) == 1);
}

TEST_CASE("the dashboard's HTTP: actions need the page's token from the same origin, loopback needs its own name") {
  const std::string url = dashboard_database();
  auto db = connect_to(url);
  const WebProcess web(url);
  httplib::Client client("127.0.0.1", web.port());
  const long long id = count_of(*db, "SELECT min(id) FROM prescient.future_job");
  const std::string cancel = "/api/checks/" + std::to_string(id) + "/cancel";

  const auto page = client.Get("/");
  REQUIRE(page);
  CHECK(page->get_header_value("Content-Security-Policy").find("script-src 'self'") != std::string::npos);
  std::smatch found;
  REQUIRE(std::regex_search(page->body, found, std::regex("name=\"csrf-token\" content=\"([0-9a-f]{64})\"")));
  const std::string token = found[1];

  CHECK(client.Post(cancel, "{}", "application/json")->status == 403);
  CHECK(client.Post(cancel, {{"X-CSRF-Token", std::string(64, '0')}}, "{}", "application/json")->status == 403);
  CHECK(client.Post(cancel, {{"X-CSRF-Token", token}, {"Origin", "http://evil.example"}}, "{}", "application/json")
            ->status == 403);
  CHECK(count_of(*db, "SELECT count(*) FROM prescient.future_job WHERE id = " + std::to_string(id)) == 1);
  const auto done = client.Post(cancel, {{"X-CSRF-Token", token}}, "{}", "application/json");
  CHECK(done->status == 200);
  CHECK(json::parse(done->body) == json{{"cancelled", id}});
  CHECK(count_of(*db, "SELECT count(*) FROM prescient.future_job WHERE id = " + std::to_string(id)) == 0);
  // Once more: nothing to cancel, a 404 naming it.
  const auto again = client.Post(cancel, {{"X-CSRF-Token", token}}, "{}", "application/json");
  CHECK(again->status == 404);
  CHECK(json::parse(again->body)["error"] == "no pending check with id " + std::to_string(id));

  // DNS rebinding: a request naming another host is refused.
  CHECK(client.Get("/api/stats", {{"Host", "evil.example"}})->status == 403);
  // Bad input is a 400 naming the value.
  const auto bad = client.Get("/api/checks?after=yesterday");
  CHECK(bad->status == 400);
  CHECK(json::parse(bad->body)["error"] == "invalid after 'yesterday': use TIME,ID");
}

TEST_CASE("the dashboard beyond loopback: refused without an auth file; with one, every request authenticates") {
  const std::string url = create_migrated_database(60);
  const ProcessResult open = run_prescient(with_db({"web", "--addr", "0.0.0.0:8080"}, url));
  CHECK(open.exit_code == 2);
  CHECK_THAT(open.err, Catch::Contains("refusing to serve the dashboard on 0.0.0.0:8080 without an auth file"));

  const ProcessResult hashed = run_prescient({"web", "--hash-secret", "ops"}, {}, "s3cret-token\n");
  REQUIRE(hashed.exit_code == 0);
  CHECK_THAT(hashed.out, Catch::Matches("ops:[0-9a-f]{64}:[0-9a-f]{64}\n"));
  CHECK(hashed.out.find("s3cret") == std::string::npos);
  const std::string auth_file = "/tmp/prescient-web-auth-" + std::to_string(::getpid());
  std::ofstream(auth_file) << "# operators\n" << hashed.out;

  const std::string bad_file = auth_file + ".bad";
  std::ofstream(bad_file) << "ops:not-a-hash\n";
  const ProcessResult bad = run_prescient(with_db({"web", "--auth-file", bad_file}, url));
  CHECK(bad.exit_code == 2);
  CHECK_THAT(bad.err, Catch::Contains("line 1: expected NAME:SALT:SHA256"));
  ::unlink(bad_file.c_str());

  {
    const WebProcess web(url, {"--auth-file", auth_file});
    httplib::Client client("127.0.0.1", web.port());
    const auto anonymous = client.Get("/api/stats");
    CHECK(anonymous->status == 401);
    CHECK(anonymous->get_header_value("WWW-Authenticate").rfind("Basic", 0) == 0);
    client.set_basic_auth("ops", "wrong");
    CHECK(client.Get("/api/stats")->status == 401);
    client.set_basic_auth("ops", "s3cret-token");
    const auto stats = client.Get("/api/stats");
    CHECK(stats->status == 200);
    CHECK(json::parse(stats->body)["pending"] == 0);
    CHECK(json::parse(client.Get("/api/config")->body)["user"] == "web:ops");
  }
  ::unlink(auth_file.c_str());
}

TEST_CASE("daemon --web-addr serves the dashboard, its API and /metrics from one server") {
  const std::string url = create_migrated_database(60);
  const int port = free_loopback_port();
  const std::string log = "/tmp/prescient-daemon-web-" + std::to_string(::getpid()) + ".log";
  const pid_t daemon = start_prescient(
      with_db({"daemon", "--runner-id", "web-test", "--web-addr", "127.0.0.1:" + std::to_string(port), "--web-read-only"},
              url),
      log, log);
  httplib::Client client("127.0.0.1", port);
  auto metrics = client.Get("/metrics");
  for (int i = 0; i < 100 && !metrics; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    metrics = client.Get("/metrics");
  }
  REQUIRE(metrics);
  CHECK(metrics->body.find("prescient_runner_info{runner_id=\"web-test\",shard=\"0/1\"} 1") != std::string::npos);
  const auto config = client.Get("/api/config");
  REQUIRE(config);
  CHECK(json::parse(config->body)["read_only"] == true);
  CHECK(client.Get("/")->body.find("csrf-token") != std::string::npos);
  ::kill(daemon, SIGTERM);
  CHECK(wait_for(daemon) == 0);
  ::unlink(log.c_str());

  const ProcessResult open = run_prescient(with_db({"daemon", "--web-addr", "0.0.0.0:8080"}, url));
  CHECK(open.exit_code == 2);
  CHECK_THAT(open.err, Catch::Contains("refusing to serve the dashboard on 0.0.0.0:8080"));
}

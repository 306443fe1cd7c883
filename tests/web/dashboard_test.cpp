// The dashboard as its users meet it: `prescient web` started as a process, read by headless Chromium
// (tests/support/chromium.hpp) and by an HTTP client; what it shows compared with what SQL says, and its
// buttons checked against the database after. Screenshots go to PRESCIENT_SCREENSHOT_DIR.
#include <catch2/catch.hpp>
#include <httplib.h>
#include <soci/soci.h>
#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <fstream>
#include <regex>
#include <thread>

#include "chromium.hpp"
#include "http.hpp"
#include "login_role.hpp"
#include "prescient/clock.hpp"
#include "prescient/registry.hpp"
#include "prescient/slot_runner.hpp"
#include "prescient/time_text.hpp"
#include "process.hpp"
#include "test_database.hpp"
#include "wait.hpp"

using namespace prescient::testing;
using namespace std::chrono_literals;
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
  // Failed, retried (the retry marks the failure) and done since: not a dead letter (the overview counts one).
  *db << "INSERT INTO prescient.job_history (id, job, entity_name, entity_key, payload, first_check_at, last_check_at,"
         "    check_count, attempts, last_error, enqueued_on, enqueued_by, finished_at, finished_by, outcome, retried)"
         " SELECT 9200, 'emit', 'user', 'mended', '{}', now() - interval '3 hours', now() - interval '3 hours', 1, a, NULL,"
         "        now() - interval '4 hours', 'app', now() - interval '3 hours' + a * interval '1 minute', 'r', o, r"
         "   FROM (VALUES (5, 'failed', true), (1, 'done', false)) AS v(a, o, r)";
  return url;
}

// Three looks an hour apart, then one failure, then done (as tests/db/check_life_test.cpp's).
class ThreeLooksThenDone final : public prescient::JobExec {
 public:
  prescient::JobResult run(const prescient::Check& check, prescient::JobContext& ctx) override {
    if (check.check_count < 3) return {.next = ctx.slot() + 1h};
    if (check.attempts == 0) throw std::runtime_error("receiver down");
    return {.result = json{{"sent", "<b>mail</b>"}}};  // shown as text (docs/design.md, "Results")
  }
};

prescient::TimePoint time_of(const json& text) { return prescient::parse_time(text.get<std::string>()); }
std::string string_of(const json& text) { return text.get<std::string>(); }

// The columns a chart drew, in order: [start (UTC), total] each, empty ones included.
json columns_of(Chromium& browser, const std::string& chart) {
  return browser.eval("[...document.querySelectorAll('[data-chart=" + chart + "] [data-starts-at]')]"
                      ".map(g => [g.dataset.startsAt, Number(g.dataset.total)])");
}

// The ticks a chart drew, in order: [instant (UTC), label] each.
json ticks_of(Chromium& browser, const std::string& chart) {
  return browser.eval("[...document.querySelectorAll('[data-chart=" + chart + "] [data-tick]')]"
                      ".map(g => [g.dataset.tick, g.textContent])");
}

// SQL's columns for the same span: one [start, count] per bucket of `width` from `from` until `to`, the count
// a scalar query over s, the bucket's start.
json sql_columns(soci::session& db, const std::string& from, const std::string& to, const std::string& width,
                 const std::string& count) {
  std::string columns;
  db << "SELECT json_agg(json_build_array(to_char(s AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"'), (" + count +
            ")) ORDER BY s)::text"
        "  FROM generate_series(:from::timestamptz, :to::timestamptz - :width::interval, :step::interval) AS s",
      soci::use(from), soci::use(to), soci::use(width), soci::use(width), soci::into(columns);
  return json::parse(columns);
}

// SQL's ticks for a span in a zone: [instant (UTC), label] at each local time in [from, to) whose minute of
// the day is a multiple of `minutes`; labelled HH:MM, a midnight by its day ("9 Mar", as en-GB writes it).
json sql_ticks(soci::session& db, const std::string& from, const std::string& to, const std::string& zone, int minutes) {
  std::string ticks;
  db << "SELECT json_agg(json_build_array(to_char(s AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"'),"
        "         CASE WHEN to_char(s AT TIME ZONE z, 'HH24:MI') = '00:00'"
        "              THEN replace(to_char(s AT TIME ZONE z, 'FMDD Mon'), 'Sep', 'Sept')"
        "              ELSE to_char(s AT TIME ZONE z, 'HH24:MI') END) ORDER BY s)::text"
        "  FROM generate_series(:from::timestamptz, :to::timestamptz - interval '1 minute', interval '1 minute') AS s,"
        "       (SELECT :zone::text AS z) AS zone"
        " WHERE (extract(hour FROM s AT TIME ZONE z) * 60 + extract(minute FROM s AT TIME ZONE z))::int % :minutes = 0",
      soci::use(from), soci::use(to), soci::use(zone), soci::use(minutes), soci::into(ticks);
  return json::parse(ticks);
}

// SQL's ticks of months: [instant (UTC), label] at each local midnight of a 1st in [from, to); labelled with
// the month ("Sept", as en-GB writes it), January with its year.
json sql_month_ticks(soci::session& db, const std::string& from, const std::string& to, const std::string& zone) {
  std::string ticks;
  db << "SELECT json_agg(json_build_array(to_char(t AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"'),"
        "         replace(to_char(m, 'Mon'), 'Sep', 'Sept') || CASE WHEN extract(month FROM m) = 1 THEN to_char(m, ' YYYY')"
        "         ELSE '' END) ORDER BY t)::text"
        "  FROM (SELECT :zone::text AS z) AS zone,"
        "       generate_series(date_trunc('month', :from::timestamptz AT TIME ZONE z), :to::timestamptz AT TIME ZONE z,"
        "                       interval '1 month') AS m, LATERAL (SELECT m AT TIME ZONE z AS t) AS local"
        " WHERE t >= :from::timestamptz AND t < :to::timestamptz",
      soci::use(zone), soci::use(from), soci::use(to), soci::use(from), soci::use(to), soci::into(ticks);
  return json::parse(ticks);
}

// `prescient web`'s JSON: status and body of a GET.
std::pair<int, json> get_json(httplib::Client& client, const std::string& path) {
  const auto answer = client.Get(path.c_str());
  REQUIRE(answer);
  return {answer->status, json::parse(answer->body)};
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
    CHECK(browser.eval("document.querySelectorAll('[data-chart=future] rect[data-series]').length") ==
          count_of(*db, "SELECT count(DISTINCT next_check_at) FROM prescient.future_job"));
    CHECK(browser.eval("document.querySelectorAll('[data-table=lateness] tbody tr').length") >= 1);
    browser.screenshot(screenshot_path("overview.png"));

    browser.open(web.base() + "/?zoom=day&job=noop");
    CHECK(text_of(browser, "[data-figure=future_total]") == "1 checks");
  }

  SECTION("checks: search, markup in a key shown as text, the trace, cancel and fire") {
    browser.open(web.base() + "/checks?entity_name=user&entity_key=" + httplib::detail::encode_query_param(kHostileKey));
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

TEST_CASE("the dashboard's charts read like time: every bucket a column, ticks at round local times, the zone named") {
  const std::string url = create_migrated_database(60);
  auto db = connect_to(url);
  // Checks in the slots 1 and 4 ahead of the one the dashboard counts at its start: scheduled early in a
  // minute, so that the slot of now is still the current one then. The page and the API each read the
  // clock, so the case also starts more than a minute before an hour ends: the hourly charts of both then
  // cover the same hours.
  while (count_of(*db, "SELECT (extract(second FROM now()) >= 50 OR extract(minute FROM now()) >= 59)::int") == 1) {
    std::this_thread::sleep_for(500ms);
  }
  *db << "SELECT prescient.schedule('emit', 'user', 'a' || i, date_bin('1 minute', now(), 'epoch') + interval '1 minute')"
         "  FROM generate_series(1, 2) i";
  *db << "SELECT prescient.schedule('noop', 'user', 'b', date_bin('1 minute', now(), 'epoch') + interval '4 minutes')";
  // Settlements 2, 5 and 20 hours ago (three outcomes), and one two days ago, out of the past day.
  *db << "INSERT INTO prescient.job_history (id, job, entity_name, entity_key, payload, first_check_at, last_check_at,"
         "    check_count, attempts, last_error, enqueued_on, enqueued_by, finished_at, finished_by, outcome)"
         " SELECT 5000 + i, 'emit', 'user', 'h' || i, '{}', now() - ago, now() - ago, 1, 1, NULL, now() - ago, 'app',"
         "        now() - ago + interval '1 second', 'r', outcome"
         "   FROM (VALUES (1, interval '2 hours', 'done'), (2, interval '2 hours', 'done'), (3, interval '2 hours', 'failed'),"
         "                (4, interval '5 hours', 'done'), (5, interval '20 hours', 'cancelled'),"
         "                (6, interval '2 days', 'done')) AS v(i, ago, outcome)";
  // Deferrals by two limits: 30 minutes and 3 hours ago, and one 30 hours ago, out of the past day.
  *db << "INSERT INTO prescient.flow_deferral (check_id, deferred_at, limit_name, key_value, until)"
         " SELECT i, now() - ago, limit_name, 'acme', now() FROM (VALUES (1, interval '30 minutes', 'crm'),"
         "   (2, interval '30 minutes', 'crm'), (3, interval '3 hours', 'crm'), (4, interval '3 hours', 'api'),"
         "   (5, interval '3 hours', 'api'), (6, interval '30 hours', 'api')) AS v(i, ago, limit_name)";
  const WebProcess web(url);
  httplib::Client client("127.0.0.1", web.port());
  Chromium browser;
  // Adelaide is 9:30 or 10:30 ahead of UTC: its round hours are not UTC's.
  const std::string zone = "Australia/Adelaide";
  browser.set_time_zone(zone);

  // The future by slot: an hour of one-minute slots from the one after the current slot, the empty ones drawn.
  browser.open(web.base() + "/?zoom=slot");
  const json future = get_json(client, "/api/future?zoom=slot").second;
  CHECK(future["bucket_seconds"] == 60);
  CHECK(future["from"] == prescient::format_time(time_of(future["current_slot"]) + 1min));
  CHECK(future["to"] == prescient::format_time(time_of(future["current_slot"]) + 61min));
  const json slots = columns_of(browser, "future");
  REQUIRE(slots.size() == 60);
  CHECK(slots[0][0] == future["from"]);
  CHECK(json{slots[0][1], slots[1][1], slots[2][1], slots[3][1], slots[4][1]} == json{2, 0, 0, 1, 0});
  CHECK(slots == sql_columns(*db, string_of(future["from"]), string_of(future["to"]), "1 minute",
                             "SELECT count(*) FROM prescient.future_job"
                             " WHERE next_check_at > s - interval '1 minute' AND next_check_at <= s"));
  CHECK(browser.eval("[...document.querySelectorAll('[data-chart=future] [data-starts-at]')].slice(0, 4)"
                     ".map(g => [...g.querySelectorAll('rect[data-series]')].map(r => r.dataset.series + '=' + r.dataset.value))") ==
        json{{"emit=2"}, json::array(), json::array(), {"noop=1"}});
  // Ticks every 5 minutes of Adelaide's clock, labelled in it; the zone is named under the chart.
  const json ticks = ticks_of(browser, "future");
  CHECK(ticks.size() == 12);
  CHECK(ticks == sql_ticks(*db, string_of(future["from"]), string_of(future["to"]), zone, 5));
  CHECK(text_of(browser, "[data-chart=future] ~ [data-zone]") ==
        "Pending checks, one column per slot (1 min); times in your zone, " + zone);
  CHECK(browser.eval("document.querySelector('[data-chart=future] ~ [data-zone]').dataset.zone") == zone);
  browser.screenshot(screenshot_path("charts-future-slot.png"));

  // By hour: every 3 hours of Adelaide's day, at half past a UTC hour.
  browser.open(web.base() + "/?zoom=hour");
  const json by_hour = get_json(client, "/api/future?zoom=hour").second;
  CHECK(by_hour["bucket_seconds"] == 3600);
  CHECK(columns_of(browser, "future").size() == 25);
  const json hour_ticks = ticks_of(browser, "future");
  REQUIRE(hour_ticks.size() >= 8);
  CHECK(hour_ticks[0][0].get<std::string>().substr(14) == "30:00Z");
  CHECK(hour_ticks == sql_ticks(*db, string_of(by_hour["from"]), string_of(by_hour["to"]), zone, 180));

  // By day: a year of UTC days, ticks at Adelaide's midnight on the 1st of each month.
  browser.open(web.base() + "/?zoom=day");
  const json by_day = get_json(client, "/api/future?zoom=day").second;
  CHECK(by_day["bucket_seconds"] == 86400);
  CHECK(columns_of(browser, "future").size() == 367);
  const json month_ticks = ticks_of(browser, "future");
  CHECK(month_ticks.size() >= 12);
  CHECK(month_ticks == sql_month_ticks(*db, string_of(by_day["from"]), string_of(by_day["to"]), zone));

  // The past day: its 25 UTC hours (the hour a day ago through the current one), quiet ones drawn empty,
  // each as job_history counts it.
  const json past = get_json(client, "/api/past").second;
  CHECK(time_of(past["to"]) - time_of(past["from"]) == 25h);
  const json hours = columns_of(browser, "past");
  REQUIRE(hours.size() == 25);
  CHECK(hours[0][0] == past["from"]);
  CHECK(hours == sql_columns(*db, string_of(past["from"]), string_of(past["to"]), "1 hour",
                             "SELECT count(*) FROM prescient.job_history"
                             " WHERE finished_at >= s AND finished_at < s + interval '1 hour'"));
  CHECK(std::count_if(hours.begin(), hours.end(), [](const json& c) { return c[1] != 0; }) == 3);
  CHECK(browser.eval("[...document.querySelectorAll('[data-chart=past] rect[data-series]')]"
                     ".map(r => r.dataset.series + '=' + r.dataset.value).sort()") ==
        json{"cancelled=1", "done=1", "done=2", "failed=1"});

  // Deferrals per limit over the past day, each hour as flow_deferral counts it.
  browser.open(web.base() + "/limits");
  const json deferrals = get_json(client, "/api/limits/deferrals").second;
  CHECK(deferrals["bucket_seconds"] == 3600);
  const json deferred = columns_of(browser, "deferrals");
  REQUIRE(deferred.size() == 25);
  CHECK(deferred == sql_columns(*db, string_of(deferred[0][0]), prescient::format_time(time_of(deferred[24][0]) + 1h),
                                "1 hour",
                                "SELECT count(*) FROM prescient.flow_deferral"
                                " WHERE deferred_at >= s AND deferred_at < s + interval '1 hour'"));
  CHECK(std::count_if(deferred.begin(), deferred.end(), [](const json& c) { return c[1] != 0; }) == 2);
  CHECK(browser.eval("[...document.querySelectorAll('[data-chart=deferrals] rect[data-series]')]"
                     ".map(r => r.dataset.series + '=' + r.dataset.value).sort()") == json{"api=2", "crm=1", "crm=2"});
  CHECK(browser.eval("[...document.querySelectorAll('[data-chart=deferrals] ~ .legend span')].map(s => s.textContent)") ==
        json{"api", "crm"});
  browser.screenshot(screenshot_path("charts-deferrals.png"));
}

TEST_CASE("the dashboard's schedules, live events, runners and retry of all dead letters, in a real browser") {
  const std::string url = dashboard_database();
  auto db = connect_to(url);
  REQUIRE(run_prescient(with_db({"cron", "add", "--id", "nightly", "--spec", "30 2 * * *", "--time-zone", "Europe/Berlin"}, url))
              .exit_code == 0);
  REQUIRE(run_prescient(with_db({"cron", "add", "--id", "hourly", "--spec", "@hourly"}, url)).exit_code == 0);
  const WebProcess web(url);
  Chromium browser;

  SECTION("schedules: the list, next firings in the zone and in UTC, pause, resume and remove") {
    browser.open(web.base() + "/schedules");
    CHECK(browser.eval("document.querySelectorAll('[data-table=schedules] tbody tr').length") == 2);
    CHECK(text_of(browser, "[data-table=schedules] tr[data-id=nightly] [data-state]") == "active");
    browser.screenshot(screenshot_path("schedules.png"));

    browser.open(web.base() + "/schedules/nightly");
    const json local = browser.eval("[...document.querySelectorAll('[data-table=next-firings] tbody tr td:first-child')]"
                                    ".map(td => td.textContent)");
    const json utc = browser.eval("[...document.querySelectorAll('[data-table=next-firings] tbody tr td:last-child')]"
                                  ".map(td => td.textContent)");
    REQUIRE(local.size() == 5);
    REQUIRE(utc.size() == 5);
    // 02:30 in Berlin is 01:30 UTC in winter (+01:00) and 00:30 UTC in summer (+02:00).
    for (std::size_t i = 0; i < local.size(); ++i) {
      const std::string wall = local[i], instant = utc[i];
      CHECK_THAT(wall, Catch::Matches(R"(\d{4}-\d\d-\d\dT02:30:00\+0[12]:00)"));
      CHECK(instant.substr(11, 5) == (wall.substr(19) == "+01:00" ? "01:30" : "00:30"));
    }
    browser.screenshot(screenshot_path("schedule.png"));
    // A pause says why; the note is shown (as text) while it is paused.
    browser.eval("document.querySelector('[name=pause-note]').value = '<b>vendor</b> outage';"
                 " document.querySelector('[data-action=pause]').click(); true");
    browser.wait_until("document.querySelector('[data-schedule][data-state=paused]')");
    CHECK(count_of(*db, "SELECT count(*) FROM prescient.cron_schedule WHERE id = 'nightly' AND paused_at IS NOT NULL"
                        " AND pause_note = '<b>vendor</b> outage'") == 1);
    CHECK(browser.eval("[...document.querySelectorAll('[data-schedule] th')].find(th => th.textContent === 'paused because')"
                       ".nextSibling.textContent") == "<b>vendor</b> outage");
    CHECK(count_of(*db, "SELECT count(*) FROM prescient.future_job WHERE job_key = 'cron:nightly'") == 0);
    // Backfill a past range; a reversed one is refused, shown, and writes nothing.
    const auto backfill = [&](const char* from, const char* to) {
      browser.eval(std::string("(() => { const f = document.querySelector('[data-form=backfill]');"
                               " f.elements.from.value = '") + from + "'; f.elements.to.value = '" + to +
                   "'; f.requestSubmit(); return true; })()");
    };
    backfill("2026-11-02T00:00:00Z", "2026-11-01T00:00:00Z");
    browser.wait_until("document.getElementById('toast').className.includes('error')");
    CHECK_THAT(text_of(browser, "#toast"), Catch::Contains("to: 2026-11-01T00:00:00Z is before from 2026-11-02T00:00:00Z"));
    backfill("2026-11-01T00:00:00Z", "2026-11-02T00:00:00Z");
    browser.wait_until("document.getElementById('toast').textContent.includes('backfill is check')");
    CHECK(count_of(*db, "SELECT count(*) FROM prescient.future_job WHERE job_key LIKE 'cron-backfill:nightly:%'") == 1);
    // Trigger now: one occurrence out of the series, through a check of its own.
    browser.eval("window.confirm = () => true; document.querySelector('[data-action=trigger]').click(); true");
    browser.wait_until("document.getElementById('toast').textContent.includes('triggered')");
    CHECK(count_of(*db, "SELECT count(*) FROM prescient.future_job WHERE job_key LIKE 'cron-trigger:nightly:%'") == 1);
    browser.eval("document.querySelector('[data-action=resume]').click(); true");
    browser.wait_until("document.querySelector('[data-schedule][data-state=active]')");
    CHECK(count_of(*db, "SELECT count(*) FROM prescient.future_job WHERE job_key = 'cron:nightly'") == 1);
    browser.eval("window.confirm = () => true; document.querySelector('[data-action=remove]').click(); true");
    // The page goes back to the list (while it loads there is no document body yet).
    browser.wait_until("location.pathname === '/schedules'"
                       " && document.querySelectorAll('[data-table=schedules] tbody tr').length === 1");
    CHECK(count_of(*db, "SELECT count(*) FROM prescient.cron_schedule WHERE id = 'nightly'") == 0);
  }

  SECTION("events: the outbox's last events, then each as it commits, as text; a filter by type") {
    *db << "INSERT INTO prescient.event (id, type, source, occurred_at, emitted_at, payload)"
           " VALUES ('ev-1', 'order.shipped', 'test', now(), now(), '{\"n\": 1}'),"
           "        ('ev-2', '<b>bold</b>', 'test', now(), now(), '{}')";
    browser.open(web.base() + "/events");
    browser.wait_until("document.querySelectorAll('[data-table=events] tbody tr').length === 2");
    CHECK(text_of(browser, "[data-table=events] tr[data-id=ev-2] td:nth-child(2)") == "<b>bold</b>");
    CHECK(browser.eval("document.querySelectorAll('main b').length") == 0);
    *db << "INSERT INTO prescient.event (id, type, source, occurred_at, emitted_at, payload)"
           " VALUES ('ev-3', 'order.shipped', 'test', now(), now(), '{\"n\": 3}')";
    *db << "SELECT pg_notify('prescient_event', 'ev-3')";
    browser.wait_until("document.querySelector('[data-table=events] tbody tr:first-child').dataset.id === 'ev-3'");
    CHECK(browser.eval("document.querySelector('[data-stream]').dataset.stream") == "live");
    browser.screenshot(screenshot_path("events.png"));
    browser.open(web.base() + "/events?type=order.shipped");
    browser.wait_until("document.querySelectorAll('[data-table=events] tbody tr').length === 2");
    CHECK(browser.eval("[...document.querySelectorAll('[data-table=events] tbody tr')].map(r => r.dataset.id)") ==
          json{"ev-3", "ev-1"});
  }

  SECTION("runners: those that completed one of the last slots, on the overview") {
    *db << "SELECT prescient.record_runner_seen('host-a:1', '0/1', date_bin('1 minute', now(), 'epoch') - interval '1 minute', 7)";
    *db << "SELECT prescient.record_runner_seen('host-b:2', '0/1', date_bin('1 minute', now(), 'epoch') - interval '10 minutes', 0)";
    browser.open(web.base() + "/");
    CHECK(text_of(browser, "[data-figure=runners]") == "1");
    CHECK(browser.eval("document.querySelectorAll('[data-table=runners] tbody tr').length") == 2);
    CHECK(browser.eval("document.querySelectorAll('[data-table=runners] tbody tr.stale').length") == 1);
  }

  SECTION("dead letters: retry all that match a filter, after their count, in bounded requests") {
    *db << "INSERT INTO prescient.job_history (id, job, entity_name, entity_key, payload, first_check_at, last_check_at,"
           "    check_count, attempts, last_error, enqueued_on, enqueued_by, finished_at, finished_by, outcome)"
           " SELECT 20000 + i, 'noop', 'user', 'd' || i, '{}', now() - interval '2 hours', now() - interval '2 hours', 1, 5,"
           "        'boom', now() - interval '3 hours', 'app', now() - interval '1 hour', 'r', 'failed'"
           "   FROM generate_series(1, 1200) i";
    browser.open(web.base() + "/dead-letters?job=noop");
    browser.eval("window.confirmed = ''; window.confirm = (text) => { window.confirmed = text; return true; };"
                 " document.querySelector('[data-action=retry-all]').click(); true");
    browser.wait_until("document.querySelectorAll('[data-table=dead-letters]').length === 0");
    CHECK(browser.eval("window.confirmed") == "Retry 1,200 dead letters of noop? They become pending at the next slot.");
    CHECK(count_of(*db, "SELECT count(*) FROM prescient.future_job WHERE id > 20000") == 1200);
    // The other class's dead letter is untouched; five requests of at most 250 did it.
    CHECK(count_of(*db, "SELECT count(*) FROM prescient.future_job WHERE id = 9100") == 0);
  }
}

TEST_CASE("the dashboard's limits and a check's deferrals, in a real browser, their text kept text") {
  const std::string url = dashboard_database();
  auto db = connect_to(url);
  REQUIRE(run_prescient(with_db({"limits", "set", "crm", "--key", "payload.tenant", "--rate", "30/m",
                                 "--concurrency", "2", "--by", "ops"}, url)).exit_code == 0);
  REQUIRE(run_prescient(with_db({"limits", "set", "tenants", "--key", "payload.tenant", "--fair-share", "--weight",
                                 "acme=3", "--weight", std::string(kHostileKey) + "=2"}, url)).exit_code == 0);
  const long long id = count_of(*db, "SELECT min(id) FROM prescient.future_job");
  // What a runner records when the limit holds the check back (a key value with markup in it).
  *db << "INSERT INTO prescient.flow_deferral (check_id, deferred_at, limit_name, key_value, until)"
         " VALUES (:id, now(), 'crm', :key, now() + interval '2 seconds')",
      soci::use(id), soci::use(kHostileKey);
  *db << "INSERT INTO prescient.flow_figure (limit_name, key_value, deferred, last_deferred_at)"
         " VALUES ('crm', :key, 7, now())",
      soci::use(kHostileKey);
  const WebProcess web(url);
  httplib::Client client("127.0.0.1", web.port());
  const json limits = get_json(client, "/api/limits").second;
  REQUIRE(limits["limits"].size() == 2);
  CHECK(limits["limits"][0]["rate"] == "30/m");
  CHECK(limits["limits"][1]["weights"] == json{{"acme", 3}, {kHostileKey, 2}});
  CHECK(limits["limits"][0]["concurrency"] == 2);
  CHECK(limits["deferrals"][0]["deferred"] == 7);
  const json trace = get_json(client, "/api/checks/" + std::to_string(id)).second;
  REQUIRE(trace["deferrals"].size() == 1);
  CHECK(trace["deferrals"][0]["limit"] == "crm");

  Chromium browser;
  browser.open(web.base() + "/limits");
  CHECK(text_of(browser, "[data-table=limits] tbody tr[data-name=crm] td:nth-child(5)") == "30/m");
  CHECK(text_of(browser, "[data-table=limits] tbody tr[data-name=tenants] td[data-field=fair_share]") ==
        "yes " + std::string(kHostileKey) + "×2 acme×3");  // in the order of the values
  CHECK(text_of(browser, "[data-table=deferrals] tbody td.mono") == kHostileKey);
  CHECK(text_of(browser, "[data-table=deferrals] tbody td:nth-child(3)") == "7");
  browser.screenshot(screenshot_path("limits.png"));

  // Set and remove a limit from the page (this dashboard's role owns the schema: limit_set is the owner's).
  const auto submit = [&](const std::string& fields) {
    browser.eval("(() => { const f = document.querySelector('[data-form=limit]'); " + fields +
                 " f.requestSubmit(); return true; })()");
  };
  submit("f.elements.name.value = 'api'; f.elements.key.value = 'http_target'; f.elements.rate.value = '5/s';"
         " f.elements.concurrency.value = '2'; f.elements.key_value.value = 'crm';");
  browser.wait_until("document.querySelector('[data-table=limits] tr[data-name=api]')");
  CHECK(count_of(*db, "SELECT count(*) FROM prescient.flow_limit WHERE name = 'api' AND key = 'http_target'"
                      " AND rate = 5 AND per_seconds = 1 AND concurrency = 2 AND key_value = 'crm'"
                      " AND updated_by = 'web'") == 1);
  // Bad input: the database's refusal shown as it comes, nothing written.
  submit("f.elements.name.value = 'bad'; f.elements.key.value = 'tenant'; f.elements.rate.value = '5/s';");
  browser.wait_until("document.getElementById('toast').className.includes('error')");
  CHECK_THAT(text_of(browser, "#toast"), Catch::Contains("unknown kind of key 'tenant'"));
  CHECK(count_of(*db, "SELECT count(*) FROM prescient.flow_limit WHERE name = 'bad'") == 0);
  browser.eval("window.confirm = () => true;"
               " document.querySelector('[data-table=limits] tr[data-name=api] [data-action=remove-limit]').click(); true");
  browser.wait_until("!document.querySelector('[data-table=limits] tr[data-name=api]')");
  CHECK(count_of(*db, "SELECT count(*) FROM prescient.flow_limit WHERE name = 'api'") == 0);
  browser.open(web.base() + "/checks/" + std::to_string(id));
  // The deferral is an entry of the check's timeline, its key value as text.
  CHECK(browser.eval("document.querySelectorAll('[data-table=timeline] tbody tr[data-kind=deferral][data-limit=crm]').length") == 1);
  CHECK_THAT(text_of(browser, "[data-table=timeline] tr[data-kind=deferral] td:nth-child(3)"),
             Catch::StartsWith("deferred by limit crm (" + kHostileKey + ") until "));
  CHECK(browser.eval("document.querySelectorAll('main img').length") == 0);
  CHECK(browser.eval("document.title") == "prescient");

  // A day of deferrals too many to count in 5 s (here: their table locked by another session): the chart's
  // count is stopped, and the page says so and draws the rest.
  auto locker = connect_to(url);
  *locker << "BEGIN";
  *locker << "LOCK TABLE prescient.flow_deferral IN ACCESS EXCLUSIVE MODE";
  browser.open(web.base() + "/limits");
  *locker << "ROLLBACK";
  CHECK(text_of(browser, "[data-chart-error=deferrals]") ==
        "counting the past day's deferrals took longer than 5s and was stopped: the totals per key value are in the table below");
  CHECK(browser.eval("document.querySelectorAll('[data-chart=deferrals]').length") == 0);
  CHECK(text_of(browser, "[data-table=deferrals] tbody td:nth-child(3)") == "7");
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
  browser.open(web.base() + "/jobs");
  CHECK(browser.eval("document.querySelectorAll('[data-table=jobs] tbody tr').length") ==
        count_of(*db, "SELECT count(*) FROM prescient.job_class"));
  CHECK(browser.eval("document.querySelectorAll('[data-form=policy]').length") == 0);
  CHECK(browser.eval("fetch('/api/jobs/emit/policy', {method: 'POST', headers: {'X-CSRF-Token': document.querySelector("
                     "'meta[name=\"csrf-token\"]').content}, body: '{\"max_attempts\": 2}'}).then(r => r.status)") == 403);
  CHECK(count_of(*db, "SELECT count(*) FROM prescient.job_class WHERE job = 'emit' AND max_attempts IS NULL") == 1);
  CHECK(count_of(*db, "SELECT count(*) FROM prescient.future_job WHERE id = " + std::to_string(id)) == 1);
}

TEST_CASE("the dashboard read-only with the documented read-only role (docs/web.md): every read answers") {
  const std::string url = dashboard_database();
  auto db = connect_to(url);
  std::string viewer;
  *db << "SELECT 'viewer_' || current_database()", soci::into(viewer);
  *db << "DROP ROLE IF EXISTS " + viewer;
  // docs/web.md, "The database role it needs", word for word but the name.
  *db << "CREATE ROLE " + viewer + " LOGIN";
  *db << "GRANT USAGE ON SCHEMA prescient TO " + viewer;
  *db << "GRANT SELECT ON ALL TABLES IN SCHEMA prescient TO " + viewer;
  REQUIRE(run_prescient(with_db({"cron", "add", "--id", "hourly", "--spec", "@hourly"}, url)).exit_code == 0);
  *db << "SELECT prescient.refresh_queue_figures()";  // a daemon's work: the viewer may not count
  {
    const WebProcess web(as_user(url, viewer), {"--read-only"});
    httplib::Client client("127.0.0.1", web.port());
    const long long id = count_of(*db, "SELECT min(id) FROM prescient.future_job");
    for (const std::string& path : std::vector<std::string>{"/api/stats", "/api/future?zoom=day", "/api/past", "/api/checks?job=emit",
                                   "/api/checks/" + std::to_string(id), "/api/dead-letters", "/api/dead-letters/count",
                                   "/api/schedules", "/api/schedules/hourly", "/api/runners", "/api/limits", "/api/limits/deferrals",
                                   "/api/jobs", "/api/calendars", "/api/health"}) {
      const auto [status, body] = get_json(client, path);
      INFO(path << ": " << body.dump());
      CHECK(status == 200);
    }
    CHECK(get_json(client, "/api/dead-letters/count").second["matching"] == 1);
    CHECK(get_json(client, "/api/stats").second["pending"] ==
          count_of(*db, "SELECT count(*) FROM prescient.future_job"));
    CHECK(client.Get("/api/events/stream?after=nonsense")->status == 400);
  }
  *db << "DROP OWNED BY " + viewer;
  *db << "DROP ROLE " + viewer;
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

TEST_CASE("the dashboard's search: an entity key needs its entity name, and a search held up is stopped") {
  const std::string url = dashboard_database();
  const WebProcess web(url);
  httplib::Client client("127.0.0.1", web.port());
  const auto [key_alone, refusal] = get_json(client, "/api/checks?entity_key=u3");
  CHECK(key_alone == 400);
  CHECK(refusal["error"] == "an entity key is searched within an entity name: give entity_name too");
  const auto [with_name, found] = get_json(client, "/api/checks?entity_name=user&entity_key=u3");
  CHECK(with_name == 200);
  CHECK(found.size() == 1);

  // A search that cannot finish (here: the table is locked by another session) is stopped at 5 s with a
  // reason, not left holding one of the server's sessions.
  auto locker = connect_to(url);
  *locker << "BEGIN";
  *locker << "LOCK TABLE prescient.future_job IN ACCESS EXCLUSIVE MODE";
  client.set_read_timeout(std::chrono::seconds{20});
  const auto started = std::chrono::steady_clock::now();
  const auto [held, stopped] = get_json(client, "/api/checks?job=emit");
  const auto waited = std::chrono::steady_clock::now() - started;
  *locker << "ROLLBACK";
  CHECK(held == 503);
  CHECK(stopped["error"] ==
        "the search took longer than 5s and was stopped: narrow it with a job key, an entity, or a class");
  CHECK(waited >= std::chrono::milliseconds{4900});
  CHECK(waited < std::chrono::seconds{10});
  const auto [after, rows] = get_json(client, "/api/checks?job=emit");
  CHECK(after == 200);
  CHECK(rows.size() == 7);
}

// A failover cuts every session the dashboard holds. The request that meets the first cut one fails (503),
// and the idle ones are closed with it; each once failed a request of its own.
TEST_CASE("the dashboard's sessions cut (a failover): one request fails, the next reads on a new session") {
  const std::string url = create_migrated_database(60);
  const WebProcess web(url);
  auto db = connect_to(url);
  const auto dashboard_sessions = [&] {
    return count_of(*db, "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()"
                         " AND pid <> pg_backend_pid()");
  };
  // Its pool holds several sessions, as a page that reads several things at once leaves it.
  wait_until("the dashboard to hold 3 sessions or more", std::chrono::seconds(20), [&] {
    std::vector<std::thread> reads;
    for (int i = 0; i < 4; ++i) reads.emplace_back([&] { http_get(web.port(), "/api/jobs"); });
    for (auto& read : reads) read.join();
    return dashboard_sessions() >= 3;
  });
  CHECK(count_of(*db, "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE datname ="
                      " current_database() AND pid <> pg_backend_pid()") >= 3);
  int failed = 0;
  while (!http_get(web.port(), "/api/jobs")) {
    ++failed;
    REQUIRE(failed < 10);
  }
  CHECK(failed <= 1);
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
  const std::string url = create_migrated_database(1);
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
  // The figures are there from the first request (counted before the daemon fires), and the daemon is
  // among the runners once it has completed a slot.
  CHECK(get_json(client, "/api/stats").first == 200);
  json runners = json::array();
  for (int i = 0; i < 50 && runners.empty(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    runners = get_json(client, "/api/runners").second;
  }
  REQUIRE(runners.size() == 1);
  CHECK(runners[0]["runner_id"] == "web-test");
  CHECK(runners[0]["shard"] == "0/1");
  CHECK(runners[0]["slots_behind"].get<long long>() <= 1);
  ::kill(daemon, SIGTERM);
  CHECK(wait_for(daemon) == 0);
  ::unlink(log.c_str());

  const ProcessResult open = run_prescient(with_db({"daemon", "--web-addr", "0.0.0.0:8080"}, url));
  CHECK(open.exit_code == 2);
  CHECK_THAT(open.err, Catch::Contains("refusing to serve the dashboard on 0.0.0.0:8080"));
}

TEST_CASE("a check's page: its fields, its timeline oldest first, its class's policy; its payload shown as text") {
  const std::string url = create_migrated_database(900);
  auto db = connect_to(url);
  const json payload{{"order", 5},
                     {"note", "<script>document.title='pwned'</script>"},
                     {"img", kHostileKey}};
  const auto schedule = [&](const std::string& job, const std::string& key, const std::string& at, const std::string& group) {
    long long id = 0;
    const std::string text = payload.dump();
    *db << "SELECT id FROM prescient.schedule(:job, 'order', :key, :at::timestamptz, p_job_key => 'order-unshipped:' || :key,"
           " p_group_key => :group, p_payload => :p::jsonb, p_now => '2026-11-21T09:00:00Z',"
           " p_allow_unknown_class => true)",
        soci::use(job), soci::use(key), soci::use(at), soci::use(key), soci::use(group), soci::use(text), soci::into(id);
    return id;
  };
  // Rescheduled three times an hour apart, failed once (retried at the next slot), then done; a second check
  // of the class runs once and stays pending; a third, of a class the registry has no row for, never runs.
  const long long id = schedule("three_looks", "5", "2026-11-21T10:00:00Z", "customer:<b>7</b>");
  const long long once = schedule("three_looks", "6", "2026-11-21T13:15:00Z", "customer:8");
  const long long never = schedule("unregistered", "7", "2026-11-22T00:00:00Z", "customer:9");
  prescient::Registry registry;
  registry.add("three_looks", [] { return std::make_unique<ThreeLooksThenDone>(); });
  prescient::ManualClock clock(prescient::parse_time("2026-11-21T09:00:00Z"));
  for (const char* at : {"2026-11-21T10:00:01Z", "2026-11-21T11:00:01Z", "2026-11-21T12:00:01Z",
                         "2026-11-21T13:00:01Z", "2026-11-21T13:15:01Z"}) {
    clock.set(prescient::parse_time(at));
    prescient::SlotRunner runner({.database_url = url, .runner_id = "r1"}, registry, clock);
    runner.run_slot(runner.settings().grid().floor(clock.now()));
  }
  REQUIRE(count_of(*db, "SELECT count(*) FROM prescient.check_run WHERE id = " + std::to_string(id)) == 4);
  REQUIRE(count_of(*db, "SELECT count(*) FROM prescient.job_history WHERE id = " + std::to_string(id)) == 1);
  REQUIRE(count_of(*db, "SELECT count(*) FROM prescient.future_job WHERE id = " + std::to_string(once)) == 1);
  // The class's policy, set from SQL as an application would.
  *db << "SELECT prescient.job_class_add('three_looks', false, 'test', now())";
  *db << "SELECT 1 FROM prescient.set_job_policy('three_looks', p_max_checks => 12)";

  const WebProcess web(url);
  httplib::Client client("127.0.0.1", web.port());
  const json answer = get_json(client, "/api/checks/" + std::to_string(id)).second;
  CHECK(answer["runs"].size() == 4);
  CHECK(answer["class_policy"]["name"] == "three_looks");
  CHECK(answer["class_policy"]["max_checks"] == 12);
  CHECK(answer["class_policy"]["max_attempts"].is_null());
  CHECK(get_json(client, "/api/checks/" + std::to_string(never)).second["class_policy"].is_null());

  Chromium browser;
  const auto texts = [&](const std::string& selector) {
    return browser.eval("[...document.querySelectorAll(" + json(selector).dump() + ")].map(n => n.textContent)");
  };
  const auto field = [&](const std::string& name) { return text_of(browser, "[data-check] [data-field=" + name + "] td"); };

  SECTION("ended: five entries oldest first, each with its time, what happened, runner, checks and attempts") {
    browser.open(web.base() + "/checks/" + std::to_string(id));
    CHECK(browser.eval("document.querySelector('[data-pending]').dataset.pending") == "none");
    CHECK(field("id") == std::to_string(id));
    CHECK(field("job") == "three_looks");
    CHECK(field("job_key") == "order-unshipped:5");
    CHECK(field("entity") == "order/5");
    CHECK(field("group_key") == "customer:<b>7</b>");
    CHECK(field("state") == "ended done at 2026-11-21 13:15:01Z by r1");
    CHECK(field("first_check_at") == "2026-11-21 10:00:00Z");
    CHECK(browser.eval("document.querySelectorAll('[data-check] [data-field=next_check_at]').length") == 0);
    // The payload, pretty-printed, as text: its markup is characters, not elements.
    CHECK(browser.eval("JSON.parse(document.querySelector('[data-field=payload] pre').textContent)") == payload);
    CHECK_THAT(field("payload"), Catch::Contains("\"note\": \"<script>document.title='pwned'</script>\""));
    CHECK_THAT(field("payload"), Catch::Contains("\"img\": " + json(kHostileKey).dump()));  // JSON's quotes escaped
    CHECK(browser.eval("document.querySelectorAll('main img, main script, main b').length") == 0);
    CHECK(browser.eval("document.title") == "prescient");

    CHECK(texts("[data-table=timeline] tbody tr td:nth-child(1)") ==
          json{"2026-11-21 10:00:01Z", "2026-11-21 11:00:01Z", "2026-11-21 12:00:01Z", "2026-11-21 13:00:01Z",
               "2026-11-21 13:15:01Z"});
    CHECK(texts("[data-table=timeline] tbody tr td:nth-child(2)") ==
          json{"2026-11-21 10:00:00Z", "2026-11-21 11:00:00Z", "2026-11-21 12:00:00Z", "2026-11-21 13:00:00Z",
               "2026-11-21 13:15:00Z"});
    CHECK(texts("[data-table=timeline] tbody tr td:nth-child(3)") ==
          json{"rescheduled to 2026-11-21 11:00:00Z (answered 2026-11-21 11:00:00Z)",
               "rescheduled to 2026-11-21 12:00:00Z (answered 2026-11-21 12:00:00Z)",
               "rescheduled to 2026-11-21 13:00:00Z (answered 2026-11-21 13:00:00Z)",
               "retried to 2026-11-21 13:15:00Z: receiver down",
               "ended done, result {\"sent\":\"<b>mail</b>\"}"});
    CHECK(texts("[data-table=timeline] tbody tr td:nth-child(4)") == json{"r1", "r1", "r1", "r1", "r1"});
    CHECK(texts("[data-table=timeline] tbody tr td:nth-child(6)") == json{"1", "2", "3", "3", "4"});
    CHECK(texts("[data-table=timeline] tbody tr td:nth-child(7)") == json{"0", "0", "0", "1", "0"});
    for (const json& took : texts("[data-table=timeline] tbody tr td:nth-child(5)")) {
      CHECK_THAT(took.get<std::string>(), Catch::Matches(R"(\d+ µs|\d+\.\d ms|\d+\.\d\d s)"));
    }
    CHECK(browser.eval("[...document.querySelectorAll('[data-table=timeline] tbody tr')].map(r => r.dataset.result || r.dataset.outcome)") ==
          json{"rescheduled", "rescheduled", "rescheduled", "retried", "done"});
    // The strip: one marker per entry, the end's last.
    CHECK(browser.eval("[...document.querySelectorAll('[data-chart=timeline] circle')].map(c => c.dataset.kind)") ==
          json{"run", "run", "run", "run", "end"});

    // The class's policy: what the registry's row sets, and what it leaves to the class or the settings.
    CHECK(text_of(browser, "[data-table=class-policy] [data-field=max_checks] td") == "12");
    CHECK(text_of(browser, "[data-table=class-policy] [data-field=max_attempts] td") ==
          "not set here: the class's coded policy or the settings");
    CHECK(text_of(browser, "[data-table=class-policy] [data-field=timeout] td") ==
          "not set here: the class's coded policy or the settings");
    browser.screenshot(screenshot_path("check-timeline.png"));

    // Unlimited is said so.
    *db << "SELECT 1 FROM prescient.set_job_policy('three_looks', p_max_checks => 0, p_backoff => '90 seconds')";
    browser.open(web.base() + "/checks/" + std::to_string(id));
    CHECK(text_of(browser, "[data-table=class-policy] [data-field=max_checks] td") == "0 (no limit)");
    CHECK(text_of(browser, "[data-table=class-policy] [data-field=backoff] td") == "1m30s");
  }

  SECTION("pending: its next check, the one run so far; a class with no row; a check that has not run") {
    browser.open(web.base() + "/checks/" + std::to_string(once));
    CHECK(browser.eval("document.querySelector('[data-pending]').dataset.pending") == std::to_string(once));
    CHECK(field("state") == "pending");
    CHECK(field("next_check_at") == "2026-11-21 14:15:00Z");
    CHECK(field("job_key") == "order-unshipped:6");
    CHECK(field("group_key") == "customer:8");
    CHECK(field("counts") == "1 / 0");
    CHECK(texts("[data-table=timeline] tbody tr td:nth-child(3)") ==
          json{"rescheduled to 2026-11-21 14:15:00Z (answered 2026-11-21 14:15:00Z)"});
    CHECK(browser.eval("[...document.querySelectorAll('[data-chart=timeline] circle')].map(c => c.dataset.kind)") ==
          json{"run", "next"});
    CHECK(browser.eval("document.querySelectorAll('[data-action=cancel]').length") == 1);
    CHECK(text_of(browser, "[data-table=class-policy] [data-field=max_checks] td") == "12");

    browser.open(web.base() + "/checks/" + std::to_string(never));
    CHECK(field("job") == "unregistered");
    CHECK(field("next_check_at") == "2026-11-22 00:00:00Z");
    CHECK(field("last_error") == "—");
    CHECK(browser.eval("document.querySelectorAll('[data-table=timeline]').length") == 0);
    CHECK(browser.eval("document.querySelectorAll('[data-chart=timeline]').length") == 0);
    CHECK(text_of(browser, "[data-timeline=empty]") == "Nothing yet: it has not run.");
    CHECK_THAT(text_of(browser, "[data-policy=none]"), Catch::Contains("The class registry has no row for unregistered"));
    CHECK(browser.eval("document.querySelectorAll('main img, main script').length") == 0);
    CHECK(browser.eval("document.title") == "prescient");
    browser.screenshot(screenshot_path("check-pending.png"));
  }
}

TEST_CASE("the Jobs page: the class registry with each class's policy, set and cleared through its form") {
  const std::string url = create_migrated_database(60);
  auto db = connect_to(url);
  *db << "SELECT prescient.job_class_add('ship_py', true, 'test', now())";
  // A name the naming rule now refuses (025_names.sql), as a class declared before the rule keeps it: written
  // into the registry directly, the way such a row is still there. The page must show it as text.
  *db << "INSERT INTO prescient.job_class (job, runs_in, origin, declared_at, declared_by)"
         " VALUES (:job, 'worker', 'worker', now(), 'test')", soci::use(kHostileKey);
  *db << "SELECT 1 FROM prescient.set_job_policy('ship_py', p_max_checks => 0)";
  *db << "SELECT prescient.schedule('ship_py', 'order', '1', now() + interval '10 minutes')";
  REQUIRE(run_prescient(with_db({"jobs", "pause", "ship_py", "--by", "ops"}, url)).exit_code == 0);
  const WebProcess web(url);
  httplib::Client client("127.0.0.1", web.port());

  // The API: every row of the registry, by name, with its pause and its pending checks as counted.
  const auto [status, classes] = get_json(client, "/api/jobs");
  REQUIRE(status == 200);
  json names = json::array();
  for (const json& c : classes) names.push_back(c["name"]);
  std::vector<std::string> expected;
  soci::rowset<std::string> rows = (db->prepare << "SELECT job FROM prescient.job_class ORDER BY job COLLATE \"C\"");
  for (const std::string& job : rows) expected.push_back(job);
  CHECK(names == json(expected));
  for (const char* built_in : {"command", "cron", "emit", "http", "noop"}) {
    CHECK(std::find(names.begin(), names.end(), json(built_in)) != names.end());
  }
  const auto ship = std::find_if(classes.begin(), classes.end(), [](const json& c) { return c["name"] == "ship_py"; });
  REQUIRE(ship != classes.end());
  CHECK((*ship)["runs_in"] == "worker");
  CHECK((*ship)["origin"] == "worker");
  CHECK((*ship)["max_checks"] == 0);
  CHECK((*ship)["max_attempts"].is_null());
  CHECK((*ship)["paused"]["paused_by"] == "ops");
  CHECK((*ship)["pending"] == 1);

  Chromium browser;
  const auto row = [](const std::string& name) {
    return "[...document.querySelectorAll('[data-table=jobs] tbody tr')].find(r => r.dataset.name === " + json(name).dump() + ")";
  };
  const auto cell = [&](const std::string& name, const std::string& field) {
    return browser.eval(row(name) + ".querySelector('[data-field=" + field + "]').textContent").get<std::string>();
  };
  const auto submit = [&](const std::string& name, const std::string& fields) {
    browser.eval("(() => { const f = " + row(name) + ".querySelector('[data-form=policy]'); " + fields +
                 " f.requestSubmit(); return true; })()");
  };
  const std::string not_set = "not set here: the class's coded policy or the settings";
  browser.open(web.base() + "/jobs");
  CHECK(browser.eval("document.querySelectorAll('[data-table=jobs] tbody tr').length") ==
        count_of(*db, "SELECT count(*) FROM prescient.job_class"));
  CHECK(cell("emit", "runs_in") == "runner");
  CHECK(cell("emit", "origin") == "built-in");
  CHECK(cell("ship_py", "runs_in") == "worker");
  CHECK(cell("ship_py", "max_checks") == "0 (no limit)");
  CHECK(cell("ship_py", "max_attempts") == not_set);
  CHECK(cell("ship_py", "backoff") == not_set);
  CHECK_THAT(cell("ship_py", "state"), Catch::StartsWith("paused ") && Catch::EndsWith(" by ops"));
  CHECK(cell("emit", "state") == "active");
  CHECK(cell("ship_py", "pending") == "1");
  // A class named with markup is shown as its characters.
  CHECK(cell(kHostileKey, "name") == kHostileKey);
  CHECK(browser.eval("document.querySelectorAll('main img').length") == 0);
  CHECK(browser.eval("document.title") == "prescient");
  browser.screenshot(screenshot_path("jobs.png"));

  // Set through the form: the row in the database, then the page.
  submit("ship_py", "f.elements.max_attempts.value = '3'; f.elements.backoff.value = '1m'; f.elements.backoff_max.value = '1h';");
  browser.wait_until(row("ship_py") + ".querySelector('[data-field=max_attempts]').textContent === '3'");
  CHECK(count_of(*db, "SELECT count(*) FROM prescient.job_class WHERE job = 'ship_py' AND max_checks = 0 AND max_attempts = 3"
                      " AND backoff_seconds = 60 AND backoff_max_seconds = 3600 AND timeout_seconds IS NULL"
                      " AND policy_updated_by = 'web'") == 1);
  CHECK(cell("ship_py", "backoff") == "1m");
  CHECK(cell("ship_py", "backoff_max") == "1h");
  CHECK(cell("ship_py", "max_checks") == "0 (no limit)");

  // A bad value: SQL's refusal shown, nothing changed.
  submit("ship_py", "f.elements.max_attempts.value = '0'; f.elements.timeout.value = '30s';");
  browser.wait_until("document.getElementById('toast').className.includes('error')");
  CHECK(text_of(browser, "#toast") == "max_attempts 0 is under 1");
  CHECK(count_of(*db, "SELECT count(*) FROM prescient.job_class WHERE job = 'ship_py' AND max_attempts = 3"
                      " AND timeout_seconds IS NULL") == 1);

  // Clear a field: the class's coded policy or the settings decide it again.
  browser.open(web.base() + "/jobs");
  submit("ship_py", "f.elements.clear_backoff_max.checked = true;");
  browser.wait_until(row("ship_py") + ".querySelector('[data-field=backoff_max]').textContent === " + json(not_set).dump());
  CHECK(count_of(*db, "SELECT count(*) FROM prescient.job_class WHERE job = 'ship_py' AND backoff_max_seconds IS NULL"
                      " AND backoff_seconds = 60 AND max_attempts = 3") == 1);

  // The class named with markup: its name goes in the route's path, encoded.
  submit(kHostileKey, "f.elements.max_checks.value = 'unlimited'; f.elements.timeout.value = '30s';");
  browser.wait_until(row(kHostileKey) + ".querySelector('[data-field=timeout]').textContent === '30s'");
  CHECK(count_of(*db, "SELECT count(*) FROM prescient.job_class WHERE job = '" + std::regex_replace(kHostileKey, std::regex("'"), "''") +
                      "' AND max_checks = 0 AND timeout_seconds = 30") == 1);
  CHECK(browser.eval("document.querySelectorAll('main img').length") == 0);
  CHECK(browser.eval("document.title") == "prescient");

  // The route as other actions: refused without the page's token; bad input a 400 naming the value.
  const std::string policy = "/api/jobs/ship_py/policy";
  CHECK(client.Post(policy, R"({"max_attempts": 4})", "application/json")->status == 403);
  CHECK(client.Post(policy, {{"X-CSRF-Token", std::string(64, '0')}}, R"({"max_attempts": 4})", "application/json")->status == 403);
  CHECK(count_of(*db, "SELECT count(*) FROM prescient.job_class WHERE job = 'ship_py' AND max_attempts = 3") == 1);
  const auto page = client.Get("/");
  std::smatch found;
  REQUIRE(std::regex_search(page->body, found, std::regex("name=\"csrf-token\" content=\"([0-9a-f]{64})\"")));
  const httplib::Headers token{{"X-CSRF-Token", found[1]}};
  const auto refused = [&](const std::string& body) {
    const auto answer = client.Post(policy, token, body, "application/json");
    REQUIRE(answer);
    CHECK(answer->status == 400);
    return json::parse(answer->body)["error"].get<std::string>();
  };
  CHECK(refused(R"({"max_attempts": 2.5})") == "max_attempts '2.5' is not a whole number");
  CHECK(refused(R"({"max_checks": "lots"})") == "max_checks 'lots' is not a whole number (or unlimited)");
  CHECK_THAT(refused(R"({"backoff": "soon"})"), Catch::StartsWith("backoff: invalid duration 'soon'"));
  CHECK(refused(R"({"backoff_max": "30s"})") == "backoff_max 30s is under the backoff 1m");
  CHECK(refused(R"({"clear": ["colour"]})") ==
        "cannot clear 'colour': the fields are max_checks, max_attempts, backoff, backoff_max and timeout");
  CHECK(refused("{}") == "nothing to set: give max_checks, max_attempts, backoff, backoff_max, timeout or clear");
  CHECK(count_of(*db, "SELECT count(*) FROM prescient.job_class WHERE job = 'ship_py' AND max_attempts = 3"
                      " AND backoff_seconds = 60") == 1);
  const auto unknown = client.Post("/api/jobs/nope/policy", token, R"({"max_attempts": 2})", "application/json");
  CHECK(unknown->status == 404);
  const auto set = client.Post(policy, token, R"({"max_attempts": 4, "clear": ["backoff"]})", "application/json");
  REQUIRE(set->status == 200);
  CHECK(json::parse(set->body)["max_attempts"] == 4);
  CHECK(json::parse(set->body)["backoff"].is_null());

  // Declare a class run by workers (docs/workers.md) through the page's form: the registry's row, then the page.
  browser.open(web.base() + "/jobs");
  browser.eval("(() => { const f = document.querySelector('[data-form=declare]'); f.elements.name.value = 'ship_go';"
               " f.requestSubmit(); return true; })()");
  browser.wait_until(row("ship_go") + " !== undefined");
  CHECK(cell("ship_go", "runs_in") == "worker");
  CHECK(count_of(*db, "SELECT count(*) FROM prescient.job_class WHERE job = 'ship_go' AND runs_in = 'worker'"
                      " AND declared_by = 'web'") == 1);
  // The route: a class known already is left as it is; a bad name is SQL's one line; the token is required.
  const auto declared = client.Post("/api/jobs", token, R"({"name": "ship_go", "worker": false})", "application/json");
  REQUIRE(declared->status == 200);
  CHECK(json::parse(declared->body)["status"] == "known");
  CHECK(count_of(*db, "SELECT count(*) FROM prescient.job_class WHERE job = 'ship_go' AND runs_in = 'worker'") == 1);
  const auto empty = client.Post("/api/jobs", token, R"({"name": "", "worker": true})", "application/json");
  CHECK(empty->status == 400);
  CHECK(json::parse(empty->body)["error"] == "the job class is empty");
  CHECK(client.Post("/api/jobs", token, R"({"name": "x", "worker": "yes"})", "application/json")->status == 400);
  CHECK(client.Post("/api/jobs", R"({"name": "ship_rb", "worker": true})", "application/json")->status == 403);
  CHECK(count_of(*db, "SELECT count(*) FROM prescient.job_class WHERE job IN ('x', 'ship_rb')") == 0);
}

TEST_CASE("the Health page names the session holding a snapshot, read on the primary, its application shown as text") {
  const std::string url = create_migrated_database(60);
  const std::string replica = create_migrated_database(60);  // the pages' reads (--read-db): another database
  const WebProcess web(url, {"--read-db", replica});
  httplib::Client client("127.0.0.1", web.port());
  const std::string hostile_app = "<img src=x onerror=\"document.title='pwned'\">";
  auto holder = connect_to(url);
  *holder << "SET application_name = '" + std::string("<img src=x onerror=\"document.title=''pwned''\">") + "'";
  *holder << "BEGIN ISOLATION LEVEL REPEATABLE READ";
  long long pid = 0;
  *holder << "SELECT pg_backend_pid()", soci::into(pid);

  // The API reads it live, on the primary's pool.
  const auto [status, health] = get_json(client, "/api/health");
  INFO(health.dump(2));
  CHECK(status == 200);
  CHECK(health["horizon"]["holder"]["pid"] == pid);
  CHECK(health["horizon"]["holder"]["application_name"] == hostile_app);
  CHECK(health["problems"].empty());  // within doctor's default limits

  Chromium browser;
  browser.open(web.base() + "/health");
  const std::string row = "[data-table=holders] tr[data-pid='" + std::to_string(pid) + "']";
  CHECK(text_of(browser, row + " td:nth-child(4)") == hostile_app);
  CHECK(text_of(browser, row + " td:nth-child(6)") == "idle in transaction");
  CHECK(browser.eval("document.querySelectorAll('main img').length") == 0);
  CHECK(browser.eval("document.title") == "prescient");
  CHECK(browser.eval("document.querySelector('[data-table=tables] [data-table-name=future_job]') !== null") == true);
  CHECK(text_of(browser, "[data-problems]") == "No problem found.");
  browser.screenshot(screenshot_path("health.png"));
  *holder << "ROLLBACK";
}

TEST_CASE("the Calendars page: each calendar's open time over four weeks in its zone, as business time counts it") {
  const std::string url = create_migrated_database(60);
  auto db = connect_to(url);
  // A name the path must carry encoded (space, slash, #, +, =, @), set by someone named with markup; a
  // weekday night across midnight, a Monday holiday after it, and special days on both of 2026's DST changes.
  const std::string name = "support eu/night #2+x=y@z";
  const std::string definition =
      R"({"hours": {"mon": ["09:00-17:00"], "tue": ["09:00-17:00"], "wed": ["09:00-17:00"], "thu": ["09:00-17:00"],)"
      R"( "fri": ["09:00-15:00"], "sun": ["22:00-02:00"]}, "holidays": ["2026-10-26", "2026-11-02"],)"
      R"( "days": [{"date": "2026-03-29", "hours": ["01:00-05:00"]}, {"date": "2026-10-25", "hours": ["01:00-05:00"]}]})";
  *db << "SELECT prescient.calendar_set(:name, 'Europe/Berlin', '{\"hours\": {\"mon\": [\"09:00-17:00\"]}}', 'test')",
      soci::use(name);
  *db << "SELECT prescient.calendar_set(:name, 'Europe/Berlin', :definition::jsonb, :by)", soci::use(name),
      soci::use(definition), soci::use(kHostileKey);
  // A calendar named with markup, as a row written before the naming rule would be: never open.
  *db << "INSERT INTO prescient.calendar (name, version, time_zone, definition, changed_at, changed_by)"
         " VALUES (:name, 1, 'UTC', '{}', now(), 'test')", soci::use(kHostileKey);
  const WebProcess web(url);
  httplib::Client client("127.0.0.1", web.port());
  const auto path_of = [](const std::string& calendar) { return httplib::detail::encode_query_param(calendar); };

  // The list: every calendar, by name, with its zone, version and who set it.
  const auto [listed, all] = get_json(client, "/api/calendars");
  REQUIRE(listed == 200);
  REQUIRE(all.size() == 2);
  const json support = all[0]["name"] == name ? all[0] : all[1];
  CHECK(support["time_zone"] == "Europe/Berlin");
  CHECK(support["version"] == 2);
  CHECK(support["changed_by"] == kHostileKey);

  // Its days: each day's open time is the database's between its midnights, its business days calendar_open_day's.
  const auto [status, weeks] = get_json(client, "/api/calendars/" + path_of(name) + "?from=2026-10-19");
  REQUIRE(status == 200);
  CHECK(weeks["calendar"]["version"] == 2);
  REQUIRE(weeks["days"].size() == 28);
  CHECK(weeks["days"][0]["date"] == "2026-10-19");
  CHECK(weeks["days"][27]["date"] == "2026-11-15");
  for (const json& day : weeks["days"]) {
    INFO(day.dump());
    long long open_seconds = 0;
    for (const json& o : day["openings"]) {
      open_seconds += std::chrono::duration_cast<std::chrono::seconds>(time_of(o["closes_at"]) - time_of(o["opens_at"])).count();
    }
    const std::string date = string_of(day["date"]);
    long long counted = 0;
    *db << "SELECT extract(epoch FROM prescient.business_between(:name, d::timestamp AT TIME ZONE 'Europe/Berlin',"
           "                                                      (d + 1)::timestamp AT TIME ZONE 'Europe/Berlin'))::bigint"
           "  FROM (SELECT :date::date AS d) x",
        soci::use(name), soci::use(date), soci::into(counted);
    CHECK(open_seconds == counted);
    CHECK(day["open_day"] == (count_of(*db, "SELECT count(*) FROM prescient.calendar_open_day WHERE day = '" + date +
                                                "' AND calendar = '" + name + "'") == 1));
  }
  const auto day_of = [&](const json& answer, const std::string& date) {
    for (const json& day : answer["days"]) {
      if (day["date"] == date) return day;
    }
    FAIL("no day " << date);
    return json();
  };
  // The clocks go back: 01:00-05:00 is 4 hours, 02:00-03:00 open the first time only; the day is 25 hours.
  const json back = day_of(weeks, "2026-10-25");
  CHECK(back["starts_at"] == "2026-10-24T22:00:00Z");
  CHECK(back["ends_at"] == "2026-10-25T23:00:00Z");
  CHECK(back["offset_change"] == json{{"at", "2026-10-25T01:00:00Z"}, {"wall_before", "03:00"}, {"wall_after", "02:00"}});
  CHECK(back["openings"] == json::parse(R"([
    {"opens_at": "2026-10-24T23:00:00Z", "closes_at": "2026-10-25T01:00:00Z", "opens_second": 3600, "closes_second": 10800},
    {"opens_at": "2026-10-25T02:00:00Z", "closes_at": "2026-10-25T04:00:00Z", "opens_second": 10800, "closes_second": 18000}])"));
  // A holiday after Sunday night: closed, but for the night's last two hours.
  const json holiday = day_of(weeks, "2026-11-02");
  CHECK(holiday["open_day"] == false);
  CHECK(holiday["openings"] == json::parse(R"([
    {"opens_at": "2026-11-01T23:00:00Z", "closes_at": "2026-11-02T01:00:00Z", "opens_second": 0, "closes_second": 7200}])"));
  // The clocks go forward: 01:00-05:00 on the wall is 3 hours.
  const auto [spring_status, spring] = get_json(client, "/api/calendars/" + path_of(name) + "?from=2026-03-29");
  REQUIRE(spring_status == 200);
  const json forward = day_of(spring, "2026-03-29");
  CHECK(forward["offset_change"]["wall_before"] == "02:00");
  CHECK(forward["offset_change"]["wall_after"] == "03:00");
  CHECK(forward["openings"] == json::parse(R"([
    {"opens_at": "2026-03-29T00:00:00Z", "closes_at": "2026-03-29T03:00:00Z", "opens_second": 3600, "closes_second": 18000}])"));

  // Refusals: an unknown calendar (its name as it was asked), a day that is not one.
  const auto [unknown_status, unknown] = get_json(client, "/api/calendars/" + path_of("nope <b>"));
  CHECK(unknown_status == 404);
  CHECK(unknown["error"] == "no calendar named 'nope <b>' (prescient calendar list)");
  const auto [bad_status, bad] = get_json(client, "/api/calendars/" + path_of(name) + "?from=2026-02-30");
  CHECK(bad_status == 400);
  CHECK(bad["error"] == "invalid day '2026-02-30': a date YYYY-MM-DD");

  // The pages, in a browser of another zone: the list, then the calendar drawn in its own zone.
  Chromium browser;
  browser.set_time_zone("Australia/Adelaide");
  browser.open(web.base() + "/calendars");
  const auto row = [](const std::string& calendar) {
    return "[...document.querySelectorAll('[data-table=calendars] tbody tr')].find(r => r.dataset.name === " +
           json(calendar).dump() + ")";
  };
  const auto cell = [&](const std::string& calendar, const std::string& field) {
    return browser.eval(row(calendar) + ".querySelector('[data-field=" + field + "]').textContent").get<std::string>();
  };
  CHECK(cell(name, "time_zone") == "Europe/Berlin");
  CHECK(cell(name, "version") == "2");
  CHECK_THAT(cell(name, "changed"), Catch::EndsWith(" by " + kHostileKey));
  CHECK(cell(kHostileKey, "name") == kHostileKey);
  CHECK(browser.eval("document.querySelectorAll('main img').length") == 0);
  CHECK(browser.eval("document.title") == "prescient");

  const std::string link = browser.eval(row(name) + ".querySelector('a').getAttribute('href')").get<std::string>();
  CHECK(link == "/calendars/" + path_of(name));
  browser.open(web.base() + link);
  CHECK(text_of(browser, "h1") == "Calendar " + name);
  CHECK(text_of(browser, "[data-calendar] [data-field=version] td") == "2");
  // Today, in Berlin, is marked, with now on it.
  std::string today;
  *db << "SELECT to_char(now() AT TIME ZONE 'Europe/Berlin', 'YYYY-MM-DD')", soci::into(today);
  CHECK(browser.eval("document.querySelector('[data-table=calendar-days] tr[data-today]').dataset.day") == today);
  CHECK(browser.eval("document.querySelectorAll('[data-table=calendar-days] tr[data-today] [data-now]').length") == 1);
  CHECK(browser.eval("document.querySelectorAll('[data-table=calendar-days] tbody tr').length") == 28);

  browser.open(web.base() + "/calendars/" + path_of(name) + "?from=2026-10-19");
  const auto day_cell = [&](const std::string& date, const std::string& field) {
    return text_of(browser, "[data-table=calendar-days] tr[data-day='" + date + "'] [data-field=" + field + "]");
  };
  const auto bars = [&](const std::string& date) {
    return browser.eval("[...document.querySelectorAll(\"[data-table=calendar-days] tr[data-day='" + date +
                        "'] rect[data-opens-at]\")].map(r => [r.dataset.opensAt, r.dataset.closesAt, r.textContent])");
  };
  CHECK(day_cell("2026-10-20", "open") == "8 h");
  CHECK(day_cell("2026-10-25", "open") == "4 h");
  CHECK(day_cell("2026-10-25", "note") ==
        "clocks go back from 03:00 to 02:00: 02:00–03:00 happens twice, open the first time only");
  CHECK(bars("2026-10-25") == json::parse(R"([["2026-10-24T23:00:00Z", "2026-10-25T01:00:00Z", "01:00–03:00, 2 h open"],
                                             ["2026-10-25T02:00:00Z", "2026-10-25T04:00:00Z", "03:00–05:00, 2 h open"]])"));
  CHECK(day_cell("2026-10-26", "open") == "closed");
  CHECK(day_cell("2026-11-01", "open") == "2 h");
  CHECK(day_cell("2026-11-02", "open") == "closed; 2 h from the day before");
  CHECK(browser.eval("document.querySelector(\"tr[data-day='2026-11-02']\").dataset.openDay") == "no");
  CHECK(browser.eval("document.querySelectorAll('[data-table=calendar-days] [data-today]').length") == 0);
  browser.screenshot(screenshot_path("calendar.png"));

  // Markup in a calendar's name is text in its title; an unknown one is the API's message.
  browser.open(web.base() + "/calendars/" + path_of(kHostileKey));
  CHECK(text_of(browser, "h1") == "Calendar " + kHostileKey);
  CHECK(text_of(browser, "[data-table=calendar-days] tbody tr [data-field=open]") == "closed");
  browser.open(web.base() + "/calendars/" + path_of("nope <b>"));
  CHECK(text_of(browser, "[data-error]") == "no calendar named 'nope <b>' (prescient calendar list)");
  CHECK(browser.eval("document.querySelectorAll('main img, main b').length") == 0);
  CHECK(browser.eval("document.title") == "prescient");
}

// The http class without the network: which paths stay below a target, what a targets file may say, the
// signature (checked against Python's hmac, as the docs' receiver computes it), and what each answer means.
#include <catch2/catch.hpp>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "http_exchange.hpp"
#include "http_targets.hpp"
#include "prescient/errors.hpp"
#include "prescient/time_text.hpp"

using namespace prescient;
using namespace prescient::jobs;

namespace {

const TimePoint kNow = parse_time("2026-11-23T12:00:00Z");

HttpTarget shop() {
  HttpTarget t;
  t.name = "shop";
  t.base_url = "https://shop.internal/prescient";
  t.secret = "s";
  return t;
}

std::string refusal_of(const std::string& path) {
  try {
    url_below(shop(), path);
    return "";
  } catch (const InvalidInput& e) {
    return e.what();
  }
}

std::string failure_of(const HttpAnswer& answer) {
  try {
    http_result_of(answer, "shop", kNow);
    return "";
  } catch (const std::runtime_error& e) {
    return e.what();
  }
}

}  // namespace

TEST_CASE("a check's path stays below its target's URL") {
  CHECK(url_below(shop(), "/checks/order-unshipped") == "https://shop.internal/prescient/checks/order-unshipped");
  CHECK(url_below(shop(), "/checks/o?id=42&x=a%20b") == "https://shop.internal/prescient/checks/o?id=42&x=a%20b");
  CHECK(url_below(shop(), "/") == "https://shop.internal/prescient/");
  const std::vector<std::pair<std::string, std::string>> refused{
      {"", "must start with '/'"},
      {"checks", "must start with '/'"},
      {"http://169.254.169.254/latest", "must start with '/'"},
      {"//other-host/x", "contains '//'"},
      {"/a//b", "contains '//'"},
      {"/../admin", "contains a '..' segment"},
      {"/a/..", "contains a '..' segment"},
      {"/a/./b", "contains a '.' segment"},
      {"/%2e%2e/admin", "encodes a '.', '/', '\\' or control byte"},
      {"/a%2Fb", "encodes a '.', '/', '\\' or control byte"},
      {"/a%5cb", "encodes a '.', '/', '\\' or control byte"},
      {"/a%zz", "has a '%' without two hex digits"},
      {"/a%2", "has a '%' without two hex digits"},
      {"/a\\b", "contains a byte a URL path may not hold (92)"},
      {"/a b", "contains a byte a URL path may not hold (32)"},
      {"/a\r\nHost: evil", "contains a byte a URL path may not hold (13)"},
      {"/@evil.example", ""},  // stays a path: the host is the base's
  };
  for (const auto& [path, why] : refused) {
    INFO(path);
    const std::string refusal = refusal_of(path);
    if (why.empty()) {
      CHECK(refusal.empty());
    } else {
      CHECK_THAT(refusal, Catch::Contains("the path '" + path + "' " + why));
    }
  }
}

TEST_CASE("a targets file: each bad value named, secrets only from a file or the environment") {
  ::setenv("PRESCIENT_TEST_SHOP_SECRET", "from-env", 1);
  const HttpTargets good = parse_http_targets(
      R"({"targets": {"shop": {"url": "http://127.0.0.1:8080/hooks/", "secret_env": "PRESCIENT_TEST_SHOP_SECRET",
                               "timeout": "3s", "max_concurrent": 4}}})",
      "f");
  REQUIRE(good.size() == 1);
  const HttpTarget& t = good.at("shop");
  CHECK(t.base_url == "http://127.0.0.1:8080/hooks");
  CHECK(t.secret == "from-env");
  CHECK(t.timeout == std::chrono::seconds{3});
  CHECK(t.max_concurrent == 4);

  const std::string secret_file = "/tmp/prescient-http-secret-" + std::to_string(::getpid());
  std::ofstream(secret_file) << "from-file\n";
  std::filesystem::permissions(secret_file, std::filesystem::perms::owner_read | std::filesystem::perms::owner_write);
  const HttpTargets filed =
      parse_http_targets(R"({"targets": {"s": {"url": "https://h", "secret_file": ")" + secret_file + R"("}}})", "f");
  CHECK(filed.at("s").secret == "from-file");
  CHECK(filed.at("s").timeout == std::chrono::seconds{10});
  // A secret every user may read is no secret: refused, naming the file.
  std::filesystem::permissions(secret_file, std::filesystem::perms::others_read, std::filesystem::perm_options::add);
  CHECK_THROWS_WITH(
      parse_http_targets(R"({"targets": {"s": {"url": "https://h", "secret_file": ")" + secret_file + R"("}}})", "f"),
      "f: target 's': secret_file '" + secret_file + "' holds a secret but may be read by every user (mode 0604): " +
          "chmod o-r '" + secret_file + "'");
  std::remove(secret_file.c_str());

  const std::string env = R"(, "secret_env": "PRESCIENT_TEST_SHOP_SECRET")";
  const std::vector<std::pair<std::string, std::string>> bad{
      {"[]", "f: expected {\"targets\": {\"NAME\": {...}}}"},
      {"{", "f is not JSON"},
      {R"({"targets": {}})", "f: no targets"},
      {R"({"targets": {"a": {"url": "http://h"}}, "x": 1})", "f: unknown key 'x'"},
      {R"({"targets": {"a": {"url": "ftp://h")" + env + "}}}", "f: target 'a': invalid url 'ftp://h': the scheme must be http or https"},
      {R"({"targets": {"a": {"url": "http://u:p@h")" + env + "}}}", "credentials do not go in the URL"},
      {R"({"targets": {"a": {"url": "http://h/?q=1")" + env + "}}}", "a base URL has no query or fragment"},
      {R"({"targets": {"a": {"url": "http:///x")" + env + "}}}", "it names no host"},
      {R"({"targets": {"a": {"url": "http://h"}}})", "f: target 'a': give exactly one of secret_file and secret_env"},
      {R"({"targets": {"a": {"url": "http://h", "secret": "inline"}}})", "f: target 'a': unknown key 'secret'"},
      {R"({"targets": {"a": {"url": "http://h", "secret_env": "PRESCIENT_TEST_UNSET_VARIABLE"}}})",
       "the environment variable PRESCIENT_TEST_UNSET_VARIABLE is not set"},
      {R"({"targets": {"a": {"url": "http://h", "secret_file": "/nonexistent/s"}}})",
       "f: target 'a': secret_file '/nonexistent/s' is not a readable file"},
      {R"({"targets": {"a": {"url": "http://h", "timeout": "0s")" + env + "}}}", "invalid timeout 0s: use 1s to 10m"},
      {R"({"targets": {"a": {"url": "http://h", "timeout": "soon")" + env + "}}}", "f: target 'a': "},
      {R"({"targets": {"a": {"url": "http://h", "max_concurrent": 0)" + env + "}}}", "invalid max_concurrent 0: use 1 to 1000"},
      {R"({"targets": {"a": {"url": "http://h", "ca_file": "/nonexistent/ca")" + env + "}}}", "ca_file '/nonexistent/ca' is not a readable file"},
  };
  for (const auto& [text, why] : bad) {
    INFO(text);
    CHECK_THROWS_WITH(parse_http_targets(text, "f"), Catch::Contains(why));
  }
  CHECK_THROWS_WITH(read_http_targets("/nonexistent/targets.json"),
                    "--http-targets '/nonexistent/targets.json' is not a readable file");
}

TEST_CASE("the request: its body, its idempotency key and its signature (as Python's hmac computes it)") {
  // python3 -c "import hmac,hashlib; print(hmac.new(b'whsec_test', b'1700000000.{\"id\":1}', hashlib.sha256).hexdigest())"
  CHECK(http_signature("whsec_test", 1700000000, R"({"id":1})") ==
        "v1=2f441ba4b3b2d50d28a9ab9d9fd8880376ecd1eb5d0435401553f5d8d0a5dcf8");
  Check check;
  check.id = 42;
  check.job = "http";
  check.entity_name = "order";
  check.entity_key = "42";
  check.job_key = "order-42";
  check.payload = {{"target", "shop"}, {"path", "/x"}};
  check.first_check_at = kNow;
  check.slot = kNow + std::chrono::hours{1};
  check.check_count = 3;
  check.attempts = 1;
  CHECK(http_idempotency_key(check) == "42-3");
  const auto body = nlohmann::json::parse(http_request_body(check));
  CHECK(body == nlohmann::json{{"id", 42}, {"job", "http"}, {"entity_name", "order"}, {"entity_key", "42"},
                               {"job_key", "order-42"}, {"group_key", nullptr}, {"payload", check.payload},
                               {"check_count", 3}, {"attempts", 1}, {"slot", "2026-11-23T13:00:00Z"},
                               {"first_check_at", "2026-11-23T12:00:00Z"}});
}

TEST_CASE("the answer decides: done, look again, wait as asked, or a failed attempt naming what was wrong") {
  CHECK_FALSE(http_result_of({.status = 204}, "shop", kNow).next);
  CHECK_FALSE(http_result_of({.status = 200, .body = ""}, "shop", kNow).next);
  CHECK_FALSE(http_result_of({.status = 200, .body = " \n"}, "shop", kNow).next);
  CHECK_FALSE(http_result_of({.status = 200, .body = R"({"next": null})"}, "shop", kNow).next);
  const JobResult later = http_result_of(
      {.status = 200,
       .body = R"({"next": "2026-11-23T15:00:00Z", "events": [{"type": "order.late", "payload": {"n": 1}},
                  {"type": "x", "id": "e-1", "occurred_at": "2026-11-23T11:00:00Z"}]})"},
      "shop", kNow);
  CHECK(later.next == parse_time("2026-11-23T15:00:00Z"));
  REQUIRE(later.events.size() == 2);
  CHECK(later.events[0].type == "order.late");
  CHECK(later.events[0].payload == nlohmann::json{{"n", 1}});
  CHECK(later.events[1].id == "e-1");
  CHECK(later.events[1].occurred_at == parse_time("2026-11-23T11:00:00Z"));
  CHECK_FALSE(later.result);
  const JobResult with_result = http_result_of({.status = 200, .body = R"({"next": null, "result": {"sent": [1, 2]}})"},
                                               "shop", kNow);
  CHECK_FALSE(with_result.next);
  CHECK(with_result.result == nlohmann::json{{"sent", {1, 2}}});

  CHECK(http_result_of({.status = 429, .retry_after = "120"}, "shop", kNow).next == kNow + std::chrono::minutes{2});
  CHECK(http_result_of({.status = 503, .retry_after = "Mon, 23 Nov 2026 12:30:00 GMT"}, "shop", kNow).next ==
        kNow + std::chrono::minutes{30});

  const std::vector<std::pair<HttpAnswer, std::string>> failures{
      {{.status = 503}, "http target 'shop': HTTP 503 without Retry-After: (empty body)"},
      {{.status = 429, .retry_after = "soon"}, "HTTP 429 with an unreadable Retry-After 'soon'"},
      {{.status = 503, .retry_after = "Tue, 31 Feb 2026 12:30:00 GMT"}, "an unreadable Retry-After 'Tue, 31 Feb"},
      {{.status = 503, .retry_after = "Mon, 23 Nov 2026 12:30:00 UTC"}, "an unreadable Retry-After"},
      {{.status = 503, .retry_after = "Mon, 23 Xyz 2026 12:30:00 GMT"}, "an unreadable Retry-After"},
      {{.status = 503, .retry_after = "-5"}, "an unreadable Retry-After '-5'"},
      {{.status = 429, .retry_after = "172800"}, "asks to wait longer than a day"},
      {{.status = 500, .body = "boom\nstack"}, "http target 'shop': HTTP 500: boom; stack"},
      {{.status = 404, .body = "<h1>no such check</h1>"}, "HTTP 404: <h1>no such check</h1>"},
      {{.status = 400, .body = std::string(1000, 'x')}, "HTTP 400: " + std::string(300, 'x') + "…"},
      {{.status = 400, .body = "\xff\xfe bad bytes"}, "HTTP 400: "},
      {{.status = 302, .location = "http://169.254.169.254/"}, "HTTP 302: redirects are not followed (to http://169.254.169.254/)"},
      {{.status = 201}, "HTTP 201: (empty body)"},
      {{.status = 200, .body = "ok"}, "HTTP 200 with a body that is not JSON: ok"},
      {{.status = 200, .body = "[1]"}, "the answer must be a JSON object"},
      {{.status = 200, .body = R"({"nxt": "2026-11-23T15:00:00Z"})"}, "the answer has an unknown key 'nxt' (next, events, result)"},
      {{.status = 200, .body = R"({"next": true})"}, "next must be a time (ISO 8601 or Unix seconds) or null"},
      {{.status = 200, .body = R"({"next": "tomorrow"})"}, "HTTP 200: next: "},
      {{.status = 200, .body = R"({"events": {}})"}, "events must be an array"},
      {{.status = 200, .body = R"({"events": [{"payload": {}}]})"}, "the answer's events[0] has no type (a string)"},
      {{.status = 200, .body = R"({"events": [{"type": "a", "when": 1}]})"}, "events[0] has an unknown key 'when'"},
      {{.status = 200, .body = std::string(100, ' '), .body_cut = true}, "the answer is longer than 256 KiB"},
  };
  for (const auto& [answer, why] : failures) {
    INFO(answer.status << " " << answer.body.substr(0, 50));
    CHECK_THAT(failure_of(answer), Catch::Contains(why));
  }
}

TEST_CASE("a number as next is Unix seconds, a fraction kept to the nearest microsecond, in range or refused") {
  const auto next_of = [](const std::string& body) { return http_result_of({.status = 200, .body = body}, "shop", kNow).next; };
  CHECK(next_of(R"({"next": 1795593600})") == parse_time("2026-11-25T08:00:00Z"));
  CHECK(next_of(R"({"next": 1795593600, "events": []})") == parse_time("@1795593600"));
  CHECK(next_of(R"({"next": "@1795593600"})") == parse_time("@1795593600"));  // as text, as the CLI takes it
  CHECK(next_of(R"({"next": 1795593600.0})") == parse_time("2026-11-25T08:00:00Z"));
  CHECK(next_of(R"({"next": 1795593600.25})") == parse_time("2026-11-25T08:00:00.25Z"));
  // A double is off by up to a quarter of a microsecond here: .099999904… and .700000047… as read.
  CHECK(next_of(R"({"next": 1795593600.1})") == parse_time("2026-11-25T08:00:00.1Z"));
  CHECK(next_of(R"({"next": 1795593600.7})") == parse_time("2026-11-25T08:00:00.7Z"));
  CHECK(next_of(R"({"next": 1795593600.123456})") == parse_time("2026-11-25T08:00:00.123456Z"));
  CHECK(next_of(R"({"next": 1795593600.9999999})") == parse_time("2026-11-25T08:00:01Z"));
  CHECK(next_of(R"({"next": 0})") == parse_time("1970-01-01T00:00:00Z"));
  CHECK(next_of(R"({"next": 253402300799})") == parse_time("9999-12-31T23:59:59Z"));
  CHECK(next_of(R"({"next": 1.7955936e9})") == parse_time("2026-11-25T08:00:00Z"));

  const std::vector<std::pair<std::string, std::string>> refused{
      {R"({"next": -1})", "http target 'shop': HTTP 200: next -1 is out of range: Unix seconds from 0 to 253402300799"},
      {R"({"next": -0.5})", "HTTP 200: next -0.5 is out of range"},
      {R"({"next": 253402300800})", "HTTP 200: next 253402300800 is out of range"},
      {R"({"next": 253402300799.5})", "HTTP 200: next 253402300799.5 is out of range"},
      {R"({"next": 18446744073709551615})", "HTTP 200: next 18446744073709551615 is out of range"},
      {R"({"next": 1e300})", "HTTP 200: next 1e+300 is out of range"},
      {R"({"next": 1e400})", "HTTP 200 with a body that is not JSON: {\"next\": 1e400}"},  // beyond a double
  };
  for (const auto& [body, why] : refused) {
    INFO(body);
    const std::string error = failure_of({.status = 200, .body = body});
    CHECK_THAT(error, Catch::Contains(why));
    CHECK(error.find('\n') == std::string::npos);
  }
}

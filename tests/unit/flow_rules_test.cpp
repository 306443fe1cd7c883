// The pure rules of flow control: a rate's text, and the key value a limit gives a check.
#include <catch2/catch.hpp>

#include <map>

#include "prescient/errors.hpp"
#include "prescient/flow_limits.hpp"
#include "prescient/job.hpp"

using prescient::Check;
using prescient::FlowLimit;
using prescient::FlowRate;
using prescient::flow_limit_from_json;

TEST_CASE("rates are read as COUNT/PERIOD", "[flow]") {
  struct Row {
    const char* text;
    int count;
    int per_seconds;
  };
  for (const Row& row : {Row{"200/s", 200, 1}, Row{"30/m", 30, 60}, Row{"1000/h", 1000, 3600}, Row{"5/10s", 5, 10},
                         Row{"1/d", 1, 86400}, Row{"7/1m30s", 7, 90}}) {
    INFO(row.text);
    const FlowRate rate = prescient::parse_flow_rate(row.text);
    CHECK(rate.count == row.count);
    CHECK(rate.per_seconds == row.per_seconds);
  }
  CHECK(prescient::format_flow_rate(200, 1) == "200/s");
  CHECK(prescient::format_flow_rate(5, 10) == "5/10s");
  CHECK(prescient::format_flow_rate(7, 90) == "7/1m30s");
}

TEST_CASE("a bad rate is refused naming it", "[flow]") {
  for (const char* text : {"", "200", "0/s", "-5/s", "x/s", "200/", "200/x", "200/0s", "200/2d", "5000000000/s",
                           "2.5/s", "200/s/s"}) {
    INFO(text);
    try {
      prescient::parse_flow_rate(text);
      FAIL("accepted");
    } catch (const prescient::InvalidInput& e) {
      CHECK(std::string(e.what()).find(std::string("'") + text + "'") != std::string::npos);
    }
  }
}

TEST_CASE("a limit's key value comes from the check's row", "[flow]") {
  Check check;
  check.job = "http";
  check.entity_name = "orders";
  check.payload = {{"target", "crm"}, {"tenant", "acme"}, {"n", 42}, {"flag", true}, {"nothing", nullptr},
                   {"obj", {{"a", 1}}}, {"empty", ""}};
  struct Row {
    FlowLimit limit;
    std::optional<std::string> key;
  };
  const std::vector<Row> rows{
      {{.name = "a", .key = "job"}, "http"},
      {{.name = "b", .key = "entity_name"}, "orders"},
      {{.name = "b2", .key = "entity"}, std::nullopt},  // the word before 0054: limit_set stores entity_name
      {{.name = "c", .key = "http_target"}, "crm"},
      {{.name = "d", .key = "payload.tenant"}, "acme"},
      {{.name = "e", .key = "payload.n"}, "42"},
      {{.name = "f", .key = "payload.flag"}, "true"},
      {{.name = "g", .key = "payload.nothing"}, std::nullopt},   // null: missing
      {{.name = "h", .key = "payload.absent"}, std::nullopt},
      {{.name = "i", .key = "payload.obj"}, R"({"a":1})"},
      {{.name = "j", .key = "payload.empty"}, std::nullopt},     // an empty key is no key
      {{.name = "k", .key = "job", .job = "emit"}, std::nullopt},  // another class
      {{.name = "l", .key = "job", .job = "http"}, "http"},
      {{.name = "m", .key = "payload.tenant", .key_value = "other"}, std::nullopt},
      {{.name = "n", .key = "payload.tenant", .key_value = "acme"}, "acme"},
  };
  for (const Row& row : rows) {
    INFO(row.limit.name << " " << row.limit.key);
    CHECK(prescient::flow_key_of(row.limit, check) == row.key);
  }
  check.job = "emit";  // the http target is an http check's only
  CHECK(prescient::flow_key_of({.name = "c", .key = "http_target"}, check) == std::nullopt);
}

TEST_CASE("a limit from the dashboard's JSON: its fields read, a bad one refused naming it") {
  const FlowLimit l = flow_limit_from_json(nlohmann::json::parse(
      R"({"name": "crm", "key": "payload.tenant", "rate": "30/m", "burst": 5, "concurrency": null,
          "fair_share": true, "weights": {"gold": 3}, "job": null, "key_value": null})"));
  CHECK(l.name == "crm");
  CHECK(l.key == "payload.tenant");
  CHECK(l.rate == 30);
  CHECK(l.per_seconds == 60);
  CHECK(l.burst == 5);
  CHECK_FALSE(l.concurrency);
  CHECK(l.fair_share);
  CHECK(l.weights == std::map<std::string, int>{{"gold", 3}});
  CHECK_FALSE(l.job);
  CHECK(flow_limit_from_json({{"name", "x"}, {"key", "job"}, {"concurrency", 2}}).burst == 1);

  struct Bad {
    const char* body;
    const char* names;
  };
  for (const Bad& bad : {Bad{R"([1])", "must be a JSON object"},
                         Bad{R"({"key": "job"})", "\"name\" is missing"},
                         Bad{R"({"name": "x", "key": 5})", "\"key\" must be a string"},
                         Bad{R"({"name": "x", "key": "job", "rate": "5/fortnight"})", "invalid rate '5/fortnight'"},
                         Bad{R"({"name": "x", "key": "job", "burst": 1.5})", "\"burst\" must be a whole number, not 1.5"},
                         Bad{R"({"name": "x", "key": "job", "concurrency": 99999999999})", "\"concurrency\" must be"},
                         Bad{R"({"name": "x", "key": "job", "fair_share": "yes"})", "\"fair_share\" must be true"},
                         // A weight FlowLimit cannot hold; its range (1 to 1000) is SQL's (flow_control_test).
                         Bad{R"({"name": "x", "key": "job", "weights": {"a": 0.5}})", "the weight of 'a'"},
                         Bad{R"({"name": "x", "key": "job", "weights": [1]})", "\"weights\" must be a JSON object"},
                         Bad{R"({"name": "x", "key": "job", "limit": 3})", "unknown field \"limit\""}}) {
    INFO(bad.body);
    CHECK_THROWS_WITH(flow_limit_from_json(nlohmann::json::parse(bad.body)), Catch::Contains(bad.names));
  }
}

// The pure rules of flow control: a rate's text, and the key value a limit gives a check.
#include <catch2/catch.hpp>

#include "prescient/errors.hpp"
#include "prescient/flow_limits.hpp"
#include "prescient/job.hpp"

using prescient::Check;
using prescient::FlowLimit;
using prescient::FlowRate;

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
      {{.name = "b", .key = "entity"}, "orders"},
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

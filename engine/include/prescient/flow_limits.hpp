#pragma once
// Flow control at firing time (docs/flow-control.md): limits on the checks that share a key, enforced by
// every runner through the database. Declared as rows of prescient.flow_limit; this class manages them
// on a session the application owns, as the SQL functions limit_set and limit_remove do.
#include <nlohmann/json.hpp>

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "prescient/time.hpp"

namespace soci {
class session;
}

namespace prescient {

struct Check;

struct FlowLimit {
  std::string name;
  // What the checks share: "job" (the class), "entity_name", "http_target" (an http
  // check's payload.target) or "payload.<field>" (a top-level payload field). FlowLimits::set still takes
  // "entity", the word before migration 0054, in this release, and stores "entity_name".
  std::string key;
  std::optional<std::string> job;        // only checks of this class (none: every class)
  std::optional<std::string> key_value;  // only this key value (none: each value has a budget of its own)
  std::optional<int> rate;               // at most `rate` checks started per `per_seconds`, per key value
  int per_seconds = 1;
  int burst = 1;                         // how many may start at once after a quiet spell
  std::optional<int> concurrency;        // at most this many running at once, per key value
  // Within a slot, claims take the key values in turn, so a small tenant's checks are not behind a big
  // one's (a payload field only; setting it builds an index on future_job).
  bool fair_share = false;
  // Fair share only: a claim takes `weight` checks of a key value for each one of a value of weight 1
  // (values not named weigh 1). Weights are whole numbers from 1 to 1000.
  std::map<std::string, int> weights;
  // As stored (read back by list()).
  TimePoint updated_at{};
  std::string updated_by;
};

// Deferrals one limit made for one key value, counted by the runners.
struct FlowFigure {
  std::string limit_name;
  std::string key_value;
  std::int64_t deferred = 0;
  TimePoint last_deferred_at{};
};

// One time a limit held a check back.
struct FlowDeferral {
  std::int64_t check_id = 0;
  TimePoint deferred_at{};
  std::string limit_name;
  std::string key_value;
  TimePoint until{};
};

// How many checks a limit deferred in an hour (UTC).
struct DeferralHour {
  TimePoint hour;
  std::string limit_name;
  long long deferred = 0;
};

// A rate as people write it: "200/s", "30/m", "1000/h", "5/10s" (a count per a duration of 1 s to 1 d).
struct FlowRate {
  int count = 0;
  int per_seconds = 1;
};
FlowRate parse_flow_rate(std::string_view text);  // throws InvalidInput naming the text
std::string format_flow_rate(int count, int per_seconds);

// The payload field a "payload.<field>" key names ("tenant"), or none for the other kinds of key.
std::optional<std::string> flow_payload_field(const FlowLimit& limit);

// The key value `limit` gives `check`, or none when the limit does not apply to it (another class,
// another value than the one named, or the key is missing from the check). Payload values: a string is
// itself, a number or boolean its JSON text, an object or array its compact JSON; null counts as missing.
std::optional<std::string> flow_key_of(const FlowLimit& limit, const Check& check);

// A limit as the dashboard's API takes it: the fields of to_json(FlowLimit) that set one (name, key, job,
// key_value, rate as "200/s", burst, concurrency, fair_share, weights). Throws InvalidInput naming the
// field; what the database judges (a kind of key, a concurrency of 0) is limit_set's.
FlowLimit flow_limit_from_json(const nlohmann::json& body);

// As the CLI's --json and the dashboard's API show them (times ISO-8601, a rate as "200/s").
nlohmann::json to_json(const FlowLimit& limit);
nlohmann::json to_json(const FlowFigure& figure);
nlohmann::json to_json(const FlowDeferral& deferral);
nlohmann::json to_json(const DeferralHour& hour);

class FlowLimits {
 public:
  explicit FlowLimits(soci::session& db);
  // Creates or replaces the limit of that name: "created" or "updated". Throws InvalidInput naming the
  // bad value (an unknown kind of key, a rate below 1, ...); nothing is written then.
  std::string set(const FlowLimit& limit, const std::string& by, TimePoint now);
  bool remove(const std::string& name);  // false: no limit had the name
  std::vector<FlowLimit> list();
  std::vector<FlowFigure> figures();
  // The deferrals of these checks (a trace's ids), oldest first.
  std::vector<FlowDeferral> deferrals_of(const std::vector<std::int64_t>& check_ids);
  // Deferrals per UTC hour and limit from `from` until `to`, by hour then limit; hours with none left out.
  // Reads each deferral of the range (the index on deferred_at, and the rows).
  std::vector<DeferralHour> deferrals_per_hour(TimePoint from, TimePoint to);

 private:
  soci::session& db_;
};

}  // namespace prescient

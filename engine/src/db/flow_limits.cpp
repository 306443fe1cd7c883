// The statements of flow control's API (prescient/flow_limits.hpp): declaring limits and reading what
// they did. The runner's admission is in pg_runner_store.cpp.
#include "prescient/flow_limits.hpp"

#include "db/connection.hpp"
#include "db/flow_limit_rows.hpp"
#include "db/pq.hpp"
#include "prescient/errors.hpp"
#include "prescient/time_text.hpp"

namespace prescient {

using namespace prescient::db;
namespace {

std::optional<std::string> optional_number(const std::optional<int>& value) {
  return value ? std::optional(std::to_string(*value)) : std::nullopt;
}

}  // namespace

namespace db {
namespace {

const std::string kFlowLimitColumns =
    "name, key, job, key_value, rate, per_seconds, burst, concurrency, prescient.us(updated_at), updated_by,"
    " fair_share::int, weights::text";

std::vector<FlowLimit> flow_limits_of(const pq::Result& rows) {
  std::vector<FlowLimit> out(rows.rows());
  for (int r = 0; r < rows.rows(); ++r) {
    FlowLimit& l = out[r];
    l.name = rows.text(r, 0);
    l.key = rows.text(r, 1);
    l.job = rows.optional_text(r, 2);
    l.key_value = rows.optional_text(r, 3);
    if (const auto rate = rows.optional_integer(r, 4)) l.rate = static_cast<int>(*rate);
    l.per_seconds = static_cast<int>(rows.integer(r, 5));
    l.burst = static_cast<int>(rows.integer(r, 6));
    if (const auto concurrency = rows.optional_integer(r, 7)) l.concurrency = static_cast<int>(*concurrency);
    l.updated_at = rows.time(r, 8);
    l.updated_by = rows.text(r, 9);
    l.fair_share = rows.integer(r, 10) == 1;
    if (const auto weights = rows.optional_text(r, 11)) {
      const nlohmann::json parsed = nlohmann::json::parse(*weights);
      for (const auto& [value, weight] : parsed.items()) l.weights[value] = weight.get<int>();
    }
  }
  return out;
}

}  // namespace

std::vector<FlowLimit> read_flow_limits(PGconn* conn) {
  return flow_limits_of(pq::exec(conn, "cannot read the flow limits",
                                 "SELECT " + kFlowLimitColumns + " FROM prescient.flow_limit ORDER BY name"));
}

std::vector<FlowFigure> read_flow_figures(PGconn* conn, std::optional<int> most) {
  const pq::Result rows = pq::exec(
      conn, "cannot read the deferrals",
      std::string("SELECT limit_name, key_value, deferred, prescient.us(last_deferred_at) FROM prescient.flow_figure") +
          (most ? " ORDER BY deferred DESC, limit_name, key_value LIMIT $1" : " ORDER BY limit_name, key_value"),
      most ? pq::Params{std::to_string(*most)} : pq::Params{});
  std::vector<FlowFigure> out(rows.rows());
  for (int r = 0; r < rows.rows(); ++r) {
    out[r] = {.limit_name = rows.text(r, 0), .key_value = rows.text(r, 1), .deferred = rows.integer(r, 2),
              .last_deferred_at = rows.time(r, 3)};
  }
  return out;
}

}  // namespace db

nlohmann::json to_json(const FlowLimit& l) {
  const auto or_null = [](const auto& v) { return v ? nlohmann::json(*v) : nlohmann::json(); };
  return {{"name", l.name},
          {"key", l.key},
          {"job", or_null(l.job)},
          {"key_value", or_null(l.key_value)},
          {"rate", l.rate ? nlohmann::json(format_flow_rate(*l.rate, l.per_seconds)) : nlohmann::json()},
          {"burst", l.burst},
          {"concurrency", or_null(l.concurrency)},
          {"fair_share", l.fair_share},
          {"weights", l.weights.empty() ? nlohmann::json() : nlohmann::json(l.weights)},
          {"updated_at", format_time(l.updated_at)},
          {"updated_by", l.updated_by}};
}

nlohmann::json to_json(const FlowFigure& f) {
  return {{"limit", f.limit_name}, {"key_value", f.key_value}, {"deferred", f.deferred},
          {"last_deferred_at", format_time(f.last_deferred_at)}};
}

nlohmann::json to_json(const FlowDeferral& d) {
  return {{"check_id", d.check_id}, {"deferred_at", format_time(d.deferred_at)}, {"limit", d.limit_name},
          {"key_value", d.key_value}, {"until", format_time(d.until)}};
}

nlohmann::json to_json(const DeferralHour& h) {
  return {{"hour", format_time(h.hour)}, {"limit", h.limit_name}, {"deferred", h.deferred}};
}

FlowLimits::FlowLimits(soci::session& db) : db_(db) {}

std::string FlowLimits::set(const FlowLimit& limit, const std::string& by, TimePoint now) {
  return pq::exec(native_connection(db_), "cannot set the limit",
                  "SELECT prescient.limit_set($1, $2, $3, $4, $5, $6, $7, $8, $9, prescient.at_us($10), $11, $12::jsonb)",
                  {limit.name, limit.key, optional_number(limit.rate), std::to_string(limit.per_seconds),
                   std::to_string(limit.burst), optional_number(limit.concurrency), limit.job, limit.key_value, by,
                   pq::micros(now), limit.fair_share ? "true" : "false",
                   limit.weights.empty() ? std::nullopt : std::optional(nlohmann::json(limit.weights).dump())})
      .text(0, 0);
}

bool FlowLimits::remove(const std::string& name) {
  return pq::exec(native_connection(db_), "cannot remove the limit", "SELECT prescient.limit_remove($1)::int", {name})
             .integer(0, 0) == 1;
}

std::vector<FlowLimit> FlowLimits::list() { return db::read_flow_limits(native_connection(db_)); }

std::vector<FlowFigure> FlowLimits::figures() { return db::read_flow_figures(native_connection(db_)); }

std::vector<FlowDeferral> FlowLimits::deferrals_of(const std::vector<std::int64_t>& check_ids) {
  const pq::Result rows = pq::exec(
      native_connection(db_), "cannot read the check's deferrals",
      "SELECT check_id, prescient.us(deferred_at), limit_name, key_value, prescient.us(until)"
      "  FROM prescient.flow_deferral WHERE check_id = ANY ($1::bigint[]) ORDER BY deferred_at, check_id",
      {pq::integer_array(check_ids)});
  std::vector<FlowDeferral> out(rows.rows());
  for (int r = 0; r < rows.rows(); ++r) {
    out[r] = {.check_id = rows.integer(r, 0), .deferred_at = rows.time(r, 1), .limit_name = rows.text(r, 2),
              .key_value = rows.text(r, 3), .until = rows.time(r, 4)};
  }
  return out;
}

std::vector<DeferralHour> FlowLimits::deferrals_per_hour(TimePoint from, TimePoint to) {
  const pq::Result rows = pq::exec(
      native_connection(db_), "cannot count the deferrals",
      "SELECT prescient.us(date_bin('1 hour', deferred_at, timestamptz 'epoch')) AS hour, limit_name, count(*)"
      "  FROM prescient.flow_deferral WHERE deferred_at >= prescient.at_us($1) AND deferred_at < prescient.at_us($2)"
      " GROUP BY 1, 2 ORDER BY 1, 2",
      {pq::micros(from), pq::micros(to)});
  std::vector<DeferralHour> out;
  for (int r = 0; r < rows.rows(); ++r) out.push_back({rows.time(r, 0), rows.text(r, 1), rows.integer(r, 2)});
  return out;
}

}  // namespace prescient

#include "health_metrics.hpp"

#include <prometheus/metric_family.h>
#include <soci/soci.h>
#include <spdlog/spdlog.h>

#include <map>

#include "prescient/clock.hpp"
#include "prescient/database.hpp"
#include "prescient/database_health.hpp"

namespace prescient::cli {
namespace {

using Labels = std::map<std::string, std::string>;

prometheus::MetricFamily gauge(std::string name, std::string help) {
  return {.name = std::move(name), .help = std::move(help), .type = prometheus::MetricType::Gauge, .metric = {}};
}

void add(prometheus::MetricFamily& family, Labels labels, double value) {
  prometheus::ClientMetric metric;
  for (auto& [name, text] : labels) metric.label.push_back({name, std::move(text)});
  metric.gauge.value = value;
  family.metric.push_back(std::move(metric));
}

double seconds_of(Micros d) { return std::chrono::duration<double>(d).count(); }
double unix_seconds(TimePoint t) { return static_cast<double>(to_unix_micros(t)) / 1e6; }

std::vector<prometheus::MetricFamily> families_of(const DatabaseHealth& h) {
  auto xid_age = gauge("prescient_horizon_xid_age",
                       "Transactions between the oldest xmin that holds back prescient's tables and the next xid "
                       "(0: nothing holds it)");
  auto age = gauge("prescient_horizon_age_seconds",
                   "How long the longest-held xmin that holds back prescient's tables has been held, among the "
                   "holders whose start is known (sessions, prepared transactions; 0: none)");
  auto holder = gauge("prescient_horizon_holder_xid_age",
                      "The oldest holder of the horizon, by its labels (kind, pid, name, application_name, state; "
                      "empty when not known or hidden), valued by its xid age");
  auto hidden = gauge("prescient_stats_details_hidden",
                      "1 when the daemon's role sees no state or times of other roles' sessions (it lacks "
                      "pg_read_all_stats: grant it pg_monitor)");
  const HorizonHolder* oldest = h.horizon();
  add(xid_age, {}, oldest ? static_cast<double>(oldest->xid_age) : 0);
  Micros longest{0};
  for (const HorizonHolder& x : h.holders) {
    if (x.holds_tables) longest = std::max(longest, h.held_for(x).value_or(Micros{0}));
  }
  add(age, {}, seconds_of(longest));
  if (oldest) {
    add(holder,
        {{"kind", oldest->kind},
         {"pid", oldest->pid ? std::to_string(*oldest->pid) : ""},
         {"name", oldest->name.value_or("")},
         {"application_name", oldest->application_name.value_or("")},
         {"state", oldest->state.value_or("")}},
        static_cast<double>(oldest->xid_age));
  }
  add(hidden, {}, h.sees_all_sessions ? 0 : 1);

  auto dead = gauge("prescient_table_dead_tuples", "Dead tuples in each of prescient's tables (history partitions too)");
  auto live = gauge("prescient_table_live_tuples", "Live tuples in each of prescient's tables");
  auto trigger = gauge("prescient_table_autovacuum_trigger_tuples",
                       "The dead tuples at which autovacuum takes each table (its threshold plus scale factor × tuples)");
  auto vacuumed = gauge("prescient_table_last_autovacuum_timestamp_seconds",
                        "When autovacuum last vacuumed each table, as Unix time (absent: never)");
  auto analysed = gauge("prescient_table_last_autoanalyze_timestamp_seconds",
                        "When autovacuum last analysed each table, as Unix time (absent: never)");
  for (const TableVacuum& t : h.tables) {
    add(dead, {{"table", t.table}}, static_cast<double>(t.dead_tuples));
    add(live, {{"table", t.table}}, static_cast<double>(t.live_tuples));
    add(trigger, {{"table", t.table}}, static_cast<double>(t.vacuum_trigger));
    if (t.last_autovacuum) add(vacuumed, {{"table", t.table}}, unix_seconds(*t.last_autovacuum));
    if (t.last_autoanalyze) add(analysed, {{"table", t.table}}, unix_seconds(*t.last_autoanalyze));
  }
  auto overdue = gauge("prescient_oldest_overdue_seconds",
                       "How long the oldest check due before the current slot has waited, read live (0: none)");
  add(overdue, {}, h.oldest_overdue_due_at ? seconds_of(std::max(Micros{0}, h.now - *h.oldest_overdue_due_at)) : 0);
  return {xid_age, age, holder, hidden, dead, live, trigger, vacuumed, analysed, overdue};
}

}  // namespace

HealthCollector::HealthCollector(std::string database_url) : database_url_(std::move(database_url)) {}

HealthCollector::~HealthCollector() = default;

std::vector<prometheus::MetricFamily> HealthCollector::Collect() const {
  const std::lock_guard lock(mutex_);
  const TimePoint now = SystemClock().now();
  if (!read_at_ || now - *read_at_ >= kHealthReadEvery) {
    try {
      if (!db_) db_ = connect(database_url_);
      families_ = families_of(database_health(*db_));
      read_at_ = now;
    } catch (const std::exception& e) {
      db_.reset();  // reconnect at the next scrape
      families_.clear();
      spdlog::warn("metrics: cannot read the database's health: {}", e.what());
    }
  }
  return families_;
}

}  // namespace prescient::cli

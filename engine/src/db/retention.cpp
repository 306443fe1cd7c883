#include "db/retention.hpp"

#include <spdlog/spdlog.h>

#include "db/connection.hpp"
#include "db/pq.hpp"
#include "prescient/errors.hpp"
#include "prescient/retention.hpp"

namespace prescient::db {

int create_history_partitions(soci::session& db, TimePoint now) {
  return static_cast<int>(pq::exec(native_connection(db), "cannot create history partitions",
                                   "SELECT prescient.ensure_history_partitions(prescient.at_us($1))",
                                   {pq::micros(now)})
                              .integer(0, 0));
}

std::vector<std::string> history_months_before(soci::session& db, TimePoint before) {
  const pq::Result months = pq::exec(native_connection(db), "cannot list history partitions",
                                     "SELECT name FROM prescient.history_partitions()"
                                     " WHERE ends_at <= prescient.at_us($1) ORDER BY starts_at",
                                     {pq::micros(before)});
  std::vector<std::string> names;
  for (int m = 0; m < months.rows(); ++m) names.push_back(months.text(m, 0));
  return names;
}

std::int64_t drop_history_partition(soci::session& db, const std::string& name) {
  return pq::exec(native_connection(db), "cannot drop history partition " + name,
                  "SELECT prescient.drop_history_partition($1)", {name})
      .integer(0, 0);
}

std::int64_t purge_history_rows(soci::session& db, TimePoint before, int limit) {
  return pq::exec(native_connection(db), "cannot purge history",
                  "SELECT prescient.purge_history_rows(prescient.at_us($1), $2)",
                  {pq::micros(before), std::to_string(limit)})
      .integer(0, 0);
}

std::int64_t purge_dead_letters(soci::session& db, TimePoint before, int limit) {
  return pq::exec(native_connection(db), "cannot purge dead letters",
                  "SELECT prescient.purge_dead_letters(prescient.at_us($1), $2)",
                  {pq::micros(before), std::to_string(limit)})
      .integer(0, 0);
}

namespace {

// One batch of a retention delete: up to `limit` rows of `table` whose `time_column` is before `before`,
// picked by `row_key` (columns; a partitioned table's rows by tableoid with ctid). The names are
// prescient's own constants, never input.
std::int64_t delete_older(soci::session& db, const std::string& what, const std::string& table,
                          const std::string& row_key, const std::string& time_column, TimePoint before, int limit) {
  return pq::exec(native_connection(db), what,
                  "WITH gone AS (DELETE FROM " + table + " WHERE (" + row_key + ") IN ("
                  "  SELECT " + row_key + " FROM " + table + " WHERE " + time_column +
                      " < prescient.at_us($1) LIMIT $2)"
                  "  RETURNING 1)"
                  " SELECT count(*) FROM gone",
                  {pq::micros(before), std::to_string(limit)})
      .integer(0, 0);
}

}  // namespace

std::int64_t purge_events(soci::session& db, TimePoint before, int limit) {
  return delete_older(db, "cannot purge events", "prescient.event", "ctid", "emitted_at", before, limit);
}

std::int64_t purge_check_runs(soci::session& db, TimePoint before, int limit) {
  return delete_older(db, "cannot purge the checks' runs", "prescient.check_run", "tableoid, ctid", "finished_at",
                      before, limit);
}

std::int64_t purge_deferrals(soci::session& db, TimePoint before, int limit) {
  return delete_older(db, "cannot purge deferrals", "prescient.flow_deferral", "ctid", "deferred_at", before, limit);
}

std::int64_t purge_flow_figures(soci::session& db, TimePoint before, int limit) {
  return delete_older(db, "cannot purge the counts of deferrals", "prescient.flow_figure", "limit_name, key_value",
                      "last_deferred_at", before, limit);
}

std::int64_t forget_idle_flow_rows(soci::session& db, TimePoint now, int limit) {
  return pq::exec(native_connection(db), "cannot forget flow control's idle rows",
                  "SELECT prescient.forget_idle_flow_rows(prescient.at_us($1), $2)",
                  {pq::micros(now), std::to_string(limit)})
      .integer(0, 0);
}

}  // namespace prescient::db

namespace prescient {

namespace {

std::optional<std::chrono::seconds> seconds_or_none(const db::pq::Result& row, int column) {
  if (row.null(0, column)) return std::nullopt;
  return std::chrono::seconds{row.integer(0, column)};
}

}  // namespace

Retention read_retention(soci::session& db) {
  const db::pq::Result row =
      db::pq::exec(db::native_connection(db), "cannot read the retention settings",
                   "SELECT history_retention_seconds, dead_letter_retention_seconds, event_retention_seconds"
                   " FROM prescient.settings");
  if (row.rows() != 1) throw DatabaseError("prescient.settings is empty: run `prescient migrate`");
  return {.history = seconds_or_none(row, 0), .dead_letters = seconds_or_none(row, 1), .events = seconds_or_none(row, 2)};
}

bool may_drop_history(soci::session& db) {
  return db::pq::exec(db::native_connection(db), "cannot tell whether this role may drop history partitions",
                      "SELECT prescient.may_drop_history()")
             .text(0, 0) == "t";
}

// Here, not with retention's policy in ops/: the runner's store makes the partitions through it, and db/
// may not call up into ops/.
int ensure_history_partitions(soci::session& db, TimePoint now) {
  const int created = db::create_history_partitions(db, now);
  if (created > 0) spdlog::info("created {} monthly history partition(s)", created);
  return created;
}

}  // namespace prescient

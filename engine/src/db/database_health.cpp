#include "prescient/database_health.hpp"

#include <algorithm>

#include "db/connection.hpp"
#include "db/pq.hpp"
#include "prescient/time_text.hpp"

namespace prescient {

using namespace prescient::db;
namespace {

bool flag(const pq::Result& rows, int r, int c) { return rows.text(r, c) == "t"; }

nlohmann::json or_null(const std::optional<std::string>& v) { return v ? nlohmann::json(*v) : nlohmann::json(nullptr); }
nlohmann::json or_null(const std::optional<long long>& v) { return v ? nlohmann::json(*v) : nlohmann::json(nullptr); }
nlohmann::json or_null(const std::optional<TimePoint>& v) {
  return v ? nlohmann::json(format_time(*v)) : nlohmann::json(nullptr);
}

}  // namespace

std::string HorizonHolder::describe() const {
  std::string out;
  if (kind == "session") out = "session";
  else if (kind == "standby") out = "standby feedback (walsender)";
  else if (kind == "replication_slot") out = "replication slot";
  else if (kind == "replication_slot_catalog") out = "replication slot (catalog xmin)";
  else out = "prepared transaction";
  if (name) out += " '" + *name + "'";
  if (pid) out += " pid " + std::to_string(*pid);
  std::string details;
  const auto add = [&details](const std::string& part) { details += (details.empty() ? "" : ", ") + part; };
  if (application_name && !application_name->empty()) add("app '" + *application_name + "'");
  if (role_name) add("role " + *role_name);
  if (state) add(*state);
  else if (details_hidden) add("state hidden");
  return details.empty() ? out : out + " (" + details + ")";
}

const HorizonHolder* DatabaseHealth::horizon() const {
  for (const HorizonHolder& holder : holders) {
    if (holder.holds_tables) return &holder;  // holders are oldest first
  }
  return nullptr;
}

std::optional<Micros> DatabaseHealth::held_for(const HorizonHolder& holder) const {
  if (!holder.held_since) return std::nullopt;
  return std::max(Micros{0}, now - *holder.held_since);
}

bool DatabaseHealth::details_hidden() const {
  for (const HorizonHolder& holder : holders) {
    if (holder.details_hidden) return true;
  }
  return false;
}

DatabaseHealth database_health(soci::session& primary) {
  PGconn* conn = native_connection(primary);
  DatabaseHealth health;
  // Statement by statement, in no transaction: a reader of the horizon holds no snapshot longer than a statement.
  const pq::Result head = pq::exec(conn, "cannot read the database's health",
                                   "SELECT prescient.us(now()), prescient.sees_all_sessions(), b.overdue,"
                                   "       prescient.us(b.counted_at), prescient.us(b.oldest_due_at), pg_is_in_recovery()"
                                   "  FROM prescient.backlog() b");
  health.now = head.time(0, 0);
  health.sees_all_sessions = flag(head, 0, 1);
  health.overdue = head.optional_integer(0, 2);
  health.overdue_counted_at = head.optional_time(0, 3);
  health.oldest_overdue_due_at = head.optional_time(0, 4);
  health.in_recovery = flag(head, 0, 5);

  const pq::Result holders = pq::exec(
      conn, "cannot read who holds the horizon",
      "SELECT kind, pid, holder, role_name, application_name, state, backend_type, prescient.us(xact_start),"
      "       prescient.us(query_start), prescient.us(held_since), held_xmin::text, xid_age, holds_tables,"
      "       details_hidden"
      "  FROM prescient.horizon_holders()");
  for (int r = 0; r < holders.rows(); ++r) {
    health.holders.push_back({.kind = holders.text(r, 0),
                              .pid = holders.optional_integer(r, 1),
                              .name = holders.optional_text(r, 2),
                              .role_name = holders.optional_text(r, 3),
                              .application_name = holders.optional_text(r, 4),
                              .state = holders.optional_text(r, 5),
                              .backend_type = holders.optional_text(r, 6),
                              .xact_start = holders.optional_time(r, 7),
                              .query_start = holders.optional_time(r, 8),
                              .held_since = holders.optional_time(r, 9),
                              .held_xmin = holders.text(r, 10),
                              .xid_age = holders.integer(r, 11),
                              .holds_tables = flag(holders, r, 12),
                              .details_hidden = flag(holders, r, 13)});
  }

  const pq::Result tables = pq::exec(
      conn, "cannot read the tables' vacuum statistics",
      "SELECT table_name, live_tuples, dead_tuples, vacuum_trigger, autovacuum_enabled, prescient.us(last_autovacuum),"
      "       prescient.us(last_vacuum), prescient.us(last_autoanalyze), prescient.us(last_analyze), autovacuum_count"
      "  FROM prescient.table_vacuum()");
  for (int r = 0; r < tables.rows(); ++r) {
    health.tables.push_back({.table = tables.text(r, 0),
                             .live_tuples = tables.integer(r, 1),
                             .dead_tuples = tables.integer(r, 2),
                             .vacuum_trigger = tables.integer(r, 3),
                             .autovacuum_enabled = flag(tables, r, 4),
                             .last_autovacuum = tables.optional_time(r, 5),
                             .last_vacuum = tables.optional_time(r, 6),
                             .last_autoanalyze = tables.optional_time(r, 7),
                             .last_analyze = tables.optional_time(r, 8),
                             .autovacuum_count = tables.integer(r, 9)});
  }
  return health;
}

nlohmann::json to_json(const DatabaseHealth& h) {
  nlohmann::json holders = nlohmann::json::array();
  for (const HorizonHolder& x : h.holders) {
    const auto held = h.held_for(x);
    holders.push_back({{"kind", x.kind},
                       {"pid", or_null(x.pid)},
                       {"name", or_null(x.name)},
                       {"role_name", or_null(x.role_name)},
                       {"application_name", or_null(x.application_name)},
                       {"state", or_null(x.state)},
                       {"backend_type", or_null(x.backend_type)},
                       {"xact_start", or_null(x.xact_start)},
                       {"query_start", or_null(x.query_start)},
                       {"held_since", or_null(x.held_since)},
                       {"held_seconds", held ? nlohmann::json(held->count() / 1e6) : nlohmann::json(nullptr)},
                       {"held_xmin", x.held_xmin},
                       {"xid_age", x.xid_age},
                       {"holds_tables", x.holds_tables},
                       {"details_hidden", x.details_hidden},
                       {"describe", x.describe()}});
  }
  nlohmann::json tables = nlohmann::json::array();
  for (const TableVacuum& t : h.tables) {
    tables.push_back({{"table", t.table},
                      {"live_tuples", t.live_tuples},
                      {"dead_tuples", t.dead_tuples},
                      {"vacuum_trigger", t.vacuum_trigger},
                      {"autovacuum_enabled", t.autovacuum_enabled},
                      {"last_autovacuum", or_null(t.last_autovacuum)},
                      {"last_vacuum", or_null(t.last_vacuum)},
                      {"last_autoanalyze", or_null(t.last_autoanalyze)},
                      {"last_analyze", or_null(t.last_analyze)},
                      {"autovacuum_count", t.autovacuum_count}});
  }
  const HorizonHolder* oldest = h.horizon();
  nlohmann::json horizon = nullptr;
  if (oldest) {
    const auto held = h.held_for(*oldest);
    horizon = {{"xid_age", oldest->xid_age},
               {"held_seconds", held ? nlohmann::json(held->count() / 1e6) : nlohmann::json(nullptr)},
               {"holder", holders[static_cast<std::size_t>(oldest - h.holders.data())]}};
  }
  const bool hidden = h.details_hidden();
  return {{"now", format_time(h.now)},
          {"horizon", horizon},
          {"holders", holders},
          {"tables", tables},
          {"backlog", {{"overdue", or_null(h.overdue)},
                       {"counted_at", or_null(h.overdue_counted_at)},
                       {"oldest_due_at", or_null(h.oldest_overdue_due_at)}}},
          {"sees_all_sessions", h.sees_all_sessions},
          {"in_recovery", h.in_recovery},
          {"details_hidden", hidden},
          {"details_note", hidden ? nlohmann::json(kHiddenDetailsNote) : nlohmann::json(nullptr)}};
}

}  // namespace prescient

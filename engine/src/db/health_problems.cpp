#include "prescient/health_problems.hpp"

#include "prescient/duration.hpp"
#include "prescient/time_text.hpp"

namespace prescient {
namespace {

using std::chrono::duration_cast;
using std::chrono::seconds;

// An SQL string literal: a slot's name or a gid as the advice's statement must quote it.
std::string literal(const std::string& text) {
  std::string out = "'";
  for (const char c : text) out += c == '\'' ? std::string("''") : std::string(1, c);
  return out + "'";
}

std::string held_text(const DatabaseHealth& health, const HorizonHolder& holder) {
  std::string out = "holds xmin " + holder.held_xmin + ", " + std::to_string(holder.xid_age) + " transactions behind";
  if (const auto held = health.held_for(holder)) {
    out += ", since " + format_time(*holder.held_since) + " (" + format_duration(duration_cast<seconds>(*held)) + ")";
  }
  return out;
}

std::string session_advice(const HorizonHolder& holder) {
  const std::string pid = std::to_string(holder.pid.value_or(0));
  if (holder.backend_type == "autovacuum worker") {
    return "an autovacuum worker on a long vacuum (of a big table, or against wraparound) ends by itself; see what it "
           "vacuums with SELECT * FROM pg_stat_progress_vacuum WHERE pid = " + pid;
  }
  if (holder.details_hidden) {
    return std::string("its state is hidden from this role: run doctor as a role granted ") + kStatsDetailsRole +
           " to see it; SELECT pg_terminate_backend(" + pid + ") ends it (as a superuser, its own role, or a member of "
           "pg_signal_backend)";
  }
  if (holder.state && holder.state->rfind("idle in transaction", 0) == 0) {
    return "end it with SELECT pg_terminate_backend(" + pid + "), or set idle_in_transaction_session_timeout (for its "
           "role: ALTER ROLE ... SET idle_in_transaction_session_timeout = '5min')";
  }
  if (holder.state == "active") {
    return "cancel its query with SELECT pg_cancel_backend(" + pid + ") (pg_terminate_backend(" + pid + ") ends the "
           "session), or bound such queries with statement_timeout for its role; long "
           "reports belong on a replica without hot_standby_feedback";
  }
  return "end it with SELECT pg_terminate_backend(" + pid + ")";
}

std::string holder_advice(const HorizonHolder& holder) {
  if (holder.kind == "session") return session_advice(holder);
  if (holder.kind == "standby") {
    return "a query on that standby holds it through hot_standby_feedback: end the query there, or run long reports "
           "on a standby without hot_standby_feedback (with max_standby_streaming_delay bounding them)";
  }
  if (holder.kind == "replication_slot" || holder.kind == "replication_slot_catalog") {
    const std::string drop = "SELECT pg_drop_replication_slot(" + literal(holder.name.value_or("")) + ")";
    const std::string what = holder.kind == "replication_slot_catalog"
                                 ? "it holds back the system catalogs (not prescient's tables) and keeps WAL: "
                                 : "";
    return what + (holder.pid ? "its consumer (pid " + std::to_string(*holder.pid) + ") is not keeping up: look at "
                                "that standby or subscriber"
                              : "nothing consumes it: if its consumer is gone for good, " + drop);
  }
  const std::string gid = literal(holder.name.value_or(""));
  return "finish it in this database, as its owner: COMMIT PREPARED " + gid + " or ROLLBACK PREPARED " + gid;
}

bool held_too_long(const DatabaseHealth& health, const HorizonHolder& holder, const HealthLimits& limits) {
  if (holder.xid_age > limits.horizon_xids) return true;
  const auto held = health.held_for(holder);
  return held && *held > limits.horizon_age;
}

}  // namespace

std::vector<HealthProblem> health_problems(const DatabaseHealth& health, const HealthLimits& limits) {
  std::vector<HealthProblem> out;
  if (health.in_recovery) {
    out.push_back({"replica", "these figures were read on a replica (in recovery): its own sessions and vacuum, "
                              "not what holds back the primary's tables",
                   "read them on the primary: give its URL as --db"});
  }
  bool horizon_held = false;
  for (const HorizonHolder& holder : health.holders) {
    if (!held_too_long(health, holder, limits)) continue;
    horizon_held = horizon_held || holder.holds_tables;
    out.push_back({"horizon", holder.describe() + " " + held_text(health, holder), holder_advice(holder)});
  }
  for (const TableVacuum& t : health.tables) {
    if (t.dead_tuples < limits.min_dead_tuples || t.dead_tuples <= 2 * t.vacuum_trigger) continue;
    const std::string finding = "prescient." + t.table + " has " + std::to_string(t.dead_tuples) + " dead tuples (" +
                                std::to_string(t.live_tuples) + " live; autovacuum takes it at " +
                                std::to_string(t.vacuum_trigger) + "), last autovacuum " +
                                (t.last_autovacuum ? format_time(*t.last_autovacuum) : std::string("never"));
    std::string advice;
    if (!t.autovacuum_enabled) {
      advice = "autovacuum is off for it (or for the server): turn it on, or run VACUUM (ANALYZE) prescient." + t.table +
               " on a schedule";
    } else if (horizon_held) {
      advice = "vacuum cannot remove them while the horizon is held (above): release it, and autovacuum reclaims them";
    } else {
      advice = "autovacuum has not kept up: run VACUUM (ANALYZE) prescient." + t.table + " now; if it falls behind "
               "again, raise autovacuum_max_workers or lower autovacuum_vacuum_cost_delay";
    }
    out.push_back({"dead tuples", finding, advice});
  }
  if (health.oldest_overdue_due_at && health.now - *health.oldest_overdue_due_at > limits.backlog_age) {
    std::string finding = "checks are overdue, the oldest due at " + format_time(*health.oldest_overdue_due_at) + " (" +
                          format_duration(duration_cast<seconds>(health.now - *health.oldest_overdue_due_at)) + " ago)";
    if (health.overdue) finding += "; " + std::to_string(*health.overdue) + " overdue when last counted";
    out.push_back({"backlog", finding,
                   "are daemons running and keeping up? The dashboard's runners show the last slot each completed; a "
                   "daemon catches up after each slot, `prescient sweep` when none runs. A paused class's checks wait "
                   "too (`prescient stats` lists paused classes), and a worker class's wait for its workers"});
  }
  return out;
}

}  // namespace prescient

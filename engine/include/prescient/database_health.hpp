#pragma once
// What keeps prescient's tables healthy on a database shared with the application, read from the primary's
// statistics (sql/functions/078_health.sql): who holds back the MVCC horizon, so that vacuum cannot reclaim
// the dead row versions claims and settlements leave; each table's dead tuples and last vacuum; and the
// backlog. Shown by `prescient stats`, `prescient doctor`, the daemons' /metrics and the dashboard's Health
// page (docs/operations.md, "Health").
//
// Read with the caller's rights: a role without pg_read_all_stats (pg_monitor holds it) sees other roles'
// sessions with their pid, application and xmin, but no state or times (details_hidden); nothing fails for
// want of it.
#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <vector>

#include "prescient/time.hpp"

namespace soci {
class session;
}

namespace prescient {

// The role that shows every session's details, named wherever they are hidden.
inline constexpr const char* kStatsDetailsRole = "pg_monitor";
// What `stats`, the JSON and the dashboard say when some session's details are hidden.
inline constexpr const char* kHiddenDetailsNote =
    "other roles' sessions show no state or times to this role: grant it pg_monitor to see them";

// One thing that holds an xmin back on the primary.
struct HorizonHolder {
  // session, standby (a walsender's xmin: hot_standby_feedback), replication_slot, replication_slot_catalog
  // (holds back the system catalogs only), prepared_transaction.
  std::string kind;
  std::optional<long long> pid;                       // none for an inactive slot or a prepared transaction
  std::optional<std::string> name;                    // the slot's name, the prepared transaction's gid
  std::optional<std::string> role_name, application_name, state, backend_type;
  std::optional<TimePoint> xact_start, query_start;   // a session's, when its details are visible
  std::optional<TimePoint> held_since;                // since when, where known
  std::string held_xmin;                              // the xid it holds, as text
  long long xid_age = 0;                              // transactions between it and the next xid
  bool holds_tables = true;                           // false: the system catalogs only
  bool details_hidden = false;                        // a session of another role, seen without pg_read_all_stats
  // "session pid 1234 (app 'report', idle in transaction)", "replication slot 'standby1' (inactive)", ...
  std::string describe() const;
};

// One table of prescient's (a history partition is one).
struct TableVacuum {
  std::string table;
  long long live_tuples = 0, dead_tuples = 0;
  long long vacuum_trigger = 0;  // the dead tuples at which autovacuum takes the table
  bool autovacuum_enabled = true;
  std::optional<TimePoint> last_autovacuum, last_vacuum, last_autoanalyze, last_analyze;
  long long autovacuum_count = 0;
};

struct DatabaseHealth {
  TimePoint now;                            // the server's clock, which every age here is measured by
  bool sees_all_sessions = false;           // the role has pg_read_all_stats: no session's details are hidden
  bool in_recovery = false;                 // read on a replica: its own statistics, not the primary's
  std::vector<HorizonHolder> holders;       // oldest xmin first; this session's own left out
  std::vector<TableVacuum> tables;          // most dead tuples first
  std::optional<long long> overdue;         // checks due before the current slot, not run (the queue figures)
  std::optional<TimePoint> overdue_counted_at;
  std::optional<TimePoint> oldest_overdue_due_at;  // live: the due time of the oldest overdue check

  // The holder of the oldest xmin that holds back prescient's tables, if any.
  const HorizonHolder* horizon() const;
  // How long `holder` has held it, when known.
  std::optional<Micros> held_for(const HorizonHolder& holder) const;
  // Whether any holder is shown without its details.
  bool details_hidden() const;
};

// REQUIRES a migrated database, and a session on the primary: on a replica, the statistics are the replica's
// own (its sessions, its vacuum), not the ones that hold back the primary.
DatabaseHealth database_health(soci::session& primary);

// As `prescient stats --json` ("health") and `doctor --json` print it, and /api/health serves it.
nlohmann::json to_json(const DatabaseHealth& health);

}  // namespace prescient

#include "prescient/migrations.hpp"

#include <soci/soci.h>
#include <spdlog/spdlog.h>

#include <map>

#include "core/fnv.hpp"
#include "db/pq.hpp"
#include "db/released_checksums.hpp"
#include "db/transaction.hpp"
#include "prescient/clock.hpp"
#include "db/connection.hpp"
#include "prescient/database.hpp"
#include "prescient/duration.hpp"
#include "prescient/errors.hpp"
#include "prescient/slot_grid.hpp"

namespace prescient {

using namespace prescient::db;
using namespace prescient::core;
namespace {

// Any fixed number will do, as long as every migrator uses the same one.
constexpr const char* kMigrationLockKey = "7375828459127746561";

struct Applied {
  std::string name;
  std::string checksum;
};

std::string checksum_of(std::string_view text) { return fnv1a_hex(text); }

// A checksum recorded before the functions moved to sql/functions/ (db/released_checksums.hpp).
bool released_before_functions_moved(int version, const std::string& checksum) {
  const auto& released = checksums_released_before_functions_moved();
  const auto it = released.find(version);
  return it != released.end() && it->second == checksum;
}

std::map<int, Applied> read_applied(PGconn* conn) {
  pq::exec(conn, "cannot prepare the migrations table",
           "CREATE SCHEMA IF NOT EXISTS prescient;"
           "CREATE TABLE IF NOT EXISTS prescient.schema_migrations ("
           "  version integer PRIMARY KEY, name text NOT NULL, checksum text NOT NULL,"
           "  applied_at timestamptz NOT NULL DEFAULT now())");
  const pq::Result rows = pq::exec(conn, "cannot read applied migrations",
                                   "SELECT version, name, checksum FROM prescient.schema_migrations ORDER BY version");
  std::map<int, Applied> applied;
  for (int i = 0; i < rows.rows(); ++i) {
    applied[static_cast<int>(rows.integer(i, 0))] = {rows.text(i, 1), rows.text(i, 2)};
  }
  return applied;
}

void refuse_unknown_or_changed(const std::map<int, Applied>& applied) {
  if (!applied.empty() && applied.rbegin()->first > latest_known_migration()) {
    const auto& [version, newest] = *applied.rbegin();
    throw DatabaseError("the database has migration " + newest.name + ", newer than this prescient knows (up to " +
                        std::to_string(latest_known_migration()) + "): upgrade prescient before using this database");
  }
  for (const Migration& m : embedded_migrations()) {
    const auto it = applied.find(m.version);
    if (it != applied.end() && it->second.checksum != checksum_of(m.sql) &&
        !released_before_functions_moved(m.version, it->second.checksum)) {
      throw DatabaseError("migration " + std::string(m.name) +
                          " differs from the one applied to this database (migrations are forward-only: never edit "
                          "an applied file, add a new one)");
    }
  }
}

std::chrono::seconds stored_slot(PGconn* conn) {
  const pq::Result row = pq::exec(conn, "cannot read settings", "SELECT slot_seconds FROM prescient.settings");
  if (row.rows() != 1) throw DatabaseError("prescient.settings must hold exactly one row");
  return std::chrono::seconds{row.integer(0, 0)};
}

void apply(PGconn* conn, const Migration& m, std::chrono::seconds slot) {
  db::Transaction tx(conn);
  pq::exec(conn, "cannot set the slot", "SELECT set_config('prescient.slot_seconds', $1, true)",
           {std::to_string(slot.count())});
  pq::exec(conn, "migration " + std::string(m.name) + " failed", std::string(m.sql));
  pq::exec(conn, "cannot record migration " + std::string(m.name),
           "INSERT INTO prescient.schema_migrations (version, name, checksum) VALUES ($1, $2, $3)",
           {std::to_string(m.version), std::string(m.name), checksum_of(m.sql)});
  tx.commit();
}

constexpr const char* kFunctionsTable =
    "CREATE TABLE IF NOT EXISTS prescient.schema_functions ("
    "  name text PRIMARY KEY, checksum text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())";

// The function files applied to this database, by name: their checksums.
std::map<std::string, std::string> read_applied_functions(PGconn* conn) {
  const pq::Result table = pq::exec(conn, "cannot read the applied functions",
                                    "SELECT to_regclass('prescient.schema_functions') IS NOT NULL");
  std::map<std::string, std::string> applied;
  if (table.text(0, 0) != "t") return applied;
  const pq::Result rows =
      pq::exec(conn, "cannot read the applied functions", "SELECT name, checksum FROM prescient.schema_functions");
  for (int i = 0; i < rows.rows(); ++i) applied[rows.text(i, 0)] = rows.text(i, 1);
  return applied;
}

// The function files that are new or changed, in dependency order.
std::vector<const Migration*> stale_functions(PGconn* conn) {
  const auto applied = read_applied_functions(conn);
  std::vector<const Migration*> stale;
  for (const Migration& f : embedded_functions()) {
    const auto it = applied.find(std::string(f.name));
    if (it == applied.end() || it->second != checksum_of(f.sql)) stale.push_back(&f);
  }
  return stale;
}

// Applies the stale function files in one transaction: a database never runs half of a new set.
std::vector<std::string> apply_functions(PGconn* conn) {
  std::vector<std::string> applied;
  db::Transaction tx(conn);
  pq::exec(conn, "cannot prepare the functions table", kFunctionsTable);
  for (const Migration* f : stale_functions(conn)) {
    pq::exec(conn, "function file " + std::string(f->name) + " failed", std::string(f->sql));
    pq::exec(conn, "cannot record function file " + std::string(f->name),
             "INSERT INTO prescient.schema_functions (name, checksum) VALUES ($1, $2)"
             " ON CONFLICT (name) DO UPDATE SET checksum = excluded.checksum, applied_at = now()",
             {std::string(f->name), checksum_of(f->sql)});
    applied.emplace_back(f->name);
  }
  tx.commit();
  return applied;
}

// What every migrate ends with, whatever it applied: the roles get the grants of prescient.role_grant
// (when the roles exist), and the history gets its partitions, from the oldest month with rows waiting
// in the default partition (a migration copies history there) through three months ahead.
void finish(PGconn* conn, TimePoint now) {
  pq::exec(conn, "cannot grant the roles", "SELECT prescient.regrant_roles()");
  const int created = static_cast<int>(
      pq::exec(conn, "cannot create history partitions",
               "SELECT prescient.ensure_history_partitions("
               "  greatest(least(coalesce((SELECT min(finished_at) FROM prescient.job_history_default),"
               "                          prescient.at_us($1)), prescient.at_us($1)),"
               "           prescient.at_us($1) - interval '99 years'),"
               "  prescient.at_us($1) + interval '92 days')",
               {std::to_string(to_unix_micros(now))})
          .integer(0, 0));
  if (created > 0) spdlog::info("created {} monthly history partition(s)", created);
}

}  // namespace

int latest_known_migration() { return embedded_migrations().back().version; }

MigrationReport migrate(soci::session& db, std::optional<std::chrono::seconds> slot) {
  if (slot) SlotGrid{*slot};  // validates before anything is written
  PGconn* conn = native_connection(db);
  // One transaction, under a transaction-scoped lock: concurrent migrates wait for each other, a failure
  // leaves the database as it was, and a connection pooler in transaction mode (which moves a session to
  // another server connection between transactions, where a session lock would be left behind) serves it.
  db::Transaction tx(conn);
  pq::exec(conn, "cannot take the migration lock", "SELECT pg_advisory_xact_lock($1)", {kMigrationLockKey});

  const std::map<int, Applied> applied = read_applied(conn);
  refuse_unknown_or_changed(applied);
  const bool initialized = applied.contains(1);
  if (initialized && slot && *slot != stored_slot(conn)) {
    throw InvalidInput("--slot " + format_duration(*slot) + " does not match this database's slot resolution " +
                       format_duration(stored_slot(conn)) +
                       ": it is fixed at creation because pending checks are stored on its grid");
  }

  MigrationReport report;
  for (const Migration& m : embedded_migrations()) {
    if (applied.contains(m.version)) continue;
    apply(conn, m, slot.value_or(kDefaultSlot));
    // The report names it to the caller (`prescient migrate` prints it): at info, a terminal showed it twice.
    spdlog::debug("applied migration {}", m.name);
    report.applied.emplace_back(m.name);
  }
  report.functions = apply_functions(conn);
  for (const std::string& name : report.functions) spdlog::debug("applied functions {}", name);
  // Runners keep the history partitions ahead too; a migrated database has them from the start.
  finish(conn, SystemClock().now());
  report.version = latest_known_migration();
  report.slot = stored_slot(conn);
  tx.commit();
  return report;
}

void require_current_schema(soci::session& db) {
  PGconn* conn = native_connection(db);
  const pq::Result table = pq::exec(conn, "cannot read the schema version",
                                    "SELECT to_regclass('prescient.schema_migrations') IS NOT NULL");
  int version = 0;
  if (table.text(0, 0) == "t") {
    const pq::Result row = pq::exec(conn, "cannot read the schema version",
                                    "SELECT coalesce(max(version), 0) FROM prescient.schema_migrations");
    version = static_cast<int>(row.integer(0, 0));
  }
  const int known = latest_known_migration();
  if (version == 0) throw DatabaseError("this database has no prescient schema: run `prescient migrate` first");
  if (version < known) {
    throw DatabaseError("this database is at migration " + std::to_string(version) + " but prescient needs " +
                        std::to_string(known) + ": run `prescient migrate`");
  }
  if (version > known) {
    throw DatabaseError("this database is at migration " + std::to_string(version) +
                        ", newer than this prescient knows (" + std::to_string(known) + "): upgrade prescient");
  }
  if (const auto stale = stale_functions(conn); !stale.empty()) {
    throw DatabaseError("this database's functions differ from this prescient's (" + std::string(stale.front()->name) +
                        "): run `prescient migrate`");
  }
}

}  // namespace prescient

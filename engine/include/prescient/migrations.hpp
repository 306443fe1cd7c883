#pragma once
// The schema lives in SQL files compiled into the binary: numbered, forward-only migrations
// (sql/NNNN_name.sql: tables, indexes, data moves, drops) applied once each, then the functions and
// triggers (sql/functions/NNN_name.sql, CREATE OR REPLACE), applied again whenever their text changes.
// sql/schema.sql is the schema as it stands after all of them.
#include <chrono>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace soci {
class session;
}

namespace prescient {

struct Migration {
  int version;  // for a function file, its order number (files are applied in this order)
  std::string_view name;
  std::string_view sql;
};

// Every migration this binary carries, in version order, and every function file, in dependency order
// (generated from sql/).
std::span<const Migration> embedded_migrations();
std::span<const Migration> embedded_functions();
int latest_known_migration();

// The schema as one SQL file a client in any language applies without this binary (docs/workers.md,
// "The schema without the binary"): every embedded file, and the migrator's rules as a pg_temp function.
std::string schema_bundle();

struct MigrationReport {
  std::vector<std::string> applied;    // migration files applied by this call, in order
  std::vector<std::string> functions;  // function files (re)applied by this call: new, or changed
  int version = 0;                   // the database's version afterwards
  std::chrono::seconds slot{0};      // the database's slot resolution afterwards
};

// The slot resolution a new database gets when migrate is not told one.
inline constexpr std::chrono::seconds kDefaultSlot{60};

// Applies the missing migrations, each file in its own transaction, then, in one transaction, every
// function file that is new or whose text changed since it was applied, then grants the roles and makes
// the history partitions. Serialized across processes by an advisory lock (a second migrator waits, then
// finds nothing to do). `slot` sets the resolution of a new database; for an existing one it must match
// (the grid of stored checks cannot change). Throws InvalidInput for a bad or mismatching slot,
// DatabaseError when the database is newer than this binary, a recorded migration differs from the
// embedded one, or a statement fails (that file's transaction is rolled back; earlier files stay applied).
// Each file applied is in the report, and logged at debug only: the caller shows the report.
MigrationReport migrate(soci::session& db, std::optional<std::chrono::seconds> slot);

// Throws DatabaseError unless the database has exactly the migrations and function files this binary
// knows, saying what to run (migrate, or a newer prescient).
void require_current_schema(soci::session& db);

}  // namespace prescient

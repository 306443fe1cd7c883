#pragma once
// The schema lives in numbered, forward-only SQL files (sql/NNNN_name.sql) compiled into the binary.
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
  int version;
  std::string_view name;
  std::string_view sql;
};

// Every migration this binary carries, in version order (generated from sql/).
std::span<const Migration> embedded_migrations();
int latest_known_migration();

struct MigrationReport {
  std::vector<std::string> applied;  // file names applied by this call, in order
  int version = 0;                   // the database's version afterwards
  std::chrono::seconds slot{0};      // the database's slot resolution afterwards
};

// The slot resolution a new database gets when migrate is not told one.
inline constexpr std::chrono::seconds kDefaultSlot{60};

// Applies the missing migrations, each file in its own transaction, serialized across processes by
// an advisory lock (a second migrator waits, then finds nothing to do). `slot` sets the resolution
// of a new database; for an existing one it must match (the grid of stored checks cannot change).
// Throws InvalidInput for a bad or mismatching slot, DatabaseError when the database is newer than
// this binary, a recorded file differs from the embedded one, or a statement fails (that file's
// transaction is rolled back; earlier files stay applied).
MigrationReport migrate(soci::session& db, std::optional<std::chrono::seconds> slot);

// Throws DatabaseError unless the database has exactly the migrations this binary knows,
// saying what to run (migrate, or a newer prescient).
void require_current_schema(soci::session& db);

}  // namespace prescient

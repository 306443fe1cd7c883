#pragma once
// Reaching PostgreSQL: which database (flag, environment, libpq defaults) and one clear error when not.
#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>

namespace soci {
class session;
}

namespace prescient {

// The --db flag if given, else PRESCIENT_DATABASE_URL, else "" (libpq's own defaults: PGHOST, PGPORT, ...).
std::string resolve_database_url(const std::optional<std::string>& flag);
// Whether a connection string carries a password (false for one libpq cannot parse).
bool has_password(const std::string& url);

// Opens a session on `url` (a libpq URI or key=value string). Throws InvalidInput when libpq cannot parse
// it, DatabaseError with one line saying which server and what failed; never echoes a password.
std::unique_ptr<soci::session> connect(const std::string& url);

// Runs `work` in a transaction (joining the caller's, if one is open) whose statements the server stops
// after `limit` (statement_timeout): one that runs longer throws DatabaseError with SQLSTATE 57014. For
// a request that must not hold a session whatever its filters make the server read.
void within_statement_timeout(soci::session& db, std::chrono::milliseconds limit, const std::function<void()>& work);

}  // namespace prescient

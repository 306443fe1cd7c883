#pragma once
// Reaching PostgreSQL: which database (flag, environment, libpq defaults) and one clear error when not.
#include <libpq-fe.h>

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

// The URL (libpq URI or key=value) as a connect string SOCI 4.0 hands to libpq unchanged.
// Throws InvalidInput when libpq cannot parse it.
std::string soci_connect_string(const std::string& url);

// Opens a session. Throws DatabaseError with one line saying which server and what failed;
// never echoes a password.
std::unique_ptr<soci::session> connect(const std::string& url);

// The libpq connection under a SOCI session, for what SOCI cannot do (multi-statement scripts, COPY, LISTEN).
PGconn* native_connection(soci::session& db);

// A libpq message or SOCI error flattened to one line.
std::string one_line(std::string_view message);

}  // namespace prescient

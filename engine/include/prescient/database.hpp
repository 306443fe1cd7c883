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

// Whether a connection string carries a password (false for one libpq cannot parse).
bool has_password(const std::string& url);
// `url` with `password` added (as libpq's key=value string), for a password kept out of the URL (a file
// the configuration names). Throws InvalidInput when libpq cannot parse the URL or it holds a password
// already: one password, in one place.
std::string with_password(const std::string& url, const std::string& password);

// Opens a session on `url` (a libpq URI or key=value string), with TCP keepalives and tcp_user_timeout set
// where the URL does not set them (so a dead server is noticed in seconds). Throws InvalidInput when libpq cannot parse
// it, DatabaseError with one line saying which server and what failed; never echoes a password.
std::unique_ptr<soci::session> connect(const std::string& url);

// Whether the session reaches PostgreSQL through a connection pooler (PgBouncer and its kind): the
// process id libpq was told at connect is then the pooler's own key, not the server process serving the
// session's statements. One round trip. A pooler in transaction mode keeps no session state between
// transactions (prepared statements, LISTEN, session advisory locks); in session mode it does, but the
// two modes look the same from here.
bool through_pooler(soci::session& db);

// Runs `work` in a transaction (joining the caller's, if one is open) whose statements the server stops
// after `limit` (statement_timeout): one that runs longer throws DatabaseError with SQLSTATE 57014. For
// a request that must not hold a session whatever its filters make the server read. The commit (this
// transaction's, or the caller's) runs under the session's own statement_timeout again, never `limit`:
// a cancelled wait for a synchronous standby would report a commit only this server holds.
void within_statement_timeout(soci::session& db, std::chrono::milliseconds limit, const std::function<void()>& work);

}  // namespace prescient

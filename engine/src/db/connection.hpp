#pragma once
// Internal: the libpq connection under a SOCI session, and the connect string SOCI 4.0 can carry.
// prescient's own statements go through libpq (db/pq.hpp) on this connection; SOCI is the session type
// applications and plugins hand over and receive (docs/design.md, "One client API").
#include <libpq-fe.h>

#include <string>
#include <string_view>

namespace soci {
class session;
}

namespace prescient::db {

// The URL (libpq URI or key=value) as a connect string SOCI 4.0 hands to libpq unchanged, with TCP
// keepalives and tcp_user_timeout set where the URL leaves them unset (connection.cpp).
// Throws InvalidInput when libpq cannot parse it.
std::string soci_connect_string(const std::string& url);

// The libpq connection under a SOCI session.
PGconn* native_connection(soci::session& db);

}  // namespace prescient::db

// What every session prescient opens is set up for a failover (docs/operations.md, "High availability"):
// a dead socket is noticed in seconds (TCP keepalives, tcp_user_timeout, unless the URL sets its own), and
// a statement timeout never reaches a COMMIT, whose wait for a synchronous standby it would cancel.
#include <catch2/catch.hpp>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <soci/soci.h>
#include <sys/socket.h>

#include <string>

#include "db/connection.hpp"
#include "db/pq.hpp"
#include "prescient/database.hpp"
#include "prescient/errors.hpp"
#include "test_database.hpp"

using namespace prescient;
using namespace prescient::testing;
using namespace std::chrono_literals;

namespace {

// An option of the session's socket, as the kernel has it.
int socket_option(soci::session& db, int level, int name) {
  int value = -1;
  socklen_t size = sizeof value;
  REQUIRE(::getsockopt(PQsocket(db::native_connection(db)), level, name, &value, &size) == 0);
  return value;
}

std::string statement_timeout(soci::session& db) {
  std::string value;
  db << "SELECT current_setting('statement_timeout')", soci::into(value);
  return value;
}

}  // namespace

TEST_CASE("a session's socket has keepalives and tcp_user_timeout unless the URL sets its own") {
  const std::string url = create_empty_database();
  REQUIRE(connection_option(url, "host") == "127.0.0.1");  // TCP: libpq sets none of them on a Unix socket
  const auto db = connect(url);
  CHECK(socket_option(*db, SOL_SOCKET, SO_KEEPALIVE) == 1);
  CHECK(socket_option(*db, IPPROTO_TCP, TCP_KEEPIDLE) == 5);
  CHECK(socket_option(*db, IPPROTO_TCP, TCP_KEEPINTVL) == 2);
  CHECK(socket_option(*db, IPPROTO_TCP, TCP_KEEPCNT) == 3);
  CHECK(socket_option(*db, IPPROTO_TCP, TCP_USER_TIMEOUT) == 6000);

  const auto own = connect(with_connection_option(with_connection_option(url, "keepalives_idle", "30"),
                                                  "tcp_user_timeout", "0"));
  CHECK(socket_option(*own, IPPROTO_TCP, TCP_KEEPIDLE) == 30);
  CHECK(socket_option(*own, IPPROTO_TCP, TCP_USER_TIMEOUT) == 0);
  CHECK(socket_option(*own, IPPROTO_TCP, TCP_KEEPCNT) == 3);  // the rest as by default
  const auto without = connect(with_connection_option(url, "keepalives", "0"));
  CHECK(socket_option(*without, SOL_SOCKET, SO_KEEPALIVE) == 0);
}

TEST_CASE("within_statement_timeout bounds its work, never the commit after it") {
  const auto db = connect(create_empty_database());
  *db << "SET statement_timeout = '7s'";
  SECTION("on its own: the limit holds during the work, the session's is back for the commit") {
    std::string during;
    within_statement_timeout(*db, 150ms, [&] { during = statement_timeout(*db); });
    CHECK(during == "150ms");
    CHECK(statement_timeout(*db) == "7s");
  }
  SECTION("inside the caller's transaction: the caller's COMMIT runs under the session's own timeout") {
    *db << "BEGIN";
    std::string during;
    within_statement_timeout(*db, 150ms, [&] { during = statement_timeout(*db); });
    CHECK(during == "150ms");
    CHECK(statement_timeout(*db) == "7s");
    *db << "COMMIT";
  }
  SECTION("work past the limit is stopped (57014), and the caller's transaction keeps its own timeout") {
    *db << "BEGIN";
    try {
      within_statement_timeout(*db, 100ms,
                               [&] { db::pq::exec(db::native_connection(*db), "slept", "SELECT pg_sleep(2)"); });
      FAIL("the statement was not stopped");
    } catch (const DatabaseError& e) {
      CHECK(e.sqlstate() == "57014");
    }
    CHECK(statement_timeout(*db) == "7s");
    *db << "COMMIT";
  }
}

#include "explained_session.hpp"

#include <catch2/catch.hpp>

namespace prescient::testing {

ExplainedSession::ExplainedSession(const std::string& url, bool analyze)
    : conn_(PQconnectdb(url.c_str()), &PQfinish) {
  REQUIRE(PQstatus(conn_.get()) == CONNECTION_OK);
  PQsetNoticeProcessor(
      conn_.get(), [](void* to, const char* message) { *static_cast<std::string*>(to) += message; }, &notices_);
  run("LOAD 'auto_explain'");
  run("SET auto_explain.log_min_duration = 0");
  run("SET auto_explain.log_nested_statements = on");
  run("SET auto_explain.log_verbose = on");
  run(std::string("SET auto_explain.log_analyze = ") + (analyze ? "on" : "off"));
  run("SET auto_explain.log_level = notice");
}

std::string ExplainedSession::run(const std::string& sql) {
  std::unique_ptr<PGresult, decltype(&PQclear)> r(PQexec(conn_.get(), sql.c_str()), &PQclear);
  INFO(sql << ": " << PQerrorMessage(conn_.get()));
  REQUIRE((PQresultStatus(r.get()) == PGRES_COMMAND_OK || PQresultStatus(r.get()) == PGRES_TUPLES_OK));
  return PQntuples(r.get()) > 0 && PQnfields(r.get()) > 0 ? PQgetvalue(r.get(), 0, 0) : "";
}

}  // namespace prescient::testing

#include "pq.hpp"

#include <vector>

#include "prescient/database.hpp"
#include "prescient/errors.hpp"

namespace prescient::pq {

Result exec(PGconn* conn, std::string_view what, const std::string& sql,
            std::initializer_list<std::optional<std::string>> params) {
  PGresult* raw = nullptr;
  if (params.size() == 0) {
    raw = PQexec(conn, sql.c_str());
  } else {
    std::vector<const char*> values;
    values.reserve(params.size());
    for (const auto& p : params) values.push_back(p ? p->c_str() : nullptr);
    raw = PQexecParams(conn, sql.c_str(), static_cast<int>(values.size()), nullptr, values.data(), nullptr,
                       nullptr, 0);
  }
  Result result(raw, &PQclear);
  const ExecStatusType status = raw ? PQresultStatus(raw) : PGRES_FATAL_ERROR;
  if (status != PGRES_COMMAND_OK && status != PGRES_TUPLES_OK) {
    const char* message = raw ? PQresultErrorMessage(raw) : PQerrorMessage(conn);
    throw DatabaseError(std::string(what) + ": " + one_line(message));
  }
  return result;
}

}  // namespace prescient::pq

#include "pq.hpp"

#include "prescient/database.hpp"
#include "prescient/errors.hpp"

namespace prescient::pq {

std::optional<std::string> Result::optional_text(int row, int col) const {
  if (null(row, col)) return std::nullopt;
  return text(row, col);
}

std::int64_t Result::integer(int row, int col) const { return std::stoll(PQgetvalue(result_.get(), row, col)); }

std::optional<std::int64_t> Result::optional_integer(int row, int col) const {
  if (null(row, col)) return std::nullopt;
  return integer(row, col);
}

std::optional<TimePoint> Result::optional_time(int row, int col) const {
  if (null(row, col)) return std::nullopt;
  return time(row, col);
}

std::string text_array(const std::vector<std::optional<std::string>>& values) {
  std::string out = "{";
  for (std::size_t i = 0; i < values.size(); ++i) {
    if (i > 0) out += ',';
    if (!values[i]) {
      out += "NULL";
      continue;
    }
    out += '"';
    for (const char c : *values[i]) {
      if (c == '"' || c == '\\') out += '\\';
      out += c;
    }
    out += '"';
  }
  return out + "}";
}

std::string integer_array(const std::vector<std::int64_t>& values) {
  std::string out = "{";
  for (std::size_t i = 0; i < values.size(); ++i) out += (i > 0 ? "," : "") + std::to_string(values[i]);
  return out + "}";
}

std::string optional_integer_array(const std::vector<std::optional<std::int64_t>>& values) {
  std::string out = "{";
  for (std::size_t i = 0; i < values.size(); ++i) {
    out += (i > 0 ? "," : "") + (values[i] ? std::to_string(*values[i]) : std::string("NULL"));
  }
  return out + "}";
}

Result exec(PGconn* conn, std::string_view what, const std::string& sql, const Params& params) {
  PGresult* raw = nullptr;
  if (params.empty()) {
    raw = PQexec(conn, sql.c_str());
  } else {
    std::vector<const char*> values;
    values.reserve(params.size());
    for (const auto& p : params) values.push_back(p ? p->c_str() : nullptr);
    raw = PQexecParams(conn, sql.c_str(), static_cast<int>(values.size()), nullptr, values.data(), nullptr,
                       nullptr, 0);
  }
  Result result(raw);
  const ExecStatusType status = raw ? PQresultStatus(raw) : PGRES_FATAL_ERROR;
  if (status == PGRES_COMMAND_OK || status == PGRES_TUPLES_OK) return result;

  const char* sqlstate = raw ? PQresultErrorField(raw, PG_DIAG_SQLSTATE) : nullptr;
  if (sqlstate != nullptr && std::string_view(sqlstate).starts_with("PR4")) {
    throw InvalidInput(one_line(PQresultErrorField(raw, PG_DIAG_MESSAGE_PRIMARY)));
  }
  const char* message = raw ? PQresultErrorMessage(raw) : PQerrorMessage(conn);
  throw DatabaseError(std::string(what) + ": " + one_line(message));
}

}  // namespace prescient::pq

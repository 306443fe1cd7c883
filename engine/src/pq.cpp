#include "pq.hpp"

#include <algorithm>

#include "fnv.hpp"

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

namespace {

std::vector<const char*> values_of(const Params& params) {
  std::vector<const char*> values;
  values.reserve(params.size());
  for (const auto& p : params) values.push_back(p ? p->c_str() : nullptr);
  return values;
}

// The statement's name on the server: derived from its text, so two holders on one connection agree.
std::string statement_name(const std::string& sql) { return "prescient_" + fnv1a_hex(sql); }

Result checked(PGconn* conn, std::string_view what, PGresult* raw) {
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

}  // namespace

Result exec(PGconn* conn, std::string_view what, const std::string& sql, const Params& params) {
  if (params.empty()) return checked(conn, what, PQexec(conn, sql.c_str()));
  const std::vector<const char*> values = values_of(params);
  return checked(conn, what,
                 PQexecParams(conn, sql.c_str(), static_cast<int>(values.size()), nullptr, values.data(), nullptr,
                              nullptr, 0));
}

Result PreparedStatements::exec(PGconn* conn, std::string_view what, const std::string& sql, const Params& params) {
  const std::string name = statement_name(sql);
  if (std::find(prepared_.begin(), prepared_.end(), sql) == prepared_.end()) {
    // A lookup, not a PREPARE that might fail: an error would abort the caller's open transaction.
    const Result known = pq::exec(conn, what, "SELECT 1 FROM pg_prepared_statements WHERE name = $1", {name});
    if (known.rows() == 0) checked(conn, what, PQprepare(conn, name.c_str(), sql.c_str(), 0, nullptr));
    prepared_.push_back(sql);
  }
  const std::vector<const char*> values = values_of(params);
  return checked(conn, what,
                 PQexecPrepared(conn, name.c_str(), static_cast<int>(values.size()), values.data(), nullptr, nullptr,
                                0));
}

}  // namespace prescient::pq

#pragma once
// Internal: thin RAII over libpq. SOCI owns the connection; statements whose shape SOCI handles
// poorly (multi-statement scripts, dynamic filters, arrays, bulk) go through here.
#include <libpq-fe.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "prescient/time.hpp"

namespace prescient::pq {

using Params = std::vector<std::optional<std::string>>;

// A query result, read by row and column number.
class Result {
 public:
  explicit Result(PGresult* result) : result_(result, &PQclear) {}
  int rows() const { return PQntuples(result_.get()); }
  bool null(int row, int col) const { return PQgetisnull(result_.get(), row, col) != 0; }
  std::string text(int row, int col) const { return PQgetvalue(result_.get(), row, col); }
  std::optional<std::string> optional_text(int row, int col) const;
  std::int64_t integer(int row, int col) const;
  std::optional<std::int64_t> optional_integer(int row, int col) const;
  // A column selected as prescient.us(timestamptz).
  TimePoint time(int row, int col) const { return from_unix_micros(integer(row, col)); }
  std::optional<TimePoint> optional_time(int row, int col) const;

 private:
  std::unique_ptr<PGresult, decltype(&PQclear)> result_;
};

// PostgreSQL array literals, for sending many values as one parameter ($1::text[], $1::bigint[]).
std::string text_array(const std::vector<std::optional<std::string>>& values);
std::string integer_array(const std::vector<std::int64_t>& values);
std::string optional_integer_array(const std::vector<std::optional<std::int64_t>>& values);

// Runs sql; with no params through PQexec (several statements allowed), else PQexecParams
// (values travel apart from the SQL text, never spliced into it). Errors with prescient's SQLSTATEs
// PR4xx (bad input, key conflict) throw InvalidInput with the server's message; any other error
// throws DatabaseError prefixed by `what`.
Result exec(PGconn* conn, std::string_view what, const std::string& sql, const Params& params = {});

// A hot statement, parsed and planned by the server once per connection instead of once per call.
// Not transactional and bound to the connection it was prepared on: a new connection starts without
// it, so the holder (a Store, one per session) remembers what it prepared.
class PreparedStatements {
 public:
  // Like exec(), through a server-side prepared statement for sql (prepared on first use here; one on
  // the connection from an earlier holder is reused, never prepared twice).
  Result exec(PGconn* conn, std::string_view what, const std::string& sql, const Params& params);

 private:
  std::vector<std::string> prepared_;  // the SQL texts prepared on this holder's connection
};

}  // namespace prescient::pq

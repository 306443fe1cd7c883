#pragma once
// Internal: thin RAII over libpq, through which every statement of prescient's own goes (binary
// parameters and results, arrays, prepared statements, the SQLSTATE of a failure). The connection is the
// one under a SOCI session (native_connection): SOCI stays only where an application hands prescient its
// session or a plugin asks its own tables (docs/design.md, "One seam for SQL").
#include <libpq-fe.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "prescient/time.hpp"

namespace prescient::db::pq {

// A statement parameter: a value in PostgreSQL's text input syntax, NULL, or a value in its binary wire
// format (the arrays below), which the server reads without parsing text.
struct Param {
  std::optional<std::string> value;
  bool binary = false;
  Param(std::nullopt_t) {}
  Param(std::string text) : value(std::move(text)) {}
  Param(const char* text) : value(text) {}
  Param(std::optional<std::string> text) : value(std::move(text)) {}
};
using Params = std::vector<Param>;

// A query result, read by row and column number. Columns come as text, or in binary when the
// statement asked for it (Format::binary); the accessors read either.
class Result {
 public:
  explicit Result(PGresult* result) : result_(result, &PQclear) {}
  int rows() const { return PQntuples(result_.get()); }
  bool null(int row, int col) const { return PQgetisnull(result_.get(), row, col) != 0; }
  // A text, varchar or jsonb column.
  std::string text(int row, int col) const;
  std::optional<std::string> optional_text(int row, int col) const;
  // A smallint, integer or bigint column.
  std::int64_t integer(int row, int col) const;
  std::optional<std::int64_t> optional_integer(int row, int col) const;
  // A timestamptz column, or a bigint column of prescient.us(timestamptz).
  TimePoint time(int row, int col) const;
  std::optional<TimePoint> optional_time(int row, int col) const;

 private:
  bool binary(int col) const { return PQfformat(result_.get(), col) == 1; }
  std::unique_ptr<PGresult, decltype(&PQclear)> result_;
};

// A time as the parameter prescient.at_us($n) takes: microseconds since the Unix epoch, as text.
inline std::string micros(TimePoint t) { return std::to_string(to_unix_micros(t)); }

// A number as a text parameter; none: NULL.
inline std::optional<std::string> number_text(std::optional<std::int64_t> value) {
  return value ? std::optional(std::to_string(*value)) : std::nullopt;
}

// A duration as the server reads an interval ("90 seconds"); none: NULL.
inline std::optional<std::string> interval_text(std::optional<std::chrono::seconds> duration) {
  return duration ? std::optional(std::to_string(duration->count()) + " seconds") : std::nullopt;
}

// One-dimensional arrays in the binary wire format, for sending many values as one parameter
// ($1::bigint[], $1::text[], $1::timestamptz[]): no literal to build and escape, none to parse.
Param integer_array(std::span<const std::int64_t> values);
Param optional_integer_array(std::span<const std::optional<std::int64_t>> values);
// As optional_integer_array and text_array, but NULL when every element is: a statement that unnests several
// arrays together pads a NULL one with nulls, so a column mostly unset (a batch without failures) costs nothing.
Param integer_array_or_null(std::span<const std::optional<std::int64_t>> values);
Param text_array_or_null(std::span<const std::optional<std::string>> values);
Param text_array(std::span<const std::optional<std::string>> values);
Param text_array(std::span<const std::string> values);
Param time_array(std::span<const TimePoint> values);
// As time_array, with nulls; NULL when every element is (as integer_array_or_null).
Param time_array_or_null(std::span<const std::optional<TimePoint>> values);

// The format the server sends result columns in. Binary spares both sides the conversion of numbers
// and times to text and back: worth it for the hot path's wide results (a claim's rows).
enum class Format { text, binary };

// Runs sql; with no params (and text results) through PQexec (several statements allowed), else PQexecParams
// (values travel apart from the SQL text, never spliced into it). Errors with prescient's SQLSTATEs
// PR404 (no such thing) throws NotFound, the other PR4xx (bad input, a conflict) InvalidInput, with the
// server's message; any other error
// throws DatabaseError prefixed by `what`.
Result exec(PGconn* conn, std::string_view what, const std::string& sql, const Params& params = {},
            Format results = Format::text);

// Like exec() of a statement without parameters, waiting at most `limit` for its answer. Past it the
// connection is closed, never cancelled, and DatabaseError (SQLSTATE 08006) says the outcome is unknown: for
// a COMMIT that waits for a synchronous standby that is gone (a frozen leader's), where a cancel would make
// the server report as committed what only it holds.
Result exec_within(PGconn* conn, std::string_view what, const std::string& sql, std::chrono::milliseconds limit);

// A hot statement, parsed and planned by the server once per connection instead of once per call.
// Not transactional and bound to the connection it was prepared on: a new connection starts without
// it, so the holder (a Store, one per session) remembers what it prepared.
//
// A pooler in transaction mode (PgBouncer before 1.21) hands each transaction whichever server
// connection is free, where a statement prepared on another does not exist: there the holder is made
// with prepare = false and runs every statement unnamed (PQexecParams: still one round trip, parsed
// and planned per call).
class PreparedStatements {
 public:
  explicit PreparedStatements(bool prepare = true) : prepare_(prepare) {}
  // Like exec(), through a server-side prepared statement for sql (prepared on first use here; one on
  // the connection from an earlier holder is reused, never prepared twice), or unnamed when not preparing.
  Result exec(PGconn* conn, std::string_view what, const std::string& sql, const Params& params,
              Format results = Format::text);

 private:
  bool prepare_;
  std::vector<std::string> prepared_;  // the SQL texts prepared on this holder's connection
};

}  // namespace prescient::db::pq

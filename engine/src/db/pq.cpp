#include "core/text_rules.hpp"
#include "db/pq.hpp"

#include <poll.h>
#include <sys/socket.h>

#include <algorithm>

#include "core/fnv.hpp"

#include "db/connection.hpp"
#include "prescient/database.hpp"
#include "prescient/errors.hpp"

namespace prescient::db::pq {

using namespace prescient::core;

namespace {

// Type OIDs of pg_type (fixed in every PostgreSQL): the types prescient reads and sends in binary.
constexpr Oid kInt2 = 21, kInt4 = 23, kInt8 = 20, kText = 25, kVarchar = 1043, kJson = 114, kJsonb = 3802,
              kTimestamptz = 1184;
// Binary timestamps count microseconds from 2000-01-01T00:00:00Z.
constexpr std::int64_t kPostgresEpochMicros = 946684800LL * 1000000;

std::int64_t big_endian(const char* bytes, int size) {
  std::int64_t value = static_cast<signed char>(bytes[0]);  // sign-extends
  for (int i = 1; i < size; ++i) value = (value << 8) | static_cast<unsigned char>(bytes[i]);
  return value;
}

void append_big_endian(std::string& out, std::int64_t value, int size) {
  for (int shift = 8 * (size - 1); shift >= 0; shift -= 8) out += static_cast<char>((value >> shift) & 0xFF);
}

// array_recv's layout: dimensions, has-NULLs flag, element type, (length, lower bound) per dimension,
// then each element as its length (-1 for NULL) and bytes.
template <class T, class Encode>
Param binary_array(std::span<const T> values, Oid element_type, Encode encode) {
  std::string out;
  bool has_null = false;
  std::string elements;
  for (const T& value : values) {
    const std::optional<std::string> bytes = encode(value);
    has_null = has_null || !bytes;
    append_big_endian(elements, bytes ? static_cast<std::int64_t>(bytes->size()) : -1, 4);
    if (bytes) elements += *bytes;
  }
  append_big_endian(out, values.empty() ? 0 : 1, 4);
  append_big_endian(out, has_null ? 1 : 0, 4);
  append_big_endian(out, element_type, 4);
  if (!values.empty()) {
    append_big_endian(out, static_cast<std::int64_t>(values.size()), 4);
    append_big_endian(out, 1, 4);
  }
  Param param(std::move(out += elements));
  param.binary = true;
  return param;
}

std::string int8_bytes(std::int64_t value) {
  std::string bytes;
  append_big_endian(bytes, value, 8);
  return bytes;
}

}  // namespace

std::string Result::text(int row, int col) const {
  const char* value = PQgetvalue(result_.get(), row, col);
  if (!binary(col)) return value;
  const int length = PQgetlength(result_.get(), row, col);
  switch (PQftype(result_.get(), col)) {
    case kText:
    case kVarchar:
    case kJson: return std::string(value, length);
    case kJsonb: return std::string(value + 1, length - 1);  // after the format version byte
    default: throw DatabaseError("column " + std::to_string(col) + " is not text in binary results");
  }
}

std::optional<std::string> Result::optional_text(int row, int col) const {
  if (null(row, col)) return std::nullopt;
  return text(row, col);
}

std::int64_t Result::integer(int row, int col) const {
  const char* value = PQgetvalue(result_.get(), row, col);
  if (!binary(col)) return std::stoll(value);
  switch (PQftype(result_.get(), col)) {
    case kInt2: return big_endian(value, 2);
    case kInt4: return big_endian(value, 4);
    case kInt8: return big_endian(value, 8);
    default: throw DatabaseError("column " + std::to_string(col) + " is not an integer in binary results");
  }
}

std::optional<std::int64_t> Result::optional_integer(int row, int col) const {
  if (null(row, col)) return std::nullopt;
  return integer(row, col);
}

TimePoint Result::time(int row, int col) const {
  if (binary(col) && PQftype(result_.get(), col) == kTimestamptz) {
    return from_unix_micros(big_endian(PQgetvalue(result_.get(), row, col), 8) + kPostgresEpochMicros);
  }
  return from_unix_micros(integer(row, col));
}

std::optional<TimePoint> Result::optional_time(int row, int col) const {
  if (null(row, col)) return std::nullopt;
  return time(row, col);
}

Param integer_array(std::span<const std::int64_t> values) {
  return binary_array(values, kInt8, [](std::int64_t v) { return std::optional(int8_bytes(v)); });
}

Param optional_integer_array(std::span<const std::optional<std::int64_t>> values) {
  return binary_array(values, kInt8, [](const std::optional<std::int64_t>& v) {
    return v ? std::optional(int8_bytes(*v)) : std::nullopt;
  });
}

Param text_array(std::span<const std::optional<std::string>> values) {
  return binary_array(values, kText, [](const std::optional<std::string>& v) { return v; });
}

namespace {
template <class T>
bool all_null(std::span<const std::optional<T>> values) {
  return std::all_of(values.begin(), values.end(), [](const std::optional<T>& v) { return !v; });
}
}  // namespace

Param integer_array_or_null(std::span<const std::optional<std::int64_t>> values) {
  return all_null(values) ? Param(std::nullopt) : optional_integer_array(values);
}

Param text_array_or_null(std::span<const std::optional<std::string>> values) {
  return all_null(values) ? Param(std::nullopt) : text_array(values);
}

Param text_array(std::span<const std::string> values) {
  return binary_array(values, kText, [](const std::string& v) { return std::optional(v); });
}

Param time_array(std::span<const TimePoint> values) {
  return binary_array(values, kTimestamptz,
                      [](TimePoint t) { return std::optional(int8_bytes(to_unix_micros(t) - kPostgresEpochMicros)); });
}

Param time_array_or_null(std::span<const std::optional<TimePoint>> values) {
  if (all_null(values)) return Param(std::nullopt);
  return binary_array(values, kTimestamptz, [](const std::optional<TimePoint>& t) {
    return t ? std::optional(int8_bytes(to_unix_micros(*t) - kPostgresEpochMicros)) : std::nullopt;
  });
}

namespace {

// The parallel arrays libpq takes for parameters.
struct Wire {
  std::vector<const char*> values;
  std::vector<int> lengths;
  std::vector<int> formats;
  explicit Wire(const Params& params) {
    for (const Param& p : params) {
      values.push_back(p.value ? p.value->data() : nullptr);
      lengths.push_back(p.value ? static_cast<int>(p.value->size()) : 0);
      formats.push_back(p.binary ? 1 : 0);
    }
  }
  int count() const { return static_cast<int>(values.size()); }
};

// The statement's name on the server: derived from its text, so two holders on one connection agree.
std::string statement_name(const std::string& sql) { return "prescient_" + fnv1a_hex(sql); }

Result checked(PGconn* conn, std::string_view what, PGresult* raw) {
  Result result(raw);
  const ExecStatusType status = raw ? PQresultStatus(raw) : PGRES_FATAL_ERROR;
  // An empty query (a script of comments only, e.g. a migration whose functions moved) did nothing, fine.
  if (status == PGRES_COMMAND_OK || status == PGRES_TUPLES_OK || status == PGRES_EMPTY_QUERY) return result;

  const char* sqlstate = raw ? PQresultErrorField(raw, PG_DIAG_SQLSTATE) : nullptr;
  if (sqlstate != nullptr && std::string_view(sqlstate) == "PR404") {
    throw NotFound(one_line(PQresultErrorField(raw, PG_DIAG_MESSAGE_PRIMARY)));
  }
  if (sqlstate != nullptr && std::string_view(sqlstate).starts_with("PR4")) {
    throw InvalidInput(one_line(PQresultErrorField(raw, PG_DIAG_MESSAGE_PRIMARY)));
  }
  const char* message = raw ? PQresultErrorMessage(raw) : PQerrorMessage(conn);
  throw DatabaseError(std::string(what) + ": " + one_line(message), sqlstate != nullptr ? sqlstate : "");
}

}  // namespace

Result exec(PGconn* conn, std::string_view what, const std::string& sql, const Params& params, Format results) {
  if (params.empty() && results == Format::text) return checked(conn, what, PQexec(conn, sql.c_str()));
  const Wire wire(params);
  return checked(conn, what,
                 PQexecParams(conn, sql.c_str(), wire.count(), nullptr, wire.values.data(), wire.lengths.data(),
                              wire.formats.data(), results == Format::binary ? 1 : 0));
}

Result exec_within(PGconn* conn, std::string_view what, const std::string& sql, std::chrono::milliseconds limit) {
  if (PQsendQuery(conn, sql.c_str()) == 0) return checked(conn, what, nullptr);
  using std::chrono::steady_clock;
  const auto deadline = steady_clock::now() + limit;
  while (PQisBusy(conn) != 0) {
    // Rounded up: truncated, the last poll ended up to a millisecond before the limit, and the statement was
    // given up early (a test saw 0.999 s of a 1 s limit).
    const auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline - steady_clock::now());
    if (left <= std::chrono::milliseconds{0}) {
      ::shutdown(PQsocket(conn), SHUT_RDWR);
      throw DatabaseError(std::string(what) + ": no answer within " + std::to_string(limit.count()) +
                              " ms; the connection is closed, and whether it took effect is unknown",
                          "08006");
    }
    pollfd socket{.fd = PQsocket(conn), .events = POLLIN, .revents = 0};
    ::poll(&socket, 1, static_cast<int>(left.count()));
    if (PQconsumeInput(conn) == 0) break;  // the connection failed: its result says so
  }
  // The statement's result, then the null that ends the results (a simple query of one statement).
  Result result = checked(conn, what, PQgetResult(conn));
  while (PGresult* extra = PQgetResult(conn)) PQclear(extra);
  return result;
}

Result PreparedStatements::exec(PGconn* conn, std::string_view what, const std::string& sql, const Params& params,
                                Format results) {
  if (!prepare_) return pq::exec(conn, what, sql, params, results);
  const std::string name = statement_name(sql);
  if (std::find(prepared_.begin(), prepared_.end(), sql) == prepared_.end()) {
    // A lookup, not a PREPARE that might fail: an error would abort the caller's open transaction.
    const Result known = pq::exec(conn, what, "SELECT 1 FROM pg_prepared_statements WHERE name = $1", {name});
    if (known.rows() == 0) checked(conn, what, PQprepare(conn, name.c_str(), sql.c_str(), 0, nullptr));
    prepared_.push_back(sql);
  }
  const Wire wire(params);
  try {
    return checked(conn, what,
                   PQexecPrepared(conn, name.c_str(), wire.count(), wire.values.data(), wire.lengths.data(),
                                  wire.formats.data(), results == Format::binary ? 1 : 0));
  } catch (const DatabaseError& e) {
    // 26000: the statement prepared on this connection is gone: a pooler in transaction mode moved the
    // session to another server connection between transactions.
    if (e.sqlstate() != "26000") throw;
    throw DatabaseError(std::string(e.what()) +
                            " (behind a connection pooler in transaction mode, run with --prepared-statements off)",
                        e.sqlstate());
  }
}

}  // namespace prescient::db::pq

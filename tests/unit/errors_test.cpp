#include <catch2/catch.hpp>

#include "prescient/errors.hpp"

using prescient::lost_session_or_server;

TEST_CASE("a failed statement's SQLSTATE says whether the session or the server failed") {
  struct Row {
    const char* sqlstate;
    bool session;  // the session or the server: the whole batch, retry later
  };
  const Row rows[] = {
      {"22021", false},   // invalid byte sequence for the encoding
      {"22P05", false},   // \u0000 in jsonb
      {"22008", false},   // timestamp out of range
      {"23514", false},   // a check constraint
      {"23505", false},   // a unique violation
      {"54000", false},   // an index entry or a jsonb value too big
      {"P0001", false},   // RAISE in a trigger on the row
      {"08006", true},   // connection failure
      {"57P01", true},   // admin shutdown
      {"57014", true},   // query cancelled
      {"53100", true},   // disk full
      {"58030", true},   // I/O error
      {"XX000", true},   // internal error
      {"", true},        // no SQLSTATE: the connection is gone
      {"40P01", false},  // deadlock: neither; the caller decides
      {"42P01", false},  // undefined table: a statement's bug, not a value's
      {"25006", false},  // read-only transaction
      {"2", true},       // not a SQLSTATE: treated as no SQLSTATE
  };
  for (const Row& row : rows) {
    INFO(row.sqlstate);
    CHECK(lost_session_or_server(row.sqlstate) == row.session);
  }
}

#include <catch2/catch.hpp>

#include "prescient/errors.hpp"

using prescient::lost_session_or_server;
using prescient::refused_for_its_values;

TEST_CASE("a failed statement's SQLSTATE says whose fault it was") {
  struct Row {
    const char* sqlstate;
    bool values;   // one item's values: isolate it
    bool session;  // the session or the server: the whole batch, retry later
  };
  const Row rows[] = {
      {"22021", true, false},   // invalid byte sequence for the encoding
      {"22P05", true, false},   // \u0000 in jsonb
      {"22008", true, false},   // timestamp out of range
      {"23514", true, false},   // a check constraint
      {"23505", true, false},   // a unique violation
      {"54000", true, false},   // an index entry or a jsonb value too big
      {"P0001", true, false},   // RAISE in a trigger on the row
      {"08006", false, true},   // connection failure
      {"57P01", false, true},   // admin shutdown
      {"57014", false, true},   // query cancelled
      {"53100", false, true},   // disk full
      {"58030", false, true},   // I/O error
      {"XX000", false, true},   // internal error
      {"", false, true},        // no SQLSTATE: the connection is gone
      {"40P01", false, false},  // deadlock: neither; the caller decides
      {"42P01", false, false},  // undefined table: a statement's bug, not a value's
      {"25006", false, false},  // read-only transaction
      {"2", false, true},       // not a SQLSTATE: treated as no SQLSTATE
  };
  for (const Row& row : rows) {
    INFO(row.sqlstate);
    CHECK(refused_for_its_values(row.sqlstate) == row.values);
    CHECK(lost_session_or_server(row.sqlstate) == row.session);
  }
}

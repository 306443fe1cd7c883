// The columns every read of a check starts with are named once (db/check_columns.hpp): the claim's list
// (binary) and the listings' (text) are made from the same table the reader's positions come from.
#include <catch2/catch.hpp>

#include "db/check_columns.hpp"

using namespace prescient::db;

TEST_CASE("a check's columns: the claim's list in binary, the listings' as text, in the reader's order") {
  CHECK(check_column_list(true) ==
        "id, job, entity_name, entity_key, job_key, group_key, payload, first_check_at, check_count, attempts");
  CHECK(check_column_list(false) == "id, job, entity_name, entity_key, job_key, group_key, payload::text,"
                                    " prescient.us(first_check_at), check_count, attempts");
  // The reader's positions name the columns they read.
  CHECK(std::string(kCheckColumns[kPayloadColumn].binary) == "payload");
  CHECK(std::string(kCheckColumns[kFirstCheckAtColumn].binary) == "first_check_at");
  CHECK(std::string(kCheckColumns[kAttemptsColumn].binary) == "attempts");
}

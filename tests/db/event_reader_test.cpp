// Reading the outbox in transaction order, whatever the number of digits of the transaction ids.
#include <catch2/catch.hpp>
#include <soci/soci.h>

#include "prescient/events.hpp"
#include "prescient/time_text.hpp"
#include "test_database.hpp"

using namespace prescient;
using prescient::testing::connect_to;
using prescient::testing::create_migrated_database;

TEST_CASE("the outbox is read in transaction order, not in the text order of transaction ids") {
  auto db = connect_to(create_migrated_database(60));
  // Transactions 999 and 1000 (long finished), written out of order: as text, "999" sorts after "1000".
  *db << "INSERT INTO prescient.event (id, type, source, occurred_at, emitted_at, tx) VALUES"
         " ('later', 't', 's', '2026-11-23T10:00:01Z', '2026-11-23T10:00:01Z', '1000'),"
         " ('earlier', 't', 's', '2026-11-23T10:00:00Z', '2026-11-23T10:00:00Z', '999')";
  EventReader reader(*db);
  const auto ids = [&](const EventCursor& from) {
    std::vector<std::string> out;
    for (const EventRow& e : reader.read(from, std::nullopt, 10)) out.push_back(e.id);
    return out;
  };
  CHECK(ids({}) == std::vector<std::string>{"earlier", "later"});
  CHECK(ids(reader.before_last(1)) == std::vector<std::string>{"later"});
  CHECK(ids(reader.before_last(5)) == std::vector<std::string>{"earlier", "later"});
  CHECK(ids(reader.after_id("earlier")) == std::vector<std::string>{"later"});
  CHECK(ids(reader.from_time(parse_time("2026-11-23T10:00:01Z"))) == std::vector<std::string>{"later"});
  CHECK(ids(reader.from_time(parse_time("2026-11-23T11:00:00Z"))).empty());  // after everything there is
}

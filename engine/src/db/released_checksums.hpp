#pragma once
// Internal: migrations 1 to 13 held the functions of their time until those moved to sql/functions/; the
// files were then rewritten without them. A database migrated before that records their checksums as
// released, which stand for the rewritten files (the tables, indexes and data of both are the same). Read
// by the migrator (db/migrator.cpp) and written into the schema bundle (db/schema_bundle.cpp).
#include <map>
#include <string>

namespace prescient::db {

inline const std::map<int, std::string>& checksums_released_before_functions_moved() {
  static const std::map<int, std::string> kReleased{
      {1, "3e74d3674f22cdea"},  {2, "79f59d93f51b7c64"},  {3, "5e3e1cf7380c4e5e"},  {9, "0484009be2055f07"},
      {10, "494a2206301b8b9d"}, {11, "b4af8a45075d8624"}, {12, "cc432556575c0f35"}, {13, "1a2d6760c13f0855"}};
  return kReleased;
}

}  // namespace prescient::db

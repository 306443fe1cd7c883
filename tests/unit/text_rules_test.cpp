#include <catch2/catch.hpp>

#include "prescient/text_rules.hpp"

using prescient::kMaxNameBytes;
using prescient::name_problem;
using prescient::valid_utf8;

TEST_CASE("valid_utf8 accepts UTF-8 and refuses truncated, overlong, surrogate and out-of-range forms") {
  const char* valid[] = {"", "ascii", "caf\xC3\xA9", "\xE6\x97\xA5\xE6\x9C\xAC", "\xF0\x9F\x98\x80", "\xF4\x8F\xBF\xBF"};
  for (const char* text : valid) {
    INFO(text);
    CHECK(valid_utf8(text));
  }
  const char* invalid[] = {"caf\xC3",         "\x80",         "\xC0\xAF",         "\xE0\x80\xAF", "\xED\xA0\x80",
                           "\xF4\x90\x80\x80", "\xF8\x88\x80\x80\x80", "\xC3\x28", "\xFF"};
  for (const char* text : invalid) {
    INFO(text);
    CHECK_FALSE(valid_utf8(text));
  }
}

TEST_CASE("name_problem names the field and what is wrong, never the value") {
  CHECK_FALSE(name_problem("the key", std::string(kMaxNameBytes, 'k')).has_value());
  CHECK(name_problem("the key", std::string(kMaxNameBytes + 1, 'k')) == "the key is 1025 bytes long (at most 1024)");
  CHECK(name_problem("the key", std::string("a\0b", 3)) == "the key contains a NUL byte");
  CHECK(name_problem("the key", "\xFF") == "the key is not valid UTF-8");
}

#include <catch2/catch.hpp>

#include "core/text_rules.hpp"

using prescient::core::kMaxNameBytes;
using prescient::core::name_problem;
using prescient::core::valid_utf8;

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

TEST_CASE("storable_text replaces what cannot be stored, visibly, and cuts long text with a marker") {
  using prescient::core::storable_text;
  const std::string fffd = "\xEF\xBF\xBD";
  struct Row {
    std::string in;
    std::string out;
  };
  const Row rows[] = {
      {"", ""},
      {"plain", "plain"},
      {"caf\xC3\xA9 \xF0\x9F\x98\x80", "caf\xC3\xA9 \xF0\x9F\x98\x80"},  // valid UTF-8 is left alone
      {"upstream said \xFF\xFE", "upstream said " + fffd + fffd},  // one replacement per bad byte
      {std::string("a\0b", 3), "a" + fffd + "b"},                   // NUL cannot be stored in text
      {"caf\xC3", "caf" + fffd},                                     // a truncated sequence
      {"\xC0\xAF", fffd + fffd},                                     // an overlong form
      {"\xED\xA0\x80", fffd + fffd + fffd},                          // a UTF-16 surrogate
  };
  for (const Row& row : rows) {
    INFO(row.in);
    CHECK(storable_text(row.in, 100) == row.out);
    CHECK(valid_utf8(storable_text(row.in, 100)));
  }
}

TEST_CASE("storable_text never exceeds its bound and never splits a character") {
  using prescient::core::storable_text;
  const std::string ten_megabytes(10 * 1024 * 1024, 'x');
  const std::string cut = storable_text(ten_megabytes, prescient::core::kMaxErrorBytes);
  CHECK(cut.size() <= prescient::core::kMaxErrorBytes);
  CHECK(cut.size() > prescient::core::kMaxErrorBytes - 40);
  CHECK(cut.ends_with("\xE2\x80\xA6[cut: 10485760 bytes in all]"));
  // Every cut position through multi-byte characters and bad bytes leaves valid UTF-8 within the bound.
  std::string mixed;
  for (int i = 0; i < 40; ++i) mixed += i % 3 == 0 ? "\xE6\x97\xA5" : i % 3 == 1 ? "\xF0\x9F\x98\x80" : "\xFF";
  for (std::size_t bound = 64; bound < 140; ++bound) {
    INFO(bound);
    const std::string out = storable_text(mixed, bound);
    CHECK(out.size() <= bound);
    CHECK(valid_utf8(out));
    CHECK(out.find('\0') == std::string::npos);
  }
  CHECK(storable_text(std::string(64, 'y'), 64) == std::string(64, 'y'));  // exactly the bound: not cut
}

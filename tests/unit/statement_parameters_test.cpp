// Every statement's parameters are numbered in the order a reader meets them ($1 first, then $2, ...):
// the runner's statements as they are sent (named in db/runner_statements.hpp, numbered by
// NamedStatement), and every other
// statement of engine/src/db/ as its source writes it (adjacent string literals joined).
#include <catch2/catch.hpp>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "db/runner_statements.hpp"

namespace {

// The parameter numbers in the order of their first use.
std::vector<int> first_uses(const std::string& sql) {
  std::vector<int> order;
  for (std::size_t i = 0; i + 1 < sql.size(); ++i) {
    if (sql[i] != '$' || !std::isdigit(static_cast<unsigned char>(sql[i + 1]))) continue;
    const int n = std::stoi(sql.substr(i + 1));
    if (std::find(order.begin(), order.end(), n) == order.end()) order.push_back(n);
  }
  return order;
}

bool in_order_of_use(const std::string& sql) {
  const std::vector<int> order = first_uses(sql);
  for (std::size_t i = 0; i < order.size(); ++i) {
    if (order[i] != static_cast<int>(i) + 1) return false;
  }
  return true;
}

struct Written {
  int line;
  std::string text;
};

// The string literals of a C++ source (ordinary and raw), adjacent ones joined as the compiler joins
// them; comments and character literals skipped.
std::vector<Written> literals_of(const std::string& src) {
  std::vector<Written> out;
  std::size_t i = 0, last_end = std::string::npos;
  int line = 1;
  const auto advance_to = [&](std::size_t to) {
    line += static_cast<int>(std::count(src.begin() + static_cast<long>(i), src.begin() + static_cast<long>(to), '\n'));
    i = to;
  };
  while (i < src.size()) {
    if (src.compare(i, 2, "//") == 0) {
      advance_to(std::min(src.find('\n', i), src.size()));
    } else if (src.compare(i, 2, "/*") == 0) {
      advance_to(std::min(src.find("*/", i) + 2, src.size()));
    } else if (src[i] == '\'') {
      std::size_t j = i + 1;
      while (j < src.size() && src[j] != '\'') j += src[j] == '\\' ? 2 : 1;
      advance_to(j + 1);
    } else if (src[i] == '"' || src.compare(i, 2, "R\"") == 0) {
      const bool raw = src[i] == 'R';
      const std::size_t start = i;
      std::string text;
      std::size_t end;
      if (raw) {
        const std::size_t open = src.find('(', i);
        const std::string close = ")" + src.substr(i + 2, open - i - 2) + "\"";
        const std::size_t closing = src.find(close, open);
        text = src.substr(open + 1, closing - open - 1);
        end = closing + close.size();
      } else {
        std::size_t j = i + 1;
        while (j < src.size() && src[j] != '"') j += src[j] == '\\' ? 2 : 1;
        text = src.substr(i + 1, j - i - 1);
        end = j + 1;
      }
      const bool adjacent = last_end != std::string::npos && !out.empty() &&
                            src.find_first_not_of(" \t\r\n", last_end) == start;
      const int at = line;
      advance_to(end);
      if (adjacent) out.back().text += text;
      else out.push_back({at, text});
      last_end = end;
    } else {
      advance_to(i + 1);
    }
  }
  return out;
}

}  // namespace

TEST_CASE("statement parameters: the order of first use is told, and one out of order is found") {
  CHECK(first_uses("SELECT $2, $1, $2, $10") == std::vector{2, 1, 10});
  CHECK(in_order_of_use("UPDATE t SET a = $1 WHERE id = $2 AND v = $2"));
  CHECK_FALSE(in_order_of_use("UPDATE t SET a = $3 WHERE id = $1 AND v = $2"));
  CHECK_FALSE(in_order_of_use("SELECT $1, $3"));  // a number skipped
  const auto written = literals_of("f(\"SELECT $2\"\n  \" FROM t WHERE a = $1\"); // \"$9\"\ng(R\"sql(\n$1)sql\", 'x');");
  REQUIRE(written.size() == 2);
  CHECK(written[0].line == 1);
  CHECK(written[0].text == "SELECT $2 FROM t WHERE a = $1");
  CHECK(written[1].line == 3);
  CHECK(written[1].text == "\n$1");
}

TEST_CASE("statement parameters: the runner's statements, as sent, number theirs in order of use") {
  using namespace prescient::db::runner_sql;
  for (const auto* statement : {&kClaimDue, &kClaimDueFair, &kClaimDueGroups, &kSettle, &kLease, &kLockLiveLeases,
                                &kReleaseLeases, &kAdmit, &kNextWaiting, &kNextOverdueSlot, &kShiftSlot}) {
    INFO(statement->sql());
    CHECK(in_order_of_use(statement->sql()));
    CHECK_FALSE(first_uses(statement->sql()).empty());
  }
}

TEST_CASE("statement parameters: every statement written in engine/src/db/ numbers its in order of use") {
  const std::filesystem::path db = std::filesystem::path(PRESCIENT_SOURCE_DIR) / "engine/src/db";
  int statements = 0;
  for (const auto& entry : std::filesystem::directory_iterator(db)) {
    if (entry.path().extension() != ".cpp") continue;  // the headers' statements are composed: above
    std::ifstream in(entry.path());
    std::stringstream source;
    source << in.rdbuf();
    for (const Written& w : literals_of(source.str())) {
      if (first_uses(w.text).empty()) continue;
      ++statements;
      INFO(entry.path().filename().string() << ":" << w.line << ": " << w.text);
      CHECK(in_order_of_use(w.text));
    }
  }
  CHECK(statements >= 40);  // the scan found the statements (50 when written), not nothing
}

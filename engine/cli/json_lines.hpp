#pragma once
// Bulk files of JSON lines (`schedule --file`, `cron add --file`): one JSON object per line, blank lines
// skipped, every bad line named on standard error.
#include <nlohmann/json.hpp>

#include <algorithm>
#include <fstream>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace prescient::cli {

struct JsonLinesRead {
  int lines = 0;    // read, blank ones included
  int invalid = 0;  // reported
};

// A line refused, and why.
struct LineProblem {
  int line_number;
  std::string why;
};

// The stream of --file `path` ('-': standard input), opened in `file` when it is a path; InvalidInput naming
// the path and why when it cannot be read.
std::istream& input_of(const std::string& path, std::ifstream& file);

// Prints each as "prescient: line N: why", in line order.
void report_line_problems(std::vector<LineProblem> problems);

// Reads `path` ('-': standard input) and calls `each(line_number, object)` for every line that is not
// blank. A line that is not a JSON object, or that `each` refuses by throwing InvalidInput, is reported
// as "prescient: line N: why" and counted; with `collected`, added to it instead of printed (for a caller that
// judges the lines it keeps later, and reports all in line order). Throws InvalidInput when the file cannot
// be read.
JsonLinesRead read_json_lines(const std::string& path,
                              const std::function<void(int line_number, const nlohmann::json& object)>& each,
                              std::vector<LineProblem>* collected = nullptr);

// What `judge` finds wrong with the item of each line (`lines[i].*item`), asked `batch` lines at a time (a
// statement's worth: one round trip each): judge takes a span of items and returns a problem or nullopt
// for each. The rules are the database's; this only groups the lines for it.
template <class Line, class Item, class Judge>
std::vector<std::optional<std::string>> judge_lines(const std::vector<Line>& lines, Item Line::*item, std::size_t batch,
                                                    Judge judge) {
  std::vector<std::optional<std::string>> problems;
  problems.reserve(lines.size());
  for (std::size_t start = 0; start < lines.size(); start += batch) {
    const std::size_t count = std::min(batch, lines.size() - start);
    std::vector<Item> part;
    part.reserve(count);
    for (std::size_t i = start; i < start + count; ++i) part.push_back(lines[i].*item);
    for (auto& problem : judge(std::span<const Item>(part))) problems.push_back(std::move(problem));
  }
  return problems;
}

// The value of a line's field that must be a string; InvalidInput naming the field otherwise.
std::string string_field(const nlohmann::json& value, const std::string& field);
// The value of a line's field that must be a whole number (as an int); InvalidInput naming the field otherwise.
int int_field(const nlohmann::json& value, const std::string& field);

}  // namespace prescient::cli

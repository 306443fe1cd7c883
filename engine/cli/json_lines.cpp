#include "json_lines.hpp"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <iostream>
#include <limits>

#include "prescient/errors.hpp"

namespace prescient::cli {

std::istream& input_of(const std::string& path, std::ifstream& file) {
  if (path == "-") return std::cin;
  file.open(path);
  if (!file) throw InvalidInput("cannot read --file '" + path + "': " + std::strerror(errno));
  return file;
}

JsonLinesRead read_json_lines(const std::string& path,
                              const std::function<void(int line_number, const nlohmann::json& object)>& each,
                              std::vector<LineProblem>* collected) {
  std::ifstream file;
  std::istream& input = input_of(path, file);
  JsonLinesRead read;
  for (std::string line; std::getline(input, line);) {
    ++read.lines;
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    try {
      nlohmann::json object;
      try {
        object = nlohmann::json::parse(line);
      } catch (const nlohmann::json::parse_error& e) {
        throw InvalidInput(std::string("not JSON (") + e.what() + ")");
      }
      if (!object.is_object()) throw InvalidInput("not a JSON object");
      each(read.lines, object);
    } catch (const InvalidInput& e) {
      ++read.invalid;
      if (collected != nullptr) collected->push_back({read.lines, e.what()});
      else std::cerr << "prescient: line " << read.lines << ": " << e.what() << "\n";
    }
  }
  return read;
}

void report_line_problems(std::vector<LineProblem> problems) {
  std::stable_sort(problems.begin(), problems.end(),
                   [](const LineProblem& a, const LineProblem& b) { return a.line_number < b.line_number; });
  for (const LineProblem& p : problems) std::cerr << "prescient: line " << p.line_number << ": " << p.why << "\n";
}

std::string string_field(const nlohmann::json& value, const std::string& field) {
  if (!value.is_string()) throw InvalidInput("field '" + field + "' must be a string");
  return value.get<std::string>();
}

int int_field(const nlohmann::json& value, const std::string& field) {
  if (!value.is_number_integer() || value.get<long long>() < std::numeric_limits<int>::min() ||
      value.get<long long>() > std::numeric_limits<int>::max()) {
    throw InvalidInput("field '" + field + "' must be a whole number, not " + value.dump().substr(0, 64));
  }
  return value.get<int>();
}

}  // namespace prescient::cli

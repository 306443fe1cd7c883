#include "db/named_statement.hpp"

#include <algorithm>
#include <cctype>
#include <stdexcept>

namespace prescient::db::pq {

namespace {

bool starts_name(char c) { return std::isalpha(static_cast<unsigned char>(c)) != 0 || c == '_'; }
bool continues_name(char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '_'; }

}  // namespace

NamedStatement::NamedStatement(std::string_view text) {
  sql_.reserve(text.size());
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '$' && i + 1 < text.size() && std::isdigit(static_cast<unsigned char>(text[i + 1])) != 0) {
      throw std::logic_error("a named statement has a numbered parameter: " + std::string(text.substr(i, 3)));
    }
    // :name, but not the second colon of a cast (x::bigint) nor the first.
    const bool named = c == ':' && i + 1 < text.size() && starts_name(text[i + 1]) && (i == 0 || text[i - 1] != ':');
    if (!named) {
      sql_ += c;
      continue;
    }
    std::size_t end = i + 1;
    while (end < text.size() && continues_name(text[end])) ++end;
    const std::string name(text.substr(i + 1, end - i - 1));
    auto at = std::find(names_.begin(), names_.end(), name);
    if (at == names_.end()) at = names_.insert(names_.end(), name);
    sql_ += '$' + std::to_string(at - names_.begin() + 1);
    i = end - 1;
  }
}

Binding::Binding(const NamedStatement& statement) : statement_(statement), values_(statement.names().size()) {}

Binding& Binding::set(std::string_view name, Param value) {
  const auto& names = statement_.names();
  const auto at = std::find(names.begin(), names.end(), name);
  if (at == names.end()) throw std::logic_error("the statement has no parameter :" + std::string(name));
  std::optional<Param>& slot = values_[at - names.begin()];
  if (slot) throw std::logic_error("the parameter :" + std::string(name) + " is set twice");
  slot = std::move(value);
  return *this;
}

Params Binding::take() && {
  std::string unset;
  for (std::size_t i = 0; i < values_.size(); ++i) {
    if (!values_[i]) unset += (unset.empty() ? ":" : ", :") + statement_.names()[i];
  }
  if (!unset.empty()) throw std::logic_error("the statement's parameters " + unset + " are not set");
  Params params;
  params.reserve(values_.size());
  for (std::optional<Param>& value : values_) params.push_back(std::move(*value));
  return params;
}

}  // namespace prescient::db::pq

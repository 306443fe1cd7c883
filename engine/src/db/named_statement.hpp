#pragma once
// Internal: a statement whose parameters are named in its text (`:ids`, `:now`) and bound by name, as
// River's generated Params structs bind theirs. The text is numbered once ($1, $2, ... in order of first
// use) when the statement is made; a caller fills a struct whose fields name the parameters, and its
// bind() sets each by name. A parameter left unset, set twice or unknown to the statement throws
// std::logic_error before anything is sent, and the unit tests bind every statement's struct, so a
// mismatch between a statement and its struct fails a test instead of sending values in the wrong order.
#include <string>
#include <string_view>
#include <vector>

#include "db/pq.hpp"

namespace prescient::db::pq {

class NamedStatement {
 public:
  // `text` names each parameter as :name (a letter or _, then letters, digits, _); `::type` casts are
  // left alone. Throws std::logic_error on a numbered parameter ($1): one statement, one way of naming.
  explicit NamedStatement(std::string_view text);
  // The statement as sent: :name replaced by $n.
  const std::string& sql() const { return sql_; }
  // The parameters' names, the first one $1.
  const std::vector<std::string>& names() const { return names_; }

 private:
  std::string sql_;
  std::vector<std::string> names_;
};

// A statement's values, set by name.
class Binding {
 public:
  explicit Binding(const NamedStatement& statement);
  Binding& set(std::string_view name, Param value);
  // The values in the statement's order; throws std::logic_error naming each parameter left unset.
  Params take() &&;

 private:
  const NamedStatement& statement_;
  std::vector<std::optional<Param>> values_;
};

// The values of `statement` from a struct that sets them (void bind(Binding&) const).
template <class Values>
Params bound(const NamedStatement& statement, const Values& values) {
  Binding binding(statement);
  values.bind(binding);
  return std::move(binding).take();
}

// Runs `statement` with the values a struct sets, as exec() and PreparedStatements::exec() do.
template <class Values>
Result exec(PGconn* conn, std::string_view what, const NamedStatement& statement, const Values& values,
            Format results = Format::text) {
  return exec(conn, what, statement.sql(), bound(statement, values), results);
}
template <class Values>
Result exec(PreparedStatements& prepared, PGconn* conn, std::string_view what, const NamedStatement& statement,
            const Values& values, Format results = Format::text) {
  return prepared.exec(conn, what, statement.sql(), bound(statement, values), results);
}

}  // namespace prescient::db::pq

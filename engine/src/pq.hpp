#pragma once
// Internal: thin RAII over libpq for what SOCI cannot do (multi-statement scripts, COPY, LISTEN).
#include <libpq-fe.h>

#include <initializer_list>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

namespace prescient::pq {

using Result = std::unique_ptr<PGresult, decltype(&PQclear)>;

// Runs sql; with no params through PQexec (several statements allowed), else PQexecParams
// (values sent apart from the SQL text, never spliced). Throws DatabaseError with the server's
// message on one line, prefixed by `what`.
Result exec(PGconn* conn, std::string_view what, const std::string& sql,
            std::initializer_list<std::optional<std::string>> params = {});

}  // namespace prescient::pq

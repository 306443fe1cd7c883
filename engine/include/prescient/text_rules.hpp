#pragma once
// What any text prescient stores must be, checked before it reaches the database, so a bad value is
// a clear refusal (exit 2) rather than a server error or a silent change:
// - no NUL byte: libpq passes parameters as C strings, so everything after a NUL would be dropped;
// - valid UTF-8: the database's encoding;
// - names and keys at most kMaxNameBytes: they are B-tree index entries (PostgreSQL refuses entries
//   of more than ~2.7 kB with an error that names neither the field nor the limit).
// Messages name the field and what is wrong, never echo the value (it may be 1 MB of binary).
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

namespace prescient {

inline constexpr std::size_t kMaxNameBytes = 1024;

bool valid_utf8(std::string_view text);

// For a name or key called `what` ("the entity key"); nullopt when it is acceptable.
std::optional<std::string> name_problem(std::string_view what, std::string_view value);

// Every key and string value of a payload: valid UTF-8 without NUL (jsonb cannot store \u0000).
std::optional<std::string> payload_text_problem(const nlohmann::json& payload);

}  // namespace prescient

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

namespace prescient::core {

inline constexpr std::size_t kMaxNameBytes = 1024;
// The longest error text kept with a check (last_error): a job's message, a child's stderr excerpt.
inline constexpr std::size_t kMaxErrorBytes = 4096;

bool valid_utf8(std::string_view text);

// A message (a server's error, an exception's text) flattened to one line, for logs and the CLI's errors:
// line breaks and tabs become "; ", runs of spaces one space.
std::string one_line(std::string_view message);

// Text a job hands back (an error message, an event's type or source), made storable instead of refused:
// every byte that is not part of valid UTF-8, and every NUL, becomes U+FFFD (visibly), and a text longer
// than max_bytes is cut at a character boundary and ends with "…[cut: N bytes in all]". The result is
// never longer than max_bytes. REQUIRES: max_bytes >= 64.
std::string storable_text(std::string_view text, std::size_t max_bytes);

// What keeps a text called `what` from reaching SQL intact: a NUL byte or invalid UTF-8; nullopt otherwise.
// The limits SQL judges itself (a name's length) are not here: a caller that sends the text to a function
// holding the rule lets it refuse (docs/design.md, "Every rule has one home").
std::optional<std::string> text_problem(std::string_view what, std::string_view value);

// For a name or key called `what` ("the entity key"); nullopt when it is acceptable.
std::optional<std::string> name_problem(std::string_view what, std::string_view value);

// Every key and string value of a payload: valid UTF-8 without NUL (jsonb cannot store \u0000).
std::optional<std::string> payload_text_problem(const nlohmann::json& payload);

// A stored payload (jsonb as text) read back to be shown. jsonb holds numbers no double can (1e400, written
// through SQL), which nlohmann cannot parse: such a payload comes back as its text, a JSON string, so one
// row never stops a listing. (The runner fails such a check alone instead: RunnerStore::claim_due.)
nlohmann::json readable_payload(const std::string& stored);

}  // namespace prescient::core

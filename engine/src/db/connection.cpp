#include "db/connection.hpp"

#include "core/text_rules.hpp"
#include "db/pq.hpp"

#include "prescient/database.hpp"

#include <algorithm>
#include <span>

#include <soci/postgresql/soci-postgresql.h>
#include <soci/soci.h>
#include <spdlog/spdlog.h>

#include "prescient/errors.hpp"

namespace prescient {

using namespace prescient::db;
using namespace prescient::core;
namespace {

// Server notices (e.g. "schema already exists, skipping") are not errors: keep them off stderr.
void log_notice(void*, const char* message) { spdlog::debug("postgres: {}", one_line(message)); }

// A connection value in libpq's quoted form: '...' with backslash escapes.
std::string libpq_quoted(std::string_view value) {
  std::string quoted = "'";
  for (const char c : value) {
    if (c == '\\' || c == '\'') quoted += '\\';
    quoted += c;
  }
  return quoted + "'";
}

// One connection value in libpq's quoted form, wrapped so SOCI 4.0 passes it on unchanged: SOCI
// re-splits the connect string on whitespace and strips double quotes, so a value with whitespace
// rides inside "..." and must not contain a double quote itself.
std::string soci_quoted(const char* keyword, std::string_view value) {
  const std::string quoted = libpq_quoted(value);
  if (value.find_first_of(" \t\n\r\f\v") == std::string_view::npos) return quoted;
  if (value.find('"') == std::string_view::npos) return '"' + quoted + '"';
  throw InvalidInput(std::string("the connection option ") + keyword +
                     " holds both whitespace and a double quote, which SOCI cannot pass on; "
                     "set it through the environment (e.g. PGPASSWORD) or ~/.pgpass instead");
}

struct ConnectionDefault {
  const char* keyword;
  const char* value;
};

// What every session prescient opens sets unless its URL says otherwise, so that a dead peer (a server
// gone with its machine, a network partition) is noticed in seconds, not after the kernel's defaults (two
// hours for an idle socket, about a quarter of an hour of retransmissions): an idle socket is probed after
// 5 s and given up after 3 unanswered probes 2 s apart (about 11 s); data left unacknowledged for 6 s ends
// the socket (tcp_user_timeout). libpq ignores them on a Unix socket. (connect_timeout is the URL's to set,
// or PGCONNECT_TIMEOUT's: docs/operations.md, "High availability", says what each bounds.)
constexpr ConnectionDefault kConnectionDefaults[] = {
    {"keepalives", "1"},       {"keepalives_idle", "5"},      {"keepalives_interval", "2"},
    {"keepalives_count", "3"}, {"tcp_user_timeout", "6000"},
};

// The URL's keywords and values as libpq parses them (refused when it cannot), with `password` if given,
// and `defaults` for the keywords the URL leaves unset, each value quoted by `quote`.
template <class Quote>
std::string encoded_connect_string(const std::string& url, const std::string* password, Quote quote,
                                   std::span<const ConnectionDefault> defaults = {}) {
  char* error = nullptr;
  PQconninfoOption* options = PQconninfoParse(url.c_str(), &error);
  if (options == nullptr) {
    // libpq's message names the bad part; the URL itself is not repeated since it may hold a password.
    std::string why = error ? one_line(error) : "out of memory";
    for (std::size_t at; !url.empty() && (at = why.find(url)) != std::string::npos;) why.replace(at, url.size(), "<url>");
    PQfreemem(error);
    throw InvalidInput("invalid database URL: " + why);
  }
  std::string out;
  try {
    for (const PQconninfoOption* o = options; o->keyword != nullptr; ++o) {
      if (o->val == nullptr || *o->val == '\0') {
        const auto preset =
            std::ranges::find_if(defaults, [&](const auto& d) { return std::string_view(d.keyword) == o->keyword; });
        if (preset == defaults.end()) continue;
        out += std::string(out.empty() ? "" : " ") + preset->keyword + "=" + quote(preset->keyword, preset->value);
        continue;
      }
      if (password != nullptr && std::string_view(o->keyword) == "password") {
        throw InvalidInput("the database URL holds a password, and a password file is given too: keep it in one place");
      }
      if (!out.empty()) out += ' ';
      out += std::string(o->keyword) + "=" + quote(o->keyword, o->val);
    }
    if (password != nullptr) out += std::string(out.empty() ? "" : " ") + "password=" + quote("password", *password);
  } catch (...) {
    PQconninfoFree(options);
    throw;
  }
  PQconninfoFree(options);
  return out;
}

}  // namespace

std::string with_password(const std::string& url, const std::string& password) {
  return encoded_connect_string(url, &password, [](const char*, std::string_view value) { return libpq_quoted(value); });
}

bool has_password(const std::string& url) {
  PQconninfoOption* options = PQconninfoParse(url.c_str(), nullptr);
  if (options == nullptr) return false;
  bool found = false;
  for (PQconninfoOption* o = options; o->keyword != nullptr; ++o) {
    if (std::string_view(o->keyword) == "password" && o->val != nullptr && *o->val != '\0') found = true;
  }
  PQconninfoFree(options);
  return found;
}

std::unique_ptr<soci::session> connect(const std::string& url) {
  std::unique_ptr<soci::session> db;
  try {
    db = std::make_unique<soci::session>(soci::postgresql, soci_connect_string(url));
  } catch (const soci::soci_error& e) {
    // SOCI puts a sentence of its own before libpq's message, which says it better.
    constexpr std::string_view kSociPrefix = "Cannot establish connection to the database.";
    std::string_view message = e.what();
    if (message.starts_with(kSociPrefix)) message.remove_prefix(kSociPrefix.size());
    throw DatabaseError("cannot connect to PostgreSQL: " + one_line(message));
  }
  PQsetNoticeProcessor(native_connection(*db), &log_notice, nullptr);
  return db;
}

bool through_pooler(soci::session& db) {
  PGconn* conn = native_connection(db);
  return pq::exec(conn, "cannot read the server process id", "SELECT pg_backend_pid()").integer(0, 0) !=
         PQbackendPID(conn);
}

}  // namespace prescient

namespace prescient::db {

std::string soci_connect_string(const std::string& url) {
  return encoded_connect_string(url, nullptr, soci_quoted, kConnectionDefaults);
}

PGconn* native_connection(soci::session& db) {
  return static_cast<soci::postgresql_session_backend*>(db.get_backend())->conn_;
}

}  // namespace prescient::db

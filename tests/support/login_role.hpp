#pragma once
// Login roles for the tests of the least-privilege roles: a login holding one prescient role, and the URL
// that connects as it.
#include <libpq-fe.h>

#include <catch2/catch.hpp>
#include <soci/soci.h>

#include <string>

namespace prescient::testing {

// `url` with another user: key=value form, rebuilt from libpq's own parse of the URL.
inline std::string as_user(const std::string& url, const std::string& user) {
  char* error = nullptr;
  PQconninfoOption* options = PQconninfoParse(url.c_str(), &error);
  REQUIRE(options != nullptr);
  std::string out = "user=" + user;
  for (PQconninfoOption* o = options; o->keyword != nullptr; ++o) {
    if (o->val != nullptr && std::string(o->keyword) != "user") out += " " + std::string(o->keyword) + "=" + o->val;
  }
  PQconninfoFree(options);
  return out;
}

// A login role holding one prescient role, dropped again at the end of the scope.
struct Login {
  soci::session& owner;
  std::string name;
  Login(soci::session& owner_session, std::string login, const std::string& role)
      : owner(owner_session), name(std::move(login)) {
    owner << "DROP ROLE IF EXISTS " + name;
    owner << "CREATE ROLE " + name + " LOGIN IN ROLE " + role;
  }
  ~Login() {
    try {
      owner << "DROP ROLE IF EXISTS " + name;
    } catch (...) {
    }
  }
  Login(const Login&) = delete;
  Login& operator=(const Login&) = delete;
};

// Whether the statement is refused for want of a privilege.
inline bool denied(soci::session& db, const std::string& sql) {
  try {
    db << sql;
  } catch (const std::exception& e) {
    return std::string(e.what()).find("permission denied") != std::string::npos ||
           std::string(e.what()).find("must be owner") != std::string::npos;
  }
  return false;
}

}  // namespace prescient::testing

#pragma once
// Who may use the dashboard when it listens beyond loopback: the credentials of an --auth-file, checked
// against HTTP Basic authentication (a browser asks for them; curl -u NAME:SECRET sends them).
//
// The file holds one credential a line, NAME:SALT:SHA256 (hex of SHA-256 over SALT followed by the
// secret), as `prescient web --hash-secret NAME` prints it from a secret read on stdin; never the secret.
// Blank lines and lines starting with # are ignored.
#include <optional>
#include <string>
#include <vector>

namespace prescient::web {

class Credentials {
 public:
  // Throws InvalidInput naming the file and the line (not its content) when a line is not NAME:SALT:SHA256,
  // or the file cannot be read or holds no credential.
  static Credentials load(const std::string& path);

  // The name of the credential an Authorization header carries, when it is valid. Compares in constant
  // time.
  std::optional<std::string> authenticate(const std::string& authorization_header) const;

 private:
  struct Entry {
    std::string name, salt, sha256_hex;
  };
  std::vector<Entry> entries_;
};

// NAME:SALT:SHA256 for a secret, with a random salt: a line of an auth file. Throws InvalidInput for a name
// that is empty or holds ':' or a blank, or an empty secret.
std::string credential_line(const std::string& name, const std::string& secret);

// RFC 4648 base64 (with padding), as HTTP Basic authentication and the DevTools protocol send bytes;
// nullopt for anything else.
std::optional<std::string> base64_decode(const std::string& text);

// 32 random bytes as hex, from OpenSSL's generator: salts and anti-CSRF tokens.
std::string random_token();

}  // namespace prescient::web

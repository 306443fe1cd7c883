#include "web_auth.hpp"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/rand.h>

#include <array>
#include <fstream>
#include <stdexcept>

#include "prescient/errors.hpp"

namespace prescient::web {
namespace {

std::string hex(const unsigned char* bytes, std::size_t n) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out;
  for (std::size_t i = 0; i < n; ++i) {
    out += kDigits[bytes[i] >> 4];
    out += kDigits[bytes[i] & 0xf];
  }
  return out;
}

std::string sha256_hex(const std::string& text) {
  std::array<unsigned char, EVP_MAX_MD_SIZE> digest{};
  unsigned int size = 0;
  if (EVP_Digest(text.data(), text.size(), digest.data(), &size, EVP_sha256(), nullptr) != 1) {
    throw std::runtime_error("cannot compute SHA-256 (OpenSSL)");
  }
  return hex(digest.data(), size);
}

bool is_hex(const std::string& text, std::size_t size) {
  return text.size() == size && text.find_first_not_of("0123456789abcdef") == std::string::npos;
}

void require_name(const std::string& name, const std::string& where) {
  if (name.empty() || name.find_first_of(": \t") != std::string::npos) {
    throw InvalidInput(where + ": a credential's name must be non-empty, without ':' or blanks");
  }
}

}  // namespace

Credentials Credentials::load(const std::string& path) {
  std::ifstream file(path);
  if (!file) throw InvalidInput("cannot read --auth-file '" + path + "'");
  Credentials credentials;
  std::string line;
  for (int number = 1; std::getline(file, line); ++number) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty() || line.front() == '#') continue;
    const std::string where = "--auth-file '" + path + "' line " + std::to_string(number);
    const auto first = line.find(':'), second = line.find(':', first == std::string::npos ? 0 : first + 1);
    if (first == std::string::npos || second == std::string::npos) {
      throw InvalidInput(where + ": expected NAME:SALT:SHA256 (prescient web --hash-secret NAME prints one)");
    }
    Entry entry{line.substr(0, first), line.substr(first + 1, second - first - 1), line.substr(second + 1)};
    require_name(entry.name, where);
    if (!is_hex(entry.salt, 64) || !is_hex(entry.sha256_hex, 64)) {
      throw InvalidInput(where + ": the salt and the hash must be 64 lowercase hex digits each");
    }
    credentials.entries_.push_back(std::move(entry));
  }
  if (credentials.entries_.empty()) throw InvalidInput("--auth-file '" + path + "' holds no credential");
  return credentials;
}

std::optional<std::string> Credentials::authenticate(const std::string& authorization_header) const {
  static const std::string kScheme = "Basic ";
  if (authorization_header.rfind(kScheme, 0) != 0) return std::nullopt;
  const auto decoded = base64_decode(authorization_header.substr(kScheme.size()));
  if (!decoded) return std::nullopt;
  const auto colon = decoded->find(':');
  if (colon == std::string::npos) return std::nullopt;
  const std::string name = decoded->substr(0, colon), secret = decoded->substr(colon + 1);
  for (const Entry& entry : entries_) {
    if (entry.name != name) continue;
    const std::string hash = sha256_hex(entry.salt + secret);
    if (CRYPTO_memcmp(hash.data(), entry.sha256_hex.data(), hash.size()) == 0) return name;
  }
  return std::nullopt;
}

std::string credential_line(const std::string& name, const std::string& secret) {
  require_name(name, "--hash-secret");
  if (secret.empty()) throw InvalidInput("--hash-secret: the secret read from stdin is empty");
  const std::string salt = random_token();
  return name + ":" + salt + ":" + sha256_hex(salt + secret);
}

std::optional<std::string> base64_decode(const std::string& text) {
  static const std::string kAlphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  if (text.empty() || text.size() % 4 != 0) return std::nullopt;
  std::string out;
  unsigned value = 0;
  int bits = 0;
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '=') {
      if (i + 2 < text.size() || (i + 1 < text.size() && text[i + 1] != '=')) return std::nullopt;
      break;
    }
    const auto digit = kAlphabet.find(text[i]);
    if (digit == std::string::npos) return std::nullopt;
    value = (value << 6) | static_cast<unsigned>(digit);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out += static_cast<char>((value >> bits) & 0xff);
    }
  }
  return out;
}

std::string random_token() {
  std::array<unsigned char, 32> bytes{};
  if (RAND_bytes(bytes.data(), static_cast<int>(bytes.size())) != 1) {
    throw std::runtime_error("cannot draw random bytes (OpenSSL)");
  }
  return hex(bytes.data(), bytes.size());
}

}  // namespace prescient::web

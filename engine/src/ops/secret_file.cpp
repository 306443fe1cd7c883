#include "ops/secret_file.hpp"

#include <sys/stat.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>

#include "prescient/errors.hpp"

namespace prescient::ops {
namespace {

constexpr std::size_t kMaxSecretBytes = 4096;

}  // namespace

std::string read_secret_file(const std::string& path) {
  struct stat status {};
  if (::stat(path.c_str(), &status) != 0) {
    throw InvalidInput("'" + path + "' is not a readable file: " + std::strerror(errno));
  }
  if (!S_ISREG(status.st_mode)) throw InvalidInput("'" + path + "' is not a regular file");
  if ((status.st_mode & S_IROTH) != 0) {
    char mode[8];
    std::snprintf(mode, sizeof mode, "%04o", static_cast<unsigned>(status.st_mode & 07777));
    throw InvalidInput("'" + path + "' holds a secret but may be read by every user (mode " + mode + "): chmod o-r '" +
                       path + "'");
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InvalidInput("'" + path + "' cannot be read: " + std::strerror(errno));
  std::string secret(kMaxSecretBytes + 2, '\0');
  in.read(secret.data(), static_cast<std::streamsize>(secret.size()));
  secret.resize(static_cast<std::size_t>(in.gcount()));
  if (!secret.empty() && secret.back() == '\n') secret.pop_back();
  if (!secret.empty() && secret.back() == '\r') secret.pop_back();
  if (secret.size() > kMaxSecretBytes) throw InvalidInput("the secret in '" + path + "' is longer than 4096 bytes");
  if (secret.empty()) throw InvalidInput("'" + path + "' is empty");
  return secret;
}

}  // namespace prescient::ops

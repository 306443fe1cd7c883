#include "http_targets.hpp"

#include <nlohmann/json.hpp>

#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "prescient/duration.hpp"
#include "ops/secret_file.hpp"
#include "prescient/errors.hpp"

namespace prescient::jobs {

using namespace prescient::ops;
namespace {

constexpr std::size_t kMaxFileBytes = 1 << 20;
constexpr std::size_t kMaxSecretBytes = 4096;
constexpr int kMaxConcurrent = 1000;
constexpr std::chrono::seconds kMaxTimeout{600};

std::string read_small_file(const std::string& path, const std::string& what) {
  std::error_code error;
  if (!std::filesystem::is_regular_file(path, error)) throw InvalidInput(what + " '" + path + "' is not a readable file");
  if (std::filesystem::file_size(path, error) > kMaxFileBytes) {
    throw InvalidInput(what + " '" + path + "' is larger than 1 MiB");
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InvalidInput(what + " '" + path + "' cannot be read");
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

bool has_control_or_space(const std::string& text) {
  for (const unsigned char c : text) {
    if (c <= 0x20 || c == 0x7f) return true;
  }
  return false;
}

// scheme://host[:port][/path]: http or https, a host, no credentials, query or fragment.
std::string checked_base_url(std::string url, const std::string& where) {
  const auto refuse = [&](const std::string& why) -> std::string {
    throw InvalidInput(where + ": invalid url '" + url + "': " + why);
  };
  const auto scheme_end = url.find("://");
  if (scheme_end == std::string::npos) return refuse("use http://host/... or https://host/...");
  const std::string scheme = url.substr(0, scheme_end);
  if (scheme != "http" && scheme != "https") return refuse("the scheme must be http or https");
  if (has_control_or_space(url)) return refuse("it contains a space or a control character");
  if (url.find_first_of("?#") != std::string::npos) return refuse("a base URL has no query or fragment");
  if (url.find('\\') != std::string::npos) return refuse("it contains a backslash");
  const std::size_t host_start = scheme_end + 3;
  const std::size_t host_end = std::min(url.find('/', host_start), url.size());
  const std::string authority = url.substr(host_start, host_end - host_start);
  if (authority.empty()) return refuse("it names no host");
  if (authority.find('@') != std::string::npos) return refuse("credentials do not go in the URL (the secret signs)");
  while (url.size() > host_end && url.back() == '/') url.pop_back();
  return url;
}

std::string secret_of(const nlohmann::json& spec, const std::string& where) {
  const bool from_file = spec.contains("secret_file"), from_env = spec.contains("secret_env");
  if (from_file == from_env) throw InvalidInput(where + ": give exactly one of secret_file and secret_env");
  std::string secret;
  if (from_file) {
    if (!spec["secret_file"].is_string()) throw InvalidInput(where + ": secret_file must be a string");
    try {
      return read_secret_file(spec["secret_file"].get<std::string>());
    } catch (const InvalidInput& e) {
      throw InvalidInput(where + ": secret_file " + e.what());
    }
  } else {
    if (!spec["secret_env"].is_string()) throw InvalidInput(where + ": secret_env must be a string");
    const std::string name = spec["secret_env"].get<std::string>();
    const char* value = std::getenv(name.c_str());
    if (value == nullptr) throw InvalidInput(where + ": the environment variable " + name + " is not set");
    secret = value;
  }
  if (secret.empty()) throw InvalidInput(where + ": the secret is empty");
  if (secret.size() > kMaxSecretBytes) throw InvalidInput(where + ": the secret is longer than 4096 bytes");
  return secret;
}

HttpTarget target_of(const std::string& name, const nlohmann::json& spec, const std::string& origin) {
  const std::string where = origin + ": target '" + name + "'";
  if (name.empty() || has_control_or_space(name)) throw InvalidInput(origin + ": invalid target name '" + name + "'");
  if (!spec.is_object()) throw InvalidInput(where + " must be a JSON object");
  static const std::set<std::string> known{"url", "secret_file", "secret_env", "timeout", "max_concurrent", "ca_file"};
  for (const auto& [key, value] : spec.items()) {
    if (!known.contains(key)) throw InvalidInput(where + ": unknown key '" + key + "'");
  }
  HttpTarget target;
  target.name = name;
  if (!spec.contains("url") || !spec["url"].is_string()) throw InvalidInput(where + ": url (a string) is missing");
  target.base_url = checked_base_url(spec["url"].get<std::string>(), where);
  target.secret = secret_of(spec, where);
  if (spec.contains("timeout")) {
    if (!spec["timeout"].is_string()) throw InvalidInput(where + ": timeout must be a duration such as \"10s\"");
    const std::string text = spec["timeout"].get<std::string>();
    try {
      target.timeout = parse_duration(text);
    } catch (const InvalidInput& e) {
      throw InvalidInput(where + ": " + e.what());
    }
    if (target.timeout < std::chrono::seconds{1} || target.timeout > kMaxTimeout) {
      throw InvalidInput(where + ": invalid timeout " + text + ": use 1s to 10m");
    }
  }
  if (spec.contains("max_concurrent")) {
    const auto& value = spec["max_concurrent"];
    if (!value.is_number_integer() || value.get<std::int64_t>() < 1 || value.get<std::int64_t>() > kMaxConcurrent) {
      throw InvalidInput(where + ": invalid max_concurrent " + value.dump() + ": use 1 to 1000");
    }
    target.max_concurrent = value.get<int>();
  }
  if (spec.contains("ca_file")) {
    if (!spec["ca_file"].is_string()) throw InvalidInput(where + ": ca_file must be a string");
    target.ca_file = spec["ca_file"].get<std::string>();
    read_small_file(*target.ca_file, where + ": ca_file");
  }
  return target;
}

bool is_path_byte(unsigned char c) {
  // RFC 3986 pchar, "/" and "?" (a query is the receiver's business); "%" is checked with what follows.
  static const std::string allowed = "-._~!$&'()*+,;=:@/?%";
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
         allowed.find(static_cast<char>(c)) != std::string::npos;
}

}  // namespace

HttpTargets parse_http_targets(const std::string& text, const std::string& origin) {
  nlohmann::json doc;
  try {
    doc = nlohmann::json::parse(text);
  } catch (const nlohmann::json::parse_error& e) {
    throw InvalidInput(origin + " is not JSON: " + e.what());
  }
  if (!doc.is_object() || !doc.contains("targets") || !doc["targets"].is_object()) {
    throw InvalidInput(origin + ": expected {\"targets\": {\"NAME\": {...}}}");
  }
  for (const auto& [key, value] : doc.items()) {
    if (key != "targets") throw InvalidInput(origin + ": unknown key '" + key + "'");
  }
  if (doc["targets"].empty()) throw InvalidInput(origin + ": no targets");
  HttpTargets targets;
  for (const auto& [name, spec] : doc["targets"].items()) targets.emplace(name, target_of(name, spec, origin));
  return targets;
}

HttpTargets read_http_targets(const std::string& path) {
  return parse_http_targets(read_small_file(path, "--http-targets"), "--http-targets '" + path + "'");
}

std::string url_below(const HttpTarget& target, const std::string& path) {
  const auto refuse = [&](const std::string& why) -> std::string {
    throw InvalidInput("the path '" + path + "' " + why);
  };
  if (path.empty() || path.front() != '/') return refuse("must start with '/' (it is below the target's URL)");
  if (path.size() > 2048) return refuse("is longer than 2048 bytes");
  const std::string route = path.substr(0, path.find('?'));
  if (route.find("//") != std::string::npos) return refuse("contains '//'");
  for (std::size_t i = 0; i < path.size(); ++i) {
    const auto c = static_cast<unsigned char>(path[i]);
    if (!is_path_byte(c)) return refuse("contains a byte a URL path may not hold (" + std::to_string(c) + ")");
    if (c == '%') {
      const std::string code = path.substr(i + 1, 2);
      if (code.size() != 2 || !std::isxdigit(static_cast<unsigned char>(code[0])) ||
          !std::isxdigit(static_cast<unsigned char>(code[1]))) {
        return refuse("has a '%' without two hex digits");
      }
      const int value = std::stoi(code, nullptr, 16);
      if (i < route.size() && (value == '.' || value == '/' || value == '\\' || value < 0x20 || value == 0x7f)) {
        return refuse("encodes a '.', '/', '\\' or control byte");
      }
    }
  }
  std::size_t start = 1;
  while (start <= route.size()) {
    const std::size_t end = std::min(route.find('/', start), route.size());
    const std::string segment = route.substr(start, end - start);
    if (segment == "." || segment == "..") return refuse("contains a '" + segment + "' segment");
    start = end + 1;
  }
  return target.base_url + path;
}

}  // namespace prescient::jobs

#pragma once
// The http class's targets: named endpoints the operator configures (--http-targets FILE), so that a
// check's payload can only name one and a path below it, never a host of its own. The file is JSON:
//   {"targets": {"shop": {"url": "https://shop.internal/prescient", "secret_file": "/etc/prescient/shop",
//                         "timeout": "10s", "max_concurrent": 16, "ca_file": "/etc/ssl/shop-ca.pem"}}}
// A target's secret comes from "secret_file" (its content, one trailing newline dropped) or "secret_env"
// (an environment variable's value), exactly one of them; never from the file itself.
#include <chrono>
#include <map>
#include <optional>
#include <string>

namespace prescient::jobs {

struct HttpTarget {
  std::string name;
  std::string base_url;  // scheme://host[:port][/path], without a trailing slash
  std::string secret;
  std::chrono::seconds timeout{10};
  int max_concurrent = 8;
  std::optional<std::string> ca_file;
};

using HttpTargets = std::map<std::string, HttpTarget>;

// Reads and checks the targets file. Throws InvalidInput naming the file, the target and the bad value.
HttpTargets read_http_targets(const std::string& path);
// The same from the file's text (`origin` names it in errors); secrets are read as the file says.
HttpTargets parse_http_targets(const std::string& text, const std::string& origin);

// The URL a check's path names below its target: the base URL followed by the path. Nullopt-free: throws
// InvalidInput when the path could leave the base (a dot segment, "//", a backslash, a scheme or host, an
// encoded dot, slash or backslash, a control byte) or is not a path at all. Query strings are kept.
std::string url_below(const HttpTarget& target, const std::string& path);

}  // namespace prescient::jobs

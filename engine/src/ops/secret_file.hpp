#pragma once
// A secret kept in a file (the database password, an http target's signing secret): the file is named in
// the configuration, so the secret never appears on a command line or in a file every user may read.
#include <string>

namespace prescient::ops {

// The content of the file at `path`, one trailing line end dropped. Throws InvalidInput, naming the file, when
// it cannot be read, is empty, is longer than 4 KiB, or may be read by every user (mode o+r): a secret
// there is no secret.
std::string read_secret_file(const std::string& path);

}  // namespace prescient::ops

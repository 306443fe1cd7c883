#include "hostile.hpp"

#include <stdlib.h>
#include <sys/stat.h>

#include <fstream>
#include <stdexcept>

namespace prescient::testing {

std::string make_hostile_commands_dir() {
  char templ[] = "/tmp/prescient-hostile-XXXXXX";
  if (::mkdtemp(templ) == nullptr) throw std::runtime_error("mkdtemp failed");
  const std::string dir = templ;
  const auto script = [&](const std::string& name, const std::string& body) {
    const std::string path = dir + "/" + name;
    std::ofstream(path) << "#!/bin/sh\n" << body << "\n";
    ::chmod(path.c_str(), 0755);
  };
  script("crash", "kill -SEGV $$");
  script("bad_stderr", "printf 'broken \\377\\376\\n' >&2; exit 3");
  script("bad_stdout", "printf '\\377\\376\\n'");
  // Closes its output and keeps running: the runner must not wait for it past its timeout.
  script("detach", "exec >/dev/null 2>&1; sleep 30");
  return dir;
}

}  // namespace prescient::testing

#pragma once
// SIGHUP for the long-running commands (daemon, web): the options read again from their sources, the log
// level applied at once, every other change named in a warning (it takes a restart).
#include "command.hpp"

namespace prescient::cli {

// Reads `running`'s options again. A configuration that no longer reads is logged and changes nothing.
void reload_options(const Invocation& running);

}  // namespace prescient::cli

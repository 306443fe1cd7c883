#pragma once
// The job classes compiled into prescient.
#include <memory>
#include <optional>
#include <string>

#include "http_targets.hpp"

namespace prescient {
class Registry;
}

namespace prescient::jobs {

struct BuiltinOptions {
  std::optional<std::string> commands_dir;  // the command class's allow-list; none: it refuses every check
  std::shared_ptr<const HttpTargets> http_targets;  // the http class's targets; none: it refuses every check
};

void register_builtin_jobs(Registry& registry, const BuiltinOptions& options = {});
}  // namespace prescient::jobs

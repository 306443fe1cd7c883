#pragma once
// The job classes compiled into prescient.
#include <optional>
#include <string>

namespace prescient {
class Registry;

struct BuiltinOptions {
  std::optional<std::string> commands_dir;  // the command class's allow-list; none: it refuses every check
};

void register_builtin_jobs(Registry& registry, const BuiltinOptions& options = {});
}  // namespace prescient

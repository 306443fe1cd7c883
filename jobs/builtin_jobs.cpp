#include "builtin_jobs.hpp"

#include "emit.hpp"
#include "noop.hpp"
#include "prescient/registry.hpp"

namespace prescient {

void register_builtin_jobs(Registry& registry) {
  registry.add("noop", [] { return std::make_unique<NoopJob>(); });
  registry.add("emit", [] { return std::make_unique<EmitJob>(); });
}

}  // namespace prescient

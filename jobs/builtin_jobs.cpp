#include "builtin_jobs.hpp"

#include "noop.hpp"
#include "prescient/registry.hpp"

namespace prescient {

void register_builtin_jobs(Registry& registry) {
  registry.add("noop", [] { return std::make_unique<NoopJob>(); });
}

}  // namespace prescient

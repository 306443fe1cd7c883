#pragma once
// The job classes compiled into prescient.
namespace prescient {
class Registry;

void register_builtin_jobs(Registry& registry);
}  // namespace prescient

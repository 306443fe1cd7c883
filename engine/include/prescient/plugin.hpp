#pragma once
// Writing a plugin: a shared library in the --plugins directory that defines
//
//   #include <prescient/plugin.hpp>
//   PRESCIENT_PLUGIN_ABI_EXPORT
//   extern "C" int prescient_register(prescient::Registry& registry) {
//     registry.add("my_class", [] { return std::make_unique<MyJob>(); });
//     return 0;  // non-zero: the plugin refuses to load
//   }
//
// It must be built against the same prescient headers (and compiler and C++ library) as the runner:
// classes cross the boundary as C++ objects. The ABI number changes whenever Check, JobResult,
// JobPolicy, JobContext, JobExec or Registry change shape; a plugin with another number is refused.
#include "prescient/registry.hpp"

#define PRESCIENT_PLUGIN_ABI 7

#define PRESCIENT_PLUGIN_ABI_EXPORT \
  extern "C" int prescient_plugin_abi() { return PRESCIENT_PLUGIN_ABI; }

namespace prescient {

// Loads every *.so in `directory` (in name order) into the registry. Throws InvalidInput naming the
// file for a library that cannot be loaded, lacks a symbol, has another ABI, refuses to register,
// or registers a class name that is already taken.
void load_plugins(const std::string& directory, Registry& registry);

}  // namespace prescient

#include <dlfcn.h>

#include <algorithm>
#include <filesystem>
#include <vector>

#include "prescient/errors.hpp"
#include "prescient/plugin.hpp"

namespace prescient {

void load_plugins(const std::string& directory, Registry& registry) {
  std::error_code error;
  if (!std::filesystem::is_directory(directory, error)) {
    throw InvalidInput("plugin directory '" + directory + "' is not a readable directory");
  }
  std::vector<std::filesystem::path> files;
  for (const auto& entry : std::filesystem::directory_iterator(directory)) {
    if (entry.is_regular_file() && entry.path().extension() == ".so") files.push_back(entry.path());
  }
  std::sort(files.begin(), files.end());
  for (const auto& file : files) {
    const std::string path = file.string();
    // Never closed: the classes it registers live as long as the process.
    void* handle = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (handle == nullptr) throw InvalidInput("cannot load plugin " + path + ": " + ::dlerror());
    using AbiFn = int (*)();
    using RegisterFn = int (*)(Registry&);
    const auto abi = reinterpret_cast<AbiFn>(::dlsym(handle, "prescient_plugin_abi"));
    if (abi == nullptr) {
      throw InvalidInput("plugin " + path + " lacks prescient_plugin_abi (use PRESCIENT_PLUGIN_ABI_EXPORT)");
    }
    if (abi() != PRESCIENT_PLUGIN_ABI) {
      throw InvalidInput("plugin " + path + " was built for plugin ABI " + std::to_string(abi()) +
                         ", this prescient has ABI " + std::to_string(PRESCIENT_PLUGIN_ABI) + ": rebuild it");
    }
    const auto register_fn = reinterpret_cast<RegisterFn>(::dlsym(handle, "prescient_register"));
    if (register_fn == nullptr) throw InvalidInput("plugin " + path + " lacks extern \"C\" prescient_register");
    // Classes are added through a scratch registry first so that a refusing plugin adds nothing.
    Registry staged;
    if (const int rc = register_fn(staged); rc != 0) {
      throw InvalidInput("plugin " + path + " refused to register (returned " + std::to_string(rc) + ")");
    }
    for (const std::string& name : staged.names()) registry.add(name, staged.factory_of(name), path);
  }
}

}  // namespace prescient

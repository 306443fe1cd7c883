#pragma once
// Job class name -> factory. Built-in classes and plugins register here; enqueuers consult it so a
// typo is refused at schedule time, not three days later when the check fires.
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "prescient/job.hpp"

namespace prescient {

class Registry {
 public:
  using Factory = std::function<std::unique_ptr<JobExec>()>;

  // Throws InvalidInput for a name that is not [a-z][a-z0-9_.-]* (at most 64 characters) or is
  // already registered (naming `origin`, e.g. the plugin file, in the message).
  void add(const std::string& name, Factory factory, const std::string& origin = "built-in");

  bool contains(std::string_view name) const { return classes_.find(name) != classes_.end(); }
  // Throws InvalidInput with unknown_class_message(name) when `name` is not registered.
  void require(std::string_view name) const;
  // "unknown job class 'x' (known: a, b)".
  std::string unknown_class_message(std::string_view name) const;
  // REQUIRES: contains(name).
  std::unique_ptr<JobExec> create(std::string_view name) const;
  std::vector<std::string> names() const;
  std::string origin_of(std::string_view name) const;
  // REQUIRES: contains(name).
  const Factory& factory_of(std::string_view name) const { return classes_.find(name)->second.factory; }

 private:
  struct Entry {
    Factory factory;
    std::string origin;
  };
  std::map<std::string, Entry, std::less<>> classes_;
};

}  // namespace prescient

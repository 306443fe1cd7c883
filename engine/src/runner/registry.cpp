#include "prescient/registry.hpp"

#include "prescient/errors.hpp"

namespace prescient {
namespace {

bool valid_class_name(std::string_view name) {
  if (name.empty() || name.size() > 64 || name.front() < 'a' || name.front() > 'z') return false;
  for (const char c : name) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '.' || c == '-';
    if (!ok) return false;
  }
  return true;
}

}  // namespace

void Registry::add(const std::string& name, Factory factory, const std::string& origin) {
  if (!valid_class_name(name)) {
    throw InvalidInput("invalid job class name '" + name + "' from " + origin +
                       ": use lower-case letters, digits, '_', '.', '-' (at most 64, starting with a letter)");
  }
  const auto [it, inserted] = classes_.try_emplace(name, Entry{std::move(factory), origin});
  if (!inserted) {
    throw InvalidInput("job class '" + name + "' from " + origin + " is already registered by " + it->second.origin);
  }
}

void Registry::require(std::string_view name) const {
  if (!contains(name)) throw InvalidInput(unknown_class_message(name));
}

std::string Registry::unknown_class_message(std::string_view name) const {
  std::string known;
  for (const auto& [n, entry] : classes_) known += (known.empty() ? "" : ", ") + n;
  return "unknown job class '" + std::string(name) + "' (known: " + (known.empty() ? "none" : known) + ")";
}

std::unique_ptr<JobExec> Registry::create(std::string_view name) const {
  return classes_.find(name)->second.factory();
}

std::vector<std::string> Registry::names() const {
  std::vector<std::string> out;
  for (const auto& [name, entry] : classes_) out.push_back(name);
  return out;
}

std::string Registry::origin_of(std::string_view name) const {
  const auto it = classes_.find(name);
  return it == classes_.end() ? "" : it->second.origin;
}

}  // namespace prescient

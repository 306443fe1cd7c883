#include "option_sources.hpp"

#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <cstring>

#include "config_file.hpp"
#include "core/text_rules.hpp"
#include "prescient/database.hpp"

namespace prescient::cli {

using namespace prescient::core;
namespace {

// The variables of options that are not global (those are in global_options()).
constexpr std::pair<std::string_view, const char*> kCommandOptionVariables[] = {
    {"json", "PRESCIENT_JSON"},
    {"read-db", "PRESCIENT_READ_DATABASE_URL"},
    {"listen-db", "PRESCIENT_LISTEN_DATABASE_URL"},
    {"plugins", "PRESCIENT_PLUGIN_PATH"},
    {"http-targets", "PRESCIENT_HTTP_TARGETS"},
    {"prepared-statements", "PRESCIENT_PREPARED_STATEMENTS"},
};

// The variable's value when set and not empty, else nothing.
std::optional<std::string> environment_value(const char* variable) {
  const char* value = std::getenv(variable);
  return value != nullptr && *value != '\0' ? std::optional<std::string>(value) : std::nullopt;
}

bool is_switch(const po::option_description& option) { return option.semantic()->max_tokens() == 0; }

std::optional<bool> switch_value(const std::string& text) {
  if (text == "1" || text == "true" || text == "yes") return true;
  if (text == "0" || text == "false" || text == "no") return false;
  return std::nullopt;
}

// Flag words given as such, never guessed from a prefix: a variable or a file names its option in full.
po::parsed_options parsed_words(const std::vector<std::string>& words, const po::options_description& desc) {
  const int style = po::command_line_style::unix_style & ~po::command_line_style::allow_guessing;
  return po::command_line_parser(words).options(desc).style(style).run();
}

std::string default_config_path() { return PRESCIENT_DEFAULT_CONFIG; }

// One invocation's options being gathered, source after source. An option a source decided (a switch
// given as "no" included) is not looked for in the later ones.
class Gathering {
 public:
  Gathering(const Command& command, const po::options_description& desc) : command_(command), desc_(desc) {}

  // The command line: the flags, the command's positional words, and any other word (refused).
  bool add_flags(const std::vector<std::string>& args) {
    po::options_description stray;
    stray.add_options()("unexpected", po::value<std::vector<std::string>>());
    po::options_description all;
    all.add(desc_).add(stray);
    po::positional_options_description positional;
    if (desc_.find_nothrow("action", false) != nullptr) positional.add("action", 1);
    if (desc_.find_nothrow("target", false) != nullptr) positional.add("target", 1);
    positional.add("unexpected", -1);
    try {
      const po::parsed_options parsed = po::command_line_parser(args).options(all).positional(positional).run();
      po::store(parsed, vm_);
      for (const po::option& option : parsed.options) decide(option.string_key, {OptionOrigin::Kind::flag, ""});
    } catch (const po::error& e) {
      throw InvalidInput(std::string(e.what()) + " (see prescient " + command_.name + " --help)");
    }
    if (vm_.count("help")) return false;
    if (vm_.count("unexpected")) {
      throw InvalidInput("unexpected argument '" + vm_["unexpected"].as<std::vector<std::string>>().front() +
                         "' (see prescient " + command_.name + " --help)");
    }
    return true;
  }

  void add_variables() {
    for (const auto& option : desc_.options()) {
      const std::string& name = option->long_name();
      const char* variable = variable_of(name);
      if (variable == nullptr || name == "config" || decided(name)) continue;
      const auto value = environment_value(variable);
      if (!value) continue;
      const std::string where = std::string(variable) + "=" + shown_value(name, *value) + ": ";
      if (is_switch(*option) && !switch_value(*value)) {
        throw InvalidInput("invalid " + std::string(variable) + " '" + one_line(*value) +
                           "': use 1, true, yes, 0, false or no");
      }
      store(name, {words_of(*option, *value)}, {OptionOrigin::Kind::variable, variable}, {where});
    }
  }

  // The command's own section first, then the lines before any section: the more particular wins.
  void add_file(const ConfigFile& file) {
    for (const std::string& section : {command_.name, std::string()}) {
      std::vector<std::string> keys;
      for (const ConfigEntry& entry : file.entries) {
        if (entry.section == section && desc_.find_nothrow(entry.key, false) != nullptr &&
            std::find(keys.begin(), keys.end(), entry.key) == keys.end()) {
          keys.push_back(entry.key);
        }
      }
      for (const std::string& key : keys) {
        if (decided(key)) continue;
        const po::option_description& option = desc_.find(key, false);
        std::vector<std::vector<std::string>> words;
        std::vector<std::string> wheres;
        const ConfigEntry* first = nullptr;
        for (const ConfigEntry& entry : file.entries) {
          if (entry.section != section || entry.key != key) continue;
          if (first == nullptr) first = &entry;
          const std::string where = file.where(entry) + ": " + key + " = " + shown_value(key, entry.value) + ": ";
          if (is_switch(option) && !switch_value(entry.value)) {
            throw InvalidInput(where + "a switch is set with yes or no (true, false, 1, 0)");
          }
          words.push_back(words_of(option, entry.value));
          wheres.push_back(where);
        }
        store(key, words, {OptionOrigin::Kind::file, file.where(*first)}, wheres);
      }
    }
  }

  void finish() {
    try {
      po::notify(vm_);
    } catch (const po::error& e) {
      throw InvalidInput(std::string(e.what()) + " (see prescient " + command_.name + " --help)");
    }
  }

  po::variables_map& vm() { return vm_; }
  std::map<std::string, OptionOrigin>& origins() { return origins_; }

 private:
  bool decided(const std::string& name) const { return origins_.contains(name); }
  void decide(const std::string& name, OptionOrigin origin) { origins_.emplace(name, std::move(origin)); }

  static std::vector<std::string> words_of(const po::option_description& option, const std::string& value) {
    if (!is_switch(option)) return {"--" + option.long_name() + "=" + value};
    if (*switch_value(value)) return {"--" + option.long_name()};
    return {};
  }

  // Each value alone first, so that a bad one is named by where it came from; then all of them at once
  // (a list takes every line that gives it; a single value given twice is refused at the second).
  void store(const std::string& name, const std::vector<std::vector<std::string>>& words, OptionOrigin origin,
             const std::vector<std::string>& wheres) {
    std::vector<std::string> all;
    for (std::size_t i = 0; i < words.size(); ++i) {
      try {
        po::variables_map alone;
        po::store(parsed_words(words[i], desc_), alone);
        all.insert(all.end(), words[i].begin(), words[i].end());
        po::variables_map so_far;
        po::store(parsed_words(all, desc_), so_far);
      } catch (const po::error& e) {
        throw InvalidInput(wheres[i] + e.what());
      }
    }
    po::store(parsed_words(all, desc_), vm_);
    decide(name, std::move(origin));
  }

  const Command& command_;
  const po::options_description& desc_;
  po::variables_map vm_;
  std::map<std::string, OptionOrigin> origins_;
};

// The file to read, and whether it is read only because it exists at the default path (no --config, no
// PRESCIENT_CONFIG): then an error in it also says how to read another one or none.
struct ConfigSource {
  std::string path;
  bool by_default;
};
constexpr const char* kDefaultConfigHint =
    " (the default config file; give --config FILE, or --config /dev/null to read none)";

// --config, else PRESCIENT_CONFIG, else the default one when it exists.
std::optional<ConfigSource> config_source_of(const po::variables_map& vm) {
  if (vm.count("config")) {
    std::string path = vm["config"].as<std::string>();
    if (path.empty()) throw InvalidInput("--config is empty: name a file (/dev/null for none)");
    return ConfigSource{std::move(path), false};
  }
  if (auto variable = environment_value("PRESCIENT_CONFIG")) return ConfigSource{std::move(*variable), false};
  std::string path = default_config_path();
  struct stat status {};
  if (::stat(path.c_str(), &status) == 0) return ConfigSource{std::move(path), true};
  if (errno == ENOENT || errno == ENOTDIR) return std::nullopt;
  throw InvalidInput("cannot read config file '" + path + "': " + std::strerror(errno) + kDefaultConfigHint);
}

}  // namespace

const char* variable_of(std::string_view option) {
  for (const GlobalOption& g : global_options()) {
    if (g.name == option) return g.variable;
  }
  for (const auto& [name, variable] : kCommandOptionVariables) {
    if (name == option) return variable;
  }
  return nullptr;
}

std::optional<Invocation> resolve_invocation(const Command& command, const std::vector<std::string>& args) {
  const po::options_description desc = options_of(command);
  Gathering gathering(command, desc);
  if (!gathering.add_flags(args)) return std::nullopt;
  const std::optional<ConfigSource> config = config_source_of(gathering.vm());
  gathering.add_variables();
  if (config) {
    try {
      gathering.add_file(read_config_file(config->path));
    } catch (const InvalidInput& e) {
      if (!config->by_default) throw;
      throw InvalidInput(e.what() + std::string(kDefaultConfigHint));
    }
  }
  gathering.finish();
  const bool json = gathering.vm().count("json") > 0;
  return Invocation(command, args, std::move(gathering.vm()), std::move(gathering.origins()),
                    config ? std::optional(config->path) : std::nullopt, json);
}

std::string global_value(const Invocation& in, const char* name) {
  if (in.has(name)) return in.get<std::string>(name);
  for (const GlobalOption& g : global_options()) {
    if (g.name == std::string_view(name)) return g.fallback;
  }
  return "";
}

std::string option_text(const po::options_description& desc, const po::variables_map& vm, const std::string& name) {
  if (is_switch(desc.find(name, false))) return "yes";
  const boost::any& any = vm[name].value();
  if (const auto* text = boost::any_cast<std::string>(&any)) return *text;
  if (const auto* number = boost::any_cast<int>(&any)) return std::to_string(*number);
  if (const auto* number = boost::any_cast<std::int64_t>(&any)) return std::to_string(*number);
  if (const auto* list = boost::any_cast<std::vector<std::string>>(&any)) {
    std::string joined;
    for (const std::string& item : *list) joined += (joined.empty() ? "" : ", ") + item;
    return joined;
  }
  return "?";
}

std::string shown_value(const std::string& option, const std::string& value) {
  if ((option == "db" || option == "read-db" || option == "listen-db") && has_password(value)) {
    return "(a connection string with a password, not shown)";
  }
  return one_line(value);
}

std::vector<std::pair<std::string, std::string>> shown_options(const Invocation& in) {
  std::vector<std::pair<std::string, std::string>> shown;
  const po::options_description desc = options_of(in.command());
  for (const auto& option : desc.options()) {
    const std::string& name = option->long_name();
    if (!only_on_command_line(name) && in.has(name.c_str())) {
      shown.emplace_back(name, shown_value(name, option_text(desc, in.options(), name)));
    }
  }
  return shown;
}

std::string OptionOrigin::describe() const {
  switch (kind) {
    case Kind::flag:
      return "flag";
    case Kind::variable:
    case Kind::file:
      return where;
    case Kind::fallback:
      break;
  }
  return "default";
}

Invocation::Invocation(const Command& command, std::vector<std::string> args, po::variables_map vm,
                       std::map<std::string, OptionOrigin> origins, std::optional<std::string> config_path, bool json)
    : command_(&command),
      args_(std::move(args)),
      vm_(std::move(vm)),
      origins_(std::move(origins)),
      config_path_(std::move(config_path)),
      json_(json) {}

OptionOrigin Invocation::origin(const std::string& name) const {
  const auto found = origins_.find(name);
  return found == origins_.end() ? OptionOrigin{} : found->second;
}

Invocation Invocation::reread() const { return *resolve_invocation(*command_, args_); }

void Invocation::refuse(const std::string& name, const std::string& message) const {
  const OptionOrigin from = origin(name);
  const std::string value = vm_.count(name) ? shown_value(name, option_text(options_of(*command_), vm_, name)) : "";
  switch (from.kind) {
    case OptionOrigin::Kind::file:
      throw InvalidInput(from.where + ": " + name + " = " + value + ": " + message);
    case OptionOrigin::Kind::variable:
      throw InvalidInput(from.where + "=" + value + ": " + message);
    case OptionOrigin::Kind::flag:
    case OptionOrigin::Kind::fallback:
      break;
  }
  throw InvalidInput(message);
}

}  // namespace prescient::cli

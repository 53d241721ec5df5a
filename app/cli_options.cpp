// The option helpers every command shares (app/commands.h): --config/--set, validators that read
// a number's text, and comma-separated list options.
#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <iostream>

#include "app/commands.h"
#include "core/config/config.h"
#include "core/position/position_registry.h"
#include "core/util/errors.h"
#include "core/util/paths.h"

namespace relpos::app {

void ConfigArgs::add_to(CLI::App* cmd, const std::string& default_files) {
  cmd->add_option("--config,-c", configs,
                  "YAML config(s), merged in order (default: " + default_files + ")");
  cmd->add_option("--set,-s", sets, "override a key: --set model.layers=4 (repeatable)");
}

CLI::Validator integer_in(int64_t min, int64_t max) {
  const std::string expected = max == std::numeric_limits<int64_t>::max()
                                   ? fmt::format("an integer >= {}", min)
                                   : fmt::format("an integer from {} to {}", min, max);
  return CLI::Validator(
      [min, max, expected](std::string& text) -> std::string {
        errno = 0;
        char* end = nullptr;
        const long long v = std::strtoll(text.c_str(), &end, 10);
        // CLI11 turns an empty value into 0 without a word.
        if (text.empty()) return "got an empty value; expected " + expected;
        // Not an integer at all: CLI11's conversion reports it ("Could not convert: ...").
        if (end != text.c_str() + text.size()) return {};
        if (errno == ERANGE || v < min || v > max)
          return fmt::format("got {}; expected {}", text, expected);
        return {};
      },
      max == std::numeric_limits<int64_t>::max() ? fmt::format(">= {}", min)
                                                 : fmt::format("{}..{}", min, max),
      "integer_in");
}

CLI::Validator number_at_least(double min) {
  return CLI::Validator(
      [min](std::string& text) -> std::string {
        char* end = nullptr;
        const double v = std::strtod(text.c_str(), &end);
        if (text.empty() || end != text.c_str() + text.size() || !std::isfinite(v) || v < min)
          return fmt::format("got '{}'; expected a number >= {}", text, min);
        return {};
      },
      fmt::format(">= {}", min), "number_at_least");
}

CLI::Validator non_empty(const std::string& what) {
  return CLI::Validator(
      [what](std::string& text) -> std::string {
        return text.empty() ? "got an empty value; expected " + what : std::string();
      },
      "", "non_empty");
}

std::vector<std::string> list_items(const std::string& option, const std::vector<std::string>& given,
                                    const std::string& hint) {
  std::vector<std::string> items;
  for (const auto& text : given) {
    if (text.empty())
      throw ConfigError(option + ": got an empty value; expected a comma-separated list",
                        hint);
    for (size_t start = 0;;) {
      const size_t comma = text.find(',', start);
      const std::string item =
          text.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
      if (item.empty())
        throw ConfigError(fmt::format("{}: got '{}', which has an empty item; expected a "
                                      "comma-separated list",
                                      option, text),
                          hint);
      items.push_back(item);
      if (comma == std::string::npos) break;
      start = comma + 1;
    }
  }
  return items;
}

std::vector<int64_t> integer_items(const std::string& option, const std::vector<std::string>& given,
                                   const std::string& hint, int64_t min) {
  std::vector<int64_t> values;
  for (const auto& text : given)
    for (const auto& item : list_items(option, {text}, hint)) {
      errno = 0;
      char* end = nullptr;
      const long long v = std::strtoll(item.c_str(), &end, 10);
      if (end != item.c_str() + item.size() || errno == ERANGE || v < min)
        throw ConfigError(
            fmt::format("{}: got {}; expected an integer{}{}", option, item,
                        min == std::numeric_limits<int64_t>::min() ? "" : fmt::format(" >= {}", min),
                        item == text ? "" : " (in '" + text + "')"),
            hint);
      values.push_back(v);
    }
  return values;
}

void check_unique(const std::vector<int64_t>& items, const std::string& what, const std::string& noun) {
  for (size_t i = 0; i < items.size(); ++i)
    if (std::find(items.begin(), items.begin() + i, items[i]) != items.begin() + i)
      throw ConfigError(fmt::format("{}: {} is listed twice (expected each {} once)", what,
                                    items[i], noun),
                        "list each " + noun + " once");
}

void check_unique(const std::vector<std::string>& items, const std::string& what,
                  const std::string& noun) {
  for (size_t i = 0; i < items.size(); ++i)
    if (std::find(items.begin(), items.begin() + i, items[i]) != items.begin() + i)
      throw ConfigError(fmt::format("{}: '{}' is listed twice (expected each {} once)", what,
                                    items[i], noun),
                        "list each " + noun + " once");
}

LoadedConfig ConfigArgs::load() const {
  std::vector<std::string> files = configs;
  if (files.empty()) files.push_back(config_dir() + "/base.yaml");
  LoadedConfig loaded = load_config(files, sets);
  // A --set of a variant's key that position.type does not use is checked, then has no effect
  // (the resolved config lists the used variants only): say so rather than drop it silently.
  const PositionConfig& pos = loaded.config.position;
  for (const auto& s : sets) {
    const std::string key = s.substr(0, s.find('='));
    if (key.rfind("position.", 0) != 0) continue;
    const std::string rest = key.substr(9);
    const std::string variant = rest.substr(0, rest.find('.'));
    if (rest.find('.') == std::string::npos || !Registry::get().find(variant) || pos.has(variant))
      continue;
    std::cerr << fmt::format("note: --set {}: position.type is {}, which does not use {}; the "
                             "setting has no effect\n",
                             s, join_names(pos.types, "+"), variant);
  }
  return loaded;
}

}  // namespace relpos::app

#include "analysis/run_checks.h"

#include <fmt/format.h>
#include <fmt/ranges.h>  // fmt::join (in fmt/format.h only before fmt 11)
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>

#include "core/config/config.h"
#include "core/util/errors.h"
#include "core/util/paths.h"

namespace relpos::analysis {

namespace fs = std::filesystem;

namespace {

// The words of a commands.txt line as `relpos sweep` writes them (quote_args: a word with
// special characters in single quotes, no escapes inside).
std::vector<std::string> shell_words(const std::string& line) {
  std::vector<std::string> words;
  std::string word;
  bool in_word = false, quoted = false;
  for (char c : line) {
    if (quoted) {
      if (c == '\'') quoted = false;
      else word += c;
    } else if (c == '\'') {
      quoted = in_word = true;
    } else if (c == ' ' || c == '\t') {
      if (in_word) words.push_back(word);
      word.clear();
      in_word = false;
    } else {
      word += c;
      in_word = true;
    }
  }
  if (in_word) words.push_back(word);
  return words;
}

// A run's config as today's parser resolves it, so that keys added since the run was written
// compare at their defaults instead of as differences (a run resumed with a newer build has
// them); the text as stored when it no longer parses.
std::string normalized_config(const std::string& yaml) {
  try {
    return to_yaml(parse_config(YAML::Load(yaml), nullptr));
  } catch (const std::exception&) {
    return yaml;
  }
}

}  // namespace

std::optional<std::vector<std::string>> sweep_run_names(const std::string& dir) {
  std::ifstream commands(fs::path(dir) / "commands.txt");
  if (!commands) return std::nullopt;
  const std::string finished = "# already finished, not run again: ";
  std::vector<std::string> names;
  for (std::string line; std::getline(commands, line);) {
    if (line.rfind(finished, 0) == 0) {
      names.push_back(fs::path(line.substr(finished.size())).filename().string());
      continue;
    }
    if (line.rfind('#', 0) == 0) continue;
    const auto words = shell_words(line);
    for (size_t i = 1; i < words.size(); ++i)
      if (words[i - 1] == "--out" || words[i - 1] == "-o")
        names.push_back(fs::path(words[i]).filename().string());
  }
  return names;
}

std::vector<std::string> experiment_warnings(const std::vector<RunInfo>& runs,
                                             const std::string& dir) {
  std::vector<std::string> out;
  // Runs pooled into one row must differ in their seed only.
  static const std::vector<std::string> kNotTraining = {
      "seed", "name", "threads", "device", "cpu_allocator", "sweep", "eval", "data.cache_dir",
      "claims", "provenance", "figures"};
  std::map<std::string, const RunInfo*> first_of_group;
  for (const RunInfo& r : runs) {
    auto [it, fresh] = first_of_group.emplace(r.group, &r);
    if (fresh || r.config_yaml.empty() || it->second->config_yaml.empty()) continue;
    std::vector<std::string> diff;
    try {
      diff = config_differences(normalized_config(it->second->config_yaml),
                                normalized_config(r.config_yaml), kNotTraining);
    } catch (const ConfigError&) {
      continue;  // an unreadable config is reported where the run is read
    }
    if (diff.empty()) continue;
    const size_t shown = std::min<size_t>(diff.size(), 4);
    out.push_back(fmt::format(
        "runs '{}' and '{}' are pooled into the row '{}' (a mean over seeds) but differ in "
        "more than the seed: {}{}; analyse them in separate folders, or give --group-by the "
        "keys that tell them apart",
        it->second->name, r.name, r.group,
        fmt::join(diff.begin(), diff.begin() + static_cast<std::ptrdiff_t>(shown), "; "),
        diff.size() > shown ? fmt::format("; and {} more", diff.size() - shown) : ""));
  }
  if (const auto names = sweep_run_names(dir)) {
    std::vector<std::string> foreign;
    for (const RunInfo& r : runs)
      if (std::find(names->begin(), names->end(), r.name) == names->end())
        foreign.push_back("'" + r.name + "'");
    if (!foreign.empty())
      out.push_back(fmt::format(
          "{} run folder(s) of {} are not runs of its sweep (no command in commands.txt trains "
          "them): {}; they are pooled like the others",
          foreign.size(), repo_relative(dir), fmt::join(foreign, ", ")));
  }
  return out;
}

}  // namespace relpos::analysis

// An output folder that appears whole or not at all: everything is written into a hidden
// sibling folder, which replaces the destination only when complete; an error (or any exception)
// before that removes the sibling, so no partial folder is ever left under the destination's name.
#pragma once

#include <string>

namespace relpos {

class StagedFolder {
 public:
  // Checks `dest` first: a folder that exists and is not empty is a ConfigError (naming `option`,
  // e.g. "--out") unless `overwrite`; even then only a folder that holds `marker` (config.yaml of
  // a run, config.json of a model folder) is replaced, never an unrelated one.
  StagedFolder(const std::string& dest, bool overwrite, const std::string& option,
               const std::string& marker);
  ~StagedFolder();  // removes the staging folder unless commit() succeeded
  StagedFolder(const StagedFolder&) = delete;
  StagedFolder& operator=(const StagedFolder&) = delete;

  const std::string& path() const { return staging_; }  // where to write
  const std::string& dest() const { return dest_; }
  // Moves the staging folder to the destination (replacing it with overwrite). Throws RunError.
  void commit();

 private:
  std::string dest_, staging_;
  bool committed_ = false;
};

}  // namespace relpos

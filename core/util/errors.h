// Project exception types. main() catches them once, prints "error: <what>" and "hint: <hint>",
// and exits non-zero; nothing in core/ calls exit() or abort().
#pragma once

#include <stdexcept>
#include <string>

namespace relpos {

class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& what, std::string hint = {})
      : std::runtime_error(what), hint_(std::move(hint)) {}
  const std::string& hint() const { return hint_; }

 private:
  std::string hint_;
};

// A config file, a --set override or a command-line argument is wrong.
class ConfigError : public Error {
 public:
  using Error::Error;
};

// A data file (corpus, TSV, JSON, vocabulary) is missing or malformed.
class DataError : public Error {
 public:
  using Error::Error;
};

// An HDF5 run file or checkpoint does not follow docs/hdf5-schema.md.
class SchemaError : public Error {
 public:
  using Error::Error;
};

// Training stopped for a reason the user must see (non-finite loss, interrupted run, ...).
class RunError : public Error {
 public:
  using Error::Error;
};

// A collective of a data-parallel run failed: another rank died, hung or closed its connection.
// main() exits with kPeerLostExitCode for it, so that `relpos train --nproc` can tell a rank's
// own failure from its consequence in the other ranks.
class PeerLost : public RunError {
 public:
  using RunError::RunError;
};
constexpr int kPeerLostExitCode = 4;

}  // namespace relpos

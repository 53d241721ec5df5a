// Subcommands of the relpos executable. Each cmd_*.cpp adds one subcommand to the CLI11 app
// and returns the function that runs it.
#pragma once

#include <CLI/CLI.hpp>

#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "core/config/config.h"
#include "core/util/paths.h"  // config_dir()

namespace relpos::app {

// A count option that must be at least 1 (--jobs, --nproc, --nnodes, --radius).
inline CLI::Validator at_least_one() { return CLI::Range(int64_t{1}, int64_t{100000}); }

// An integer option in [min, max], checked on its text (each element of a list option): CLI11
// turns a number beyond int64's range into INT64_MAX without a word, and a value below the
// minimum must be an error, not "use the default". Message: "--batch: got 0; expected an
// integer >= 1".
CLI::Validator integer_in(int64_t min, int64_t max = std::numeric_limits<int64_t>::max());

// A finite number >= min (--max-memory): "nan", "inf" and smaller values are errors.
CLI::Validator number_at_least(double min);

// A value that must not be empty (a file name: --emit-slurm "" must not mean "not given").
CLI::Validator non_empty(const std::string& what);

// The items of a comma-separated list option, over every time it was given (--lengths 64,128
// --lengths 256). CLI11's own splitting drops empty items, so such an option is read as text
// and split here: an empty value or item ('', '64,,128', a trailing comma) is a ConfigError
// naming the option ("--lengths: got '64,,128', which has an empty item; expected a
// comma-separated list"), with `hint`.
std::vector<std::string> list_items(const std::string& option, const std::vector<std::string>& given,
                                    const std::string& hint);

// list_items, each an integer >= min: "--lengths: got 1; expected an integer >= 2", and
// " (in '16,1')" after it when the value has several items.
std::vector<int64_t> integer_items(const std::string& option, const std::vector<std::string>& given,
                                   const std::string& hint,
                                   int64_t min = std::numeric_limits<int64_t>::min());

// Throws ConfigError "<what>: 16 is listed twice (expected each <noun> once)" ('none' for a
// text item) for the first item that repeats an earlier one (bench: --lengths 16,16 would
// measure T=16 twice).
void check_unique(const std::vector<int64_t>& items, const std::string& what, const std::string& noun);
void check_unique(const std::vector<std::string>& items, const std::string& what,
                  const std::string& noun);

using Runner = std::function<int()>;
struct Command {
  CLI::App* cmd;
  Runner run;
};

// --config FILE (repeatable; default configs/base.yaml) and --set key=value (repeatable).
struct ConfigArgs {
  std::vector<std::string> configs;
  std::vector<std::string> sets;
  // default_files: what --help says is used without --config (a command may default otherwise).
  void add_to(CLI::App* cmd, const std::string& default_files = "configs/base.yaml");
  LoadedConfig load() const;
};


Command add_list(CLI::App& app);
Command add_config(CLI::App& app);
Command add_train(CLI::App& app);
Command add_eval(CLI::App& app);
Command add_sweep(CLI::App& app);
Command add_reproduce(CLI::App& app);

Command add_inspect(CLI::App& app);
Command add_analyze(CLI::App& app);
Command add_report(CLI::App& app);
Command add_bench(CLI::App& app);
Command add_import(CLI::App& app);
Command add_export(CLI::App& app);
Command add_watch(CLI::App& app);
Command add_tokenizer(CLI::App& app);

}  // namespace relpos::app

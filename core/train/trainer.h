// `relpos train`: one run from a config into a run folder
//   DIR/config.yaml      the resolved config
//   DIR/metrics.jsonl    one JSON object per logged step
//   DIR/checkpoint.pt    the latest checkpoint (atomic)
//   DIR/run.h5           metrics, probe, snapshots, final weights (docs/hdf5-schema.md)
//   DIR/result.json      written when the run finished: final metrics, steps, time, why it
//                        stopped, and what --init-from loaded
//   DIR/split.json       the data split: each split's document ids and names (before step 1)
//   DIR/tokenizer.model  the SentencePiece model the run's ids come from (sentencepiece only)
#pragma once

#include <map>
#include <string>

#include <torch/types.h>

#include "core/util/device.h"  // parse_device
#include "core/config/config.h"
#include "core/io/run_paths.h"

namespace relpos {

struct TrainOptions {
  std::string out_dir;
  bool resume = false;          // continue from DIR/checkpoint.pt with DIR/config.yaml
  bool overwrite = false;       // replace a run already in DIR
  std::string init_from;        // a run folder whose parameters initialise this run (by name)
  bool quiet = false;           // no progress line
  int64_t stop_after = 0;       // stop (checkpointed, unfinished) after this step; 0 = off
};

struct TrainResult {
  int64_t steps = 0;                     // steps completed
  std::map<std::string, double> valid;   // final validation metrics
  double seconds = 0;                    // wall time of this invocation
  bool stopped_early = false;
  // Why training ended: "reached train.steps (N)", or the early stop with its numbers.
  std::string stop_reason;
  // With stopped_early: the primary validation metric, its best value and the evaluations in a
  // row without a better one (train.early_stop of them).
  std::string early_stop_metric;
  double early_stop_best = 0;
  int64_t early_stop_evaluations = 0;
  bool finished = false;                 // false when stopped by stop_after
  int64_t skipped_batches = 0;           // non-finite batches skipped (train.skip_nonfinite)
};

// Files of a run folder: core/io/run_paths.h (run_h5_path(DIR), run_finished(DIR), ...).

class Tokenizer;
// A run's token ids belong to one tokenizer, and its model must keep it: a SentencePiece run
// keeps a copy of its model as DIR/tokenizer.model, a run whose WordPiece vocabulary relpos
// trained (wordpiece without data.vocab_file) a copy as DIR/vocab.txt, and whatever reloads the
// run (resume, eval, analysis) tokenizes with that copy rather than training a new one.
// use_run_tokenizer: cfg (a run's stored config) reads DIR/tokenizer.model when there is one,
// and a wordpiece run reads DIR/vocab.txt when there is one (also runs made by `relpos import`).
void use_run_tokenizer(const std::string& dir, Config& cfg);
// The config a run builds its data from: with --resume its own tokenizer.model; with
// --init-from the pre-trained run's tokenizer (its tokenizer.model for SentencePiece, so a
// fine-tuning corpus is tokenized with the pre-training vocabulary); the tokenizer settings that
// `sources` show the user did not choose (they come from base.yaml or the defaults) are the
// pre-trained run's. Throws ConfigError when a chosen tokenizer differs from the pre-trained
// run's (kind, WordPiece vocabulary). sources == nullptr: every setting counts as chosen.
Config data_config_for_run(const Config& cfg, const TrainOptions& opts,
                           const SourceMap* sources = nullptr);
// `cfg` with the settings that describe the tokenizer of `data_cfg` (data_config_for_run's
// result): the tokenizer kind and WordPiece vocabulary taken from a pre-trained run, and a
// SentencePiece model's vocab_size, model type and byte fallback, which the run records instead
// of its own unused ones.
Config with_tokenizer_settings(const Config& cfg, const Config& data_cfg);
// Copies the tokenizer's model file (if it has one) to DIR/tokenizer.model (SentencePiece) or
// DIR/vocab.txt (a trained WordPiece vocabulary), atomically.
void keep_run_tokenizer(const Tokenizer& tok, const std::string& dir);

// Trains; throws ConfigError/DataError/RunError. An interrupt (SIGINT/SIGTERM) saves a
// checkpoint, closes run.h5 and throws Interrupted (core/util/signals.h) with the resume
// command; it is honoured between steps and between evaluation batches, so the delay is at
// most one training step, one evaluation batch or one snapshot. A non-finite loss or gradient
// norm stops the run with a RunError naming the step (the last checkpoint is kept), or skips
// the batch with train.skip_nonfinite (docs/reliability.md). Holds the folder's lock
// (core/util/folder_lock.h) while it runs.
TrainResult train(const LoadedConfig& cfg, const TrainOptions& opts);

// The config stored in a run folder (for --resume and evaluation), with overrides applied.
LoadedConfig load_run_config(const std::string& dir, const std::vector<std::string>& overrides = {});

// The config of `relpos train --resume DIR`: load_run_config(dir, sets). `configs` are the
// --config files given again (none: nothing to compare): merged with `sets` they must give the
// run's config, key for key; otherwise ConfigError naming every key that differs, with both
// values.
LoadedConfig resume_run_config(const std::string& dir, const std::vector<std::string>& configs,
                               const std::vector<std::string>& sets);


}  // namespace relpos

// The files of a run folder (`relpos train --out DIR`; core/train/trainer.h says what each
// holds), for every layer that reads runs: training, evaluation, sweeps, analysis.
#pragma once

#include <string>
#include <vector>

namespace relpos {

std::string run_config_path(const std::string& dir);      // DIR/config.yaml
std::string run_checkpoint_path(const std::string& dir);  // DIR/checkpoint.pt
std::string run_h5_path(const std::string& dir);          // DIR/run.h5
std::string run_result_path(const std::string& dir);      // DIR/result.json
std::string run_metrics_path(const std::string& dir);     // DIR/metrics.jsonl
std::string run_split_path(const std::string& dir);       // DIR/split.json
std::string run_tokenizer_path(const std::string& dir);   // DIR/tokenizer.model
// DIR/analysis: the TensorBoard event file of `relpos analyze` (invariance per snapshot, figures);
// the trainer's own event files lie in DIR itself (docs/training.md, "Live curves").
std::string run_analysis_events_dir(const std::string& dir);
std::string run_vocab_path(const std::string& dir);       // DIR/vocab.txt

// The one test of "this folder is a run", used by every command: it holds run.h5, which
// `relpos train` writes before its first step (a folder with only config.yaml never trained).
bool is_run_folder(const std::string& dir);

// The run folders at any depth below `root` (a run folder holds no runs; `root` itself when it
// is one), sorted by path.
std::vector<std::string> run_folders_below(const std::string& root);

// result.json and run.h5 both present, and result.json holds the run's step count.
bool run_finished(const std::string& dir);

}  // namespace relpos

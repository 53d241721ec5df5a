// The files of a run folder (`relpos train --out DIR`; core/train/trainer.h says what each
// holds), for every layer that reads runs: training, evaluation, sweeps, analysis.
#pragma once

#include <string>

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

// result.json and run.h5 both present, and result.json holds the run's step count.
bool run_finished(const std::string& dir);

}  // namespace relpos

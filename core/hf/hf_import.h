// `relpos import DIR --out RUN`: a Hugging Face model folder (BERT, ALBERT, RoBERTa, GPT-2)
// becomes an ordinary relpos run folder, so that `relpos analyze`, `relpos train --init-from`
// and `relpos eval --run` use it as they use a run relpos trained (docs/pretrained.md):
//   RUN/config.yaml    the resolved config of the equivalent relpos model
//   RUN/checkpoint.pt  its parameters, in relpos's checkpoint format (step 0)
//   RUN/run.h5         /weights, and snapshot step_0 with the position tensors and the position-
//                      only scores (no attention: there is no probe text)
//   RUN/result.json    "imported": source folder, its config.json, the weight file and its
//                      sha256, the tensors not used, and what the import did beyond copying
//   RUN/vocab.txt | tokenizer.model | vocab.json + merges.txt   the model's tokenizer files
#pragma once

#include <string>
#include <vector>

namespace relpos {

struct ImportOptions {
  std::string source;               // the Hugging Face model folder
  std::string out;                  // the run folder to write
  std::vector<std::string> sets;    // config overrides (data.*, task.*, ...; not model.*/position.*)
  bool init_missing_head = false;   // a checkpoint without an MLM head: start a fresh one
  bool overwrite = false;           // replace an existing run folder at `out`
};

struct ImportReport {
  std::string architecture;              // "bert", ...
  std::string position_types;            // the run's position.type
  std::string weights_file, weights_sha256;
  int64_t parameters = 0;                // parameters of the relpos model
  std::vector<std::string> unused;       // checkpoint tensors the model does not use
  std::vector<std::string> initialised;  // relpos parameters not taken from the checkpoint
  std::vector<std::string> notes;
};

// Throws ConfigError (options, overrides), DataError (the model folder's files: each names the
// file, the key or tensor and what was expected) or RunError (writing); the run folder is then
// not created (everything is written beside it and renamed into place at the end).
ImportReport import_hf_model(const ImportOptions& opts);

}  // namespace relpos

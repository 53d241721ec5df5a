// `relpos tokenizer train`: a WordPiece vocabulary (BERT vocab.txt) trained on the training split
// of a config's data, as a run of that config would train it by itself (data.tokenizer
// wordpiece without data.vocab_file; core/data/wordpiece_trainer.h), written to a file so that
// it can be read, edited, shared, or given to other runs as data.vocab_file.
#pragma once

#include <cstdint>
#include <string>

#include "core/config/config.h"

namespace relpos {

struct VocabTrainReport {
  int64_t tokens = 0;       // lines of the vocabulary, the special tokens included
  std::string data;         // the task data's description (corpus, split sizes)
  std::string cached;       // the cached copy under <data.cache_dir>/tokenizers/
};

// Trains on the training split of cfg.data (cfg.task's task decides what text that is) with
// data.vocab_size and data.lower_case, and writes the vocabulary to `out` (atomically; an
// existing file only with `overwrite`). Throws ConfigError (a task without text, `out` exists),
// DataError (the corpus; a vocab_size below the alphabet), RunError (writing).
VocabTrainReport train_wordpiece_vocab_file(const Config& cfg, const std::string& out,
                                            bool overwrite);

}  // namespace relpos

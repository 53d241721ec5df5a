// Task data: what the trainer and evaluator need from the data layer. Implemented in
// core/data/ (corpora, tokenizers, tasks); the trainer sees only this interface.
//
// Determinism: every batch is a pure function of (config, split, index), so a resumed run
// and an uninterrupted one see the same batches and the data position is just the step.
#pragma once

#include <torch/types.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/config/config.h"
#include "core/data/tokenizer.h"  // the Tokenizer interface

namespace relpos {

enum class Split { Train, Valid, Test };
const char* split_name(Split s);

// Token positions [begin, end) of a row.
struct TokenRange {
  int64_t begin = 0, end = 0;
};

struct Batch {
  torch::Tensor tokens;      // (B,T) int64
  torch::Tensor key_mask;    // (B,T) bool, true at real tokens; undefined when nothing is padded
  torch::Tensor segments;    // (B,T) int64 segment ids; undefined when the task has none
  // Lm head (mlm, clm, synthetic): (B,T) int64 target per position, -100 where no loss.
  // Classifier: (B) int64 class. Span: (B,2) int64 start and end token index (inclusive).
  torch::Tensor targets;
  torch::Tensor pool_index;  // (B) int64: classifier pools here ([CLS] for encoders, last real token for decoders)
  std::vector<int64_t> example_ids;  // span_qa / classify: index of each row's example in its split
  // span_qa: where each row's context tokens are, the part of the context that fitted in the
  // row (the final [SEP] and anything cut away are outside): answers are searched only there.
  std::vector<TokenRange> context_range;
  std::vector<int64_t> lengths;      // synthetic: the task length of each row (for accuracy by length)
  // (B,T) int64 position of every token, drawn by the trainer when position.randomized_max is
  // set; undefined: 0..T-1 (every other batch).
  torch::Tensor positions;
};

class TaskData {
 public:
  virtual ~TaskData() = default;
  virtual const Tokenizer& tokenizer() const = 0;
  int64_t vocab_size() const { return tokenizer().vocab_size(); }

  // Training batch number `index` (the step): deterministic in (config seed, index).
  virtual Batch train_batch(int64_t index, int64_t batch_size) const = 0;

  // A fixed, ordered list of evaluation batches of `split`, at most `max_batches` (0 = all),
  // sequence length `length` where the task has one (0 = task.seq_len; synthetic tasks use
  // the test lengths instead). Deterministic.
  virtual std::vector<Batch> eval_batches(Split split, int64_t batch_size, int64_t max_batches,
                                          int64_t length = 0) const = 0;

  // mlm/clm: the token stream of a split (documents concatenated with [SEP]), for perplexity
  // with nonoverlapping chunks or a sliding window. Empty for other tasks.
  virtual const std::vector<int64_t>& stream(Split split) const = 0;

  // span_qa: the context text that tokens start..end (inclusive row positions) of an example's
  // row cover, or "" unless they lie inside `context`, the row's Batch::context_range (so the
  // text is never more than the model saw). Also its gold answers, and the longest span in
  // tokens the evaluation predicts (task.max_answer_len).
  virtual std::string span_text(Split split, int64_t example_id, int64_t start, int64_t end,
                                TokenRange context) const {
    return {};
  }
  virtual std::vector<std::string> gold_answers(Split split, int64_t example_id) const {
    return {};
  }
  virtual int64_t max_answer_len() const { return TaskConfig{}.max_answer_len; }

  // A short description for logs and the run file: corpus, sizes of the splits, tokenizer.
  virtual std::string describe() const = 0;
  // Document ids of each split (indices in corpus order, ascending), written into the run
  // (DIR/split.json, run.h5's /split) so the split is on record; the synthetic tasks have none.
  virtual std::vector<int64_t> split_documents(Split split) const = 0;
  // The names of those documents, one per id ("imdb:17", a file name, an article title).
  virtual std::vector<std::string> split_document_names(Split split) const = 0;
};

// make_task_data(cfg), which builds the TaskData of a config's task, is the task registry's:
// core/task/task_registry.h.

}  // namespace relpos

// The synthetic tasks as TaskData: training lengths uniform in [min_len, max_len]; evaluation
// at fixed test lengths (task.eval_lengths, or max_len doubling up to test_max_len),
// task.eval_examples examples per length. Evaluation examples are drawn from generators seeded
// by data.split_seed, the split and the length, so every run of a sweep sees the same ones;
// they are generated independently of training and may coincide with training examples for
// short lengths.
#include <fmt/format.h>

#include "core/data/synthetic_sequences.h"
#include "core/data/task_util.h"
#include "core/data/tasks.h"

namespace relpos {

namespace {

class SyntheticTaskData : public TaskData {
 public:
  explicit SyntheticTaskData(const Config& cfg) : cfg_(cfg), causal_(cfg.model.causal()) {
    const TaskConfig& t = cfg.task;
    spec_ = SyntheticSpec{t.type, t.synthetic_vocab, t.shift, t.max_len, t.recall_queries};
    tok_ = make_synthetic_tokenizer(spec_);
    lengths_ =
        t.eval_lengths.empty() ? synthetic_test_lengths(t.max_len, t.test_max_len) : t.eval_lengths;
    std::string ls;
    for (auto L : lengths_) ls += (ls.empty() ? "" : ", ") + std::to_string(L);
    describe_ = fmt::format(
        "task {}{} (synthetic; {} symbols; vocab {}; train lengths {}..{}; test "
        "lengths {}; {} examples per test length; {} layout)",
        t.type,
        t.type != "recall"          ? ""
        : t.recall_queries == 0 ? ", every key queried"
                                : fmt::format(", {} quer{} per example", t.recall_queries,
                                              t.recall_queries == 1 ? "y" : "ies"),
        t.synthetic_vocab, tok_->vocab_size(), t.min_len, t.max_len, ls, t.eval_examples,
        causal_ ? "decoder: input [SEP] output, teacher forcing"
                : "encoder: input [SEP] [MASK]...");
  }

  const Tokenizer& tokenizer() const override { return *tok_; }

  Batch train_batch(int64_t index, int64_t batch_size) const override {
    Rng rng = train_rng(cfg_.seed, index);
    std::vector<SyntheticExample> rows;
    std::vector<int64_t> lengths;
    for (int64_t r = 0; r < batch_size; ++r) {
      const int64_t n = rng.between(cfg_.task.min_len, cfg_.task.max_len);
      rows.push_back(make_synthetic_example(spec_, n, rng));
      lengths.push_back(n);
    }
    return make_batch(rows, lengths);
  }

  // Per length: ceil(eval_examples / batch_size) batches, at most max_batches (0 = no cap).
  std::vector<Batch> eval_batches(Split split, int64_t batch_size, int64_t max_batches,
                                  int64_t length) const override {
    const std::vector<int64_t> lengths = length > 0 ? std::vector<int64_t>{length} : lengths_;
    const int64_t n = cfg_.task.eval_examples;
    std::vector<Batch> out;
    for (int64_t L : lengths) {
      for (int64_t b = 0; b < batch_count(n, batch_size, max_batches); ++b) {
        std::vector<SyntheticExample> rows;
        for (int64_t k = b * batch_size; k < std::min(n, (b + 1) * batch_size); ++k) {
          Rng rng = eval_rng(cfg_.data.split_seed, split, L, k);
          rows.push_back(make_synthetic_example(spec_, L, rng));
        }
        out.push_back(make_batch(rows, std::vector<int64_t>(rows.size(), L)));
      }
    }
    return out;
  }

  const std::vector<int64_t>& stream(Split) const override {
    static const std::vector<int64_t> none;
    return none;
  }
  std::string describe() const override { return describe_; }
  std::vector<int64_t> split_documents(Split) const override { return {}; }
  std::vector<std::string> split_document_names(Split) const override { return {}; }

 private:
  Batch make_batch(const std::vector<SyntheticExample>& rows, std::vector<int64_t> lengths) const {
    std::vector<std::vector<int64_t>> toks(rows.size()), tgts(rows.size());
    for (size_t r = 0; r < rows.size(); ++r) synthetic_layout(rows[r], causal_, toks[r], tgts[r]);
    Batch b;
    b.tokens = pack_rows(toks, tok_->special().pad);  // (B,T)
    b.key_mask = key_mask_for(toks);                  // (B,T) or undefined
    b.targets = pack_rows(tgts, kIgnoreIndex);        // (B,T)
    b.lengths = std::move(lengths);
    return b;
  }

  Config cfg_;
  bool causal_;
  SyntheticSpec spec_;
  std::unique_ptr<Tokenizer> tok_;
  std::vector<int64_t> lengths_;
  std::string describe_;
};

}  // namespace

std::unique_ptr<TaskData> make_synthetic_task(const Config& cfg) {
  return std::make_unique<SyntheticTaskData>(cfg);
}

}  // namespace relpos

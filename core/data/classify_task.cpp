// classify: [CLS] a [SEP] (b [SEP]) padded to the longest row of the batch; the classifier pools
// at [CLS] (position 0) for encoders and at the last real token (the final [SEP]) for decoders.
#include <fmt/format.h>

#include "core/data/split.h"
#include "core/data/task_util.h"
#include "core/data/tasks.h"
#include "core/data/tokenizer.h"
#include "core/util/errors.h"

namespace relpos {

namespace {

class ClassifyTaskData : public TaskData {
 public:
  ClassifyTaskData(const Config& cfg, Corpus corpus) : cfg_(cfg), causal_(cfg.model.causal()) {
    if (corpus.kind != CorpusKind::Labelled)
      throw DataError(
          fmt::format("task 'classify' needs a labelled corpus (sentiment or a GLUE-style "
                      ".tsv); corpus '{}' is {} data",
                      corpus.name, corpus_kind_name(corpus.kind)));
    docs_ = std::move(corpus.documents);
    std::vector<int64_t> labels;
    for (const auto& d : docs_) {
      if (d.label < 0 || d.label >= cfg.task.num_classes)
        throw DataError(fmt::format(
            "corpus '{}', document '{}': label {} out of range (expected "
            "0..{} for task.num_classes = {})",
            corpus.name, d.name, d.label, cfg.task.num_classes - 1, cfg.task.num_classes));
      labels.push_back(d.label);
      pairs_ = pairs_ || !d.text_b.empty();
    }
    // The layout is the corpus's: every example of a pair corpus is a pair.
    for (const auto& d : docs_)
      if (pairs_ && d.text_b.empty())
        throw DataError(fmt::format("corpus '{}', document '{}': no second sentence in a corpus "
                                    "of sentence pairs (expected both sentences in every row)",
                                    corpus.name, d.name));
    split_ = split_corpus(docs_, &labels, cfg.data, "corpus " + corpus.name);
    std::vector<std::string> train_texts;
    for (int64_t id : split_.train) {
      train_texts.push_back(docs_[id].text);
      if (!docs_[id].text_b.empty()) train_texts.push_back(docs_[id].text_b);
    }
    tok_ = make_tokenizer(cfg, train_texts);
    for (const auto& d : docs_) {
      enc_a_.push_back(tok_->encode(d.text));
      enc_b_.push_back(d.text_b.empty() ? std::vector<int64_t>{} : tok_->encode(d.text_b));
    }
    sampler_ = std::make_unique<EpochSampler>(static_cast<int64_t>(split_.train.size()), cfg.seed);
    std::vector<int64_t> per_class(cfg.task.num_classes, 0);
    for (int64_t l : labels) ++per_class[l];
    std::string counts;
    for (size_t c = 0; c < per_class.size(); ++c)
      counts += fmt::format("{}{}: {}", c ? ", " : "", c, per_class[c]);
    describe_ = fmt::format(
        "task classify ({} classes; {}); corpus {} ({}; {} examples: {}, "
        "stratified); tokenizer {} (vocab {}); pooling at {}",
        cfg.task.num_classes, counts, corpus.name, corpus.source, docs_.size(),
        split_sizes(split_.train.size(), split_.valid.size(), split_.test.size()), tok_->name(),
        tok_->vocab_size(), causal_ ? "the last real token" : "[CLS]");
  }

  const Tokenizer& tokenizer() const override { return *tok_; }

  Batch train_batch(int64_t index, int64_t batch_size) const override {
    return make_batch(Split::Train, sampler_->batch(index, batch_size), cfg_.task.seq_len);
  }

  std::vector<Batch> eval_batches(Split split, int64_t batch_size, int64_t max_batches,
                                  int64_t length) const override {
    const int64_t n = static_cast<int64_t>(ids(split).size());
    const int64_t T = length > 0 ? length : cfg_.task.seq_len;
    return example_batches(n, batch_size, max_batches,
                           [&](const std::vector<int64_t>& pos) { return make_batch(split, pos, T); });
  }

  const std::vector<int64_t>& stream(Split) const override { return no_stream(); }
  std::string describe() const override { return describe_; }
  std::vector<int64_t> split_documents(Split split) const override { return ids(split); }
  std::vector<std::string> split_document_names(Split split) const override {
    std::vector<std::string> out;
    for (int64_t id : ids(split)) out.push_back(docs_[id].name);
    return out;
  }

 private:
  const std::vector<int64_t>& ids(Split s) const {
    return s == Split::Train ? split_.train : s == Split::Valid ? split_.valid : split_.test;
  }

  // `positions` index ids(split); rows are truncated to T tokens (longest sentence first).
  Batch make_batch(Split split, const std::vector<int64_t>& positions, int64_t T) const {
    const SpecialTokens& sp = tok_->special();
    std::vector<std::vector<int64_t>> toks, segs;
    std::vector<int64_t> labels, pool;
    for (int64_t p : positions) {
      const int64_t id = ids(split)[p];
      std::vector<int64_t> a = enc_a_[id], b = enc_b_[id];
      const size_t budget = static_cast<size_t>(std::max<int64_t>(0, T - (pairs_ ? 3 : 2)));
      while (a.size() + b.size() > budget) (a.size() >= b.size() ? a : b).pop_back();
      std::vector<int64_t> row = {sp.cls};
      row.insert(row.end(), a.begin(), a.end());
      row.push_back(sp.sep);
      std::vector<int64_t> seg(row.size(), 0);
      if (pairs_) {
        row.insert(row.end(), b.begin(), b.end());
        row.push_back(sp.sep);
        seg.resize(row.size(), 1);
      }
      pool.push_back(causal_ ? static_cast<int64_t>(row.size()) - 1 : 0);
      labels.push_back(docs_[id].label);
      toks.push_back(std::move(row));
      segs.push_back(std::move(seg));
    }
    Batch out;
    out.tokens = pack_rows(toks, sp.pad);                 // (B,T)
    out.key_mask = key_mask_for(toks);                    // (B,T) or undefined
    if (pairs_) out.segments = pack_rows(segs, 0);        // (B,T)
    out.targets = torch::tensor(labels, torch::kInt64);   // (B)
    out.pool_index = torch::tensor(pool, torch::kInt64);  // (B)
    out.example_ids = positions;
    return out;
  }

  Config cfg_;
  bool causal_;
  bool pairs_ = false;
  std::vector<Document> docs_;
  DocumentSplit split_;
  std::unique_ptr<Tokenizer> tok_;
  std::vector<std::vector<int64_t>> enc_a_, enc_b_;
  std::unique_ptr<EpochSampler> sampler_;
  std::string describe_;
};

}  // namespace

std::unique_ptr<TaskData> make_classify_task(const Config& cfg, Corpus corpus) {
  return std::make_unique<ClassifyTaskData>(cfg, std::move(corpus));
}

}  // namespace relpos

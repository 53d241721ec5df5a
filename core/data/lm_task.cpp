// mlm and clm: fixed-length windows of a split's token stream (its documents, each followed by
// [SEP]). mlm rows are [CLS] + T-1 stream tokens with BERT masking; clm rows are T stream tokens
// with the next token as target.
#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <optional>

#include "core/data/masking.h"
#include "core/data/split.h"
#include "core/data/task_util.h"
#include "core/data/tasks.h"
#include "core/data/tokenizer.h"
#include "core/util/errors.h"

namespace relpos {

namespace {

constexpr size_t kMinDocuments = 20;

// A corpus of fewer than kMinDocuments documents (one long text file, say) is cut into
// kMinDocuments pieces of similar size at white space, so that every split gets text. Where no
// white space follows within another piece's length (at least kMaxWordBytes), as in Chinese or
// Japanese text or one huge "word", the cut is at a character boundary instead: otherwise the
// rest stayed one piece, and a file without white space left the valid and test splits empty.
constexpr size_t kMaxWordBytes = 256;
std::vector<Document> pieces_of(const std::vector<Document>& docs) {
  size_t total = 0;
  for (const auto& d : docs) total += d.text.size();
  const size_t target = std::max<size_t>(1, (total + kMinDocuments - 1) / kMinDocuments);
  const size_t reach = std::max(target, kMaxWordBytes);
  std::vector<Document> out;
  for (const auto& d : docs) {
    const std::string& t = d.text;
    size_t pos = 0;
    int part = 0;
    while (pos < t.size()) {
      const size_t cut = std::min(t.size(), pos + target);
      size_t end = cut;
      while (end < t.size() && end - cut < reach &&
             !std::isspace(static_cast<unsigned char>(t[end])))
        ++end;
      if (end < t.size() && !std::isspace(static_cast<unsigned char>(t[end]))) {
        end = cut;  // no white space within reach
        while (end < t.size() && (static_cast<unsigned char>(t[end]) & 0xC0) == 0x80) ++end;
      }
      out.push_back({fmt::format("{} part {}", d.name, part++), t.substr(pos, end - pos), "", -1,
                     d.fixed_split});
      pos = end;
    }
  }
  return out;
}

class LmTaskData : public TaskData {
 public:
  LmTaskData(const Config& cfg, Corpus corpus, bool masked) : cfg_(cfg), mlm_(masked) {
    if (corpus.kind == CorpusKind::Qa)
      throw DataError(fmt::format("task '{}' needs text; corpus '{}' is span QA data",
                                  cfg.task.type, corpus.name),
                      "use data.corpus: sotu, a text file or a folder of .txt files");
    std::vector<Document> docs = std::move(corpus.documents);
    for (auto& d : docs)
      if (!d.text_b.empty()) d.text += "\n" + d.text_b;
    std::string note;
    if (docs.size() < kMinDocuments) {
      note = fmt::format("; {} document(s) cut into pieces", docs.size());
      docs = pieces_of(docs);
    }
    split_ = split_corpus(docs, nullptr, cfg.data, "corpus " + corpus.name);
    for (const auto& d : docs) names_.push_back(d.name);
    std::vector<std::string> train_texts;
    for (int64_t id : split_.train) train_texts.push_back(docs[id].text);
    tok_ = make_tokenizer(cfg, train_texts);
    const std::vector<int64_t>* ids[3] = {&split_.train, &split_.valid, &split_.test};
    for (int s = 0; s < 3; ++s)
      for (int64_t id : *ids[s]) {
        const std::vector<int64_t> t = tok_->encode(docs[id].text);
        streams_[s].insert(streams_[s].end(), t.begin(), t.end());
        streams_[s].push_back(tok_->special().sep);
      }
    // mlm masks only tokens outside the specials: a split of nothing but [UNK] and [SEP] (a
    // vocabulary that covers none of the corpus's words) has no target, and its loss is the mean
    // over nothing, NaN.
    if (mlm_)
      for (int s = 0; s < 2; ++s) {
        const auto& st = streams_[s];
        if (st.empty() || std::any_of(st.begin(), st.end(),
                                      [](int64_t id) { return id >= kNumSpecial; }))
          continue;
        throw DataError(fmt::format("corpus '{}': the {} split has no token mlm can mask: all {} "
                                    "of its tokens are special ([UNK], [SEP], ...) with "
                                    "tokenizer {}",
                                    corpus.name, s == 0 ? "training" : "validation", st.size(),
                                    tok_->name()),
                        "the vocabulary covers none of this split's words: check "
                        "data.vocab_file (and data.lower_case for an uncased vocabulary)");
      }
    const int64_t need = window(cfg.task.seq_len);
    if (static_cast<int64_t>(streams_[0].size()) < need)
      throw DataError(fmt::format("corpus '{}': the training split has {} tokens, fewer than one "
                                  "sequence of task.seq_len = {}",
                                  corpus.name, streams_[0].size(), cfg.task.seq_len),
                      "lower task.seq_len or use more text");
    describe_ = fmt::format(
        "task {}; corpus {} ({}{}; {} documents: {}); tokenizer {} (vocab {}); tokens {}",
        cfg.task.type, corpus.name, corpus.source, note, docs.size(),
        split_sizes(split_.train.size(), split_.valid.size(), split_.test.size()), tok_->name(),
        tok_->vocab_size(),
        split_sizes(streams_[0].size(), streams_[1].size(), streams_[2].size()));
  }

  const Tokenizer& tokenizer() const override { return *tok_; }

  Batch train_batch(int64_t index, int64_t batch_size) const override {
    Rng rng = train_rng(cfg_.seed, index);
    const auto& s = streams_[0];
    const int64_t T = cfg_.task.seq_len;
    const int64_t w = window(T);
    std::vector<int64_t> starts(batch_size);
    for (auto& st : starts) st = rng.below(static_cast<int64_t>(s.size()) - w + 1);
    return make_batch(s, starts, T, rng);
  }

  std::vector<Batch> eval_batches(Split split, int64_t batch_size, int64_t max_batches,
                                  int64_t length) const override {
    const auto& s = streams_[static_cast<int>(split)];
    const int64_t T = length > 0 ? length : cfg_.task.seq_len;
    const int64_t n = static_cast<int64_t>(s.size());
    int64_t w = window(T);
    // Nonoverlapping windows; clm windows overlap by one token so every token is a target once.
    const int64_t stride = mlm_ ? w : T;
    if (n < w) w = n;  // a split shorter than one window gives one shorter row
    if (w < (mlm_ ? 1 : 2)) return {};
    const int64_t n_windows = (n - w) / stride + 1;
    std::vector<Batch> out;
    const int64_t n_batches = batch_count(n_windows, batch_size, max_batches);
    for (int64_t b = 0; b < n_batches; ++b) {
      std::vector<int64_t> starts;
      for (int64_t k = b * batch_size; k < std::min(n_windows, (b + 1) * batch_size); ++k)
        starts.push_back(k * stride);
      out.push_back(make_batch(s, starts, mlm_ ? w + 1 : w - 1, std::nullopt, split));
    }
    return out;
  }

  const std::vector<int64_t>& stream(Split split) const override {
    return streams_[static_cast<int>(split)];
  }
  std::string describe() const override { return describe_; }
  std::vector<int64_t> split_documents(Split split) const override {
    return split_part(split_, split);
  }
  std::vector<std::string> split_document_names(Split split) const override {
    std::vector<std::string> out;
    for (int64_t id : split_documents(split)) out.push_back(names_[id]);
    return out;
  }

 private:
  // Stream tokens one row of length T consumes.
  int64_t window(int64_t T) const { return mlm_ ? T - 1 : T + 1; }

  // Rows of length T from `starts`. Training masks draw from `train`; evaluation masks from a
  // generator per window (so they do not depend on the batch size).
  Batch make_batch(const std::vector<int64_t>& s, const std::vector<int64_t>& starts, int64_t T,
                   std::optional<Rng> train, Split split = Split::Train) const {
    std::vector<std::vector<int64_t>> toks, tgts;
    for (size_t r = 0; r < starts.size(); ++r) {
      const int64_t st = starts[r];
      std::vector<int64_t> row, tgt;
      if (mlm_) {
        row.push_back(tok_->special().cls);
        row.insert(row.end(), s.begin() + st, s.begin() + st + T - 1);
        if (train) {
          mask_row(row, tgt, cfg_.task.mask_prob, tok_->vocab_size(), *train);
        } else {
          Rng rng = eval_rng(cfg_.data.split_seed, split, 0, st);
          mask_row(row, tgt, cfg_.task.mask_prob, tok_->vocab_size(), rng);
        }
      } else {
        row.assign(s.begin() + st, s.begin() + st + T);
        tgt.assign(s.begin() + st + 1, s.begin() + st + T + 1);
      }
      toks.push_back(std::move(row));
      tgts.push_back(std::move(tgt));
    }
    Batch b;
    b.tokens = pack_rows(toks, tok_->special().pad);  // (B,T)
    b.targets = pack_rows(tgts, kIgnoreIndex);        // (B,T)
    return b;
  }

  Config cfg_;
  bool mlm_;
  std::unique_ptr<Tokenizer> tok_;
  DocumentSplit split_;
  std::vector<std::string> names_;  // of every document (or piece), in corpus order
  std::vector<int64_t> streams_[3];
  std::string describe_;
};

}  // namespace

std::unique_ptr<TaskData> make_lm_task(const Config& cfg, Corpus corpus, bool masked) {
  return std::make_unique<LmTaskData>(cfg, std::move(corpus), masked);
}

}  // namespace relpos

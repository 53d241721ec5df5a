// span_qa: [CLS] question [SEP] context [SEP]; targets are the start and end token indices
// (inclusive) of the first gold answer in that sequence. The question keeps at most
// q_cap = min(task.max_query_len, task.seq_len / 2) tokens; the context is cut to fit the
// length. Training drops examples whose answer is cut away or covered by no token (each counted
// in describe()); evaluation keeps every example and targets (0, 0), the [CLS] position, when
// the answer is not visible. Each row records where its visible context is (context_range):
// predicted spans and their text stay inside it.
#include <fmt/format.h>

#include <algorithm>

#include "core/data/split.h"
#include "core/data/task_util.h"
#include "core/data/tasks.h"
#include "core/util/text_util.h"
#include "core/data/tokenizer.h"
#include "core/util/errors.h"

namespace relpos {

namespace {

struct EncodedContext {
  std::vector<int64_t> ids;
  std::vector<std::pair<int64_t, int64_t>> offsets;  // byte span of each token in the context
};

struct EncodedQuestion {
  std::vector<int64_t> ids;                     // truncated to q_cap
  int64_t answer_first = -1, answer_last = -1;  // context token indices; -1: no token covers it
};

class SpanQaTaskData : public TaskData {
 public:
  SpanQaTaskData(const Config& cfg, Corpus corpus) : cfg_(cfg), corpus_(std::move(corpus)) {
    if (corpus_.kind != CorpusKind::Qa)
      throw DataError(
          fmt::format("task 'span_qa' needs span QA data (wordnet_qa or a SQuAD v1.1 "
                      ".json); corpus '{}' is {} data",
                      corpus_.name, corpus_kind_name(corpus_.kind)));
    const int64_t T = cfg.task.seq_len;
    if (T < 8)
      throw DataError(
          fmt::format("task 'span_qa': task.seq_len = {} leaves no room for a question "
                      "and a context (expected >= 8)",
                      T));
    q_cap_ = std::min(cfg.task.max_query_len, T / 2);
    split_ = split_corpus(corpus_.documents, nullptr, cfg.data, "corpus " + corpus_.name);
    std::vector<int> split_of(corpus_.documents.size());
    for (int64_t d : split_.valid) split_of[d] = 1;
    for (int64_t d : split_.test) split_of[d] = 2;
    for (size_t q = 0; q < corpus_.questions.size(); ++q)
      examples_[split_of[corpus_.questions[q].document]].push_back(static_cast<int64_t>(q));

    // The tokenizer sees the training questions and their contexts only.
    std::vector<std::string> train_texts;
    int64_t last_ctx = -1;
    for (int64_t q : examples_[0]) {
      const QaExample& ex = corpus_.questions[q];
      if (ex.context != last_ctx) train_texts.push_back(corpus_.contexts[ex.context]);
      last_ctx = ex.context;
      train_texts.push_back(ex.question);
    }
    tok_ = make_tokenizer(cfg, train_texts);

    contexts_.resize(corpus_.contexts.size());
    for (size_t c = 0; c < corpus_.contexts.size(); ++c)
      contexts_[c].ids = tok_->encode_with_offsets(corpus_.contexts[c], &contexts_[c].offsets);
    questions_.resize(corpus_.questions.size());
    for (size_t q = 0; q < corpus_.questions.size(); ++q) {
      const QaExample& ex = corpus_.questions[q];
      EncodedQuestion& eq = questions_[q];
      eq.ids = tok_->encode(ex.question);
      if (static_cast<int64_t>(eq.ids.size()) > q_cap_) eq.ids.resize(q_cap_);
      const auto& off = contexts_[ex.context].offsets;
      for (size_t t = 0; t < off.size(); ++t) {
        if (off[t].second <= off[t].first) continue;  // a token with no text of its own
        if (off[t].second > ex.answer_begin && off[t].first < ex.answer_end) {
          if (eq.answer_first < 0) eq.answer_first = static_cast<int64_t>(t);
          eq.answer_last = static_cast<int64_t>(t);
        }
      }
    }
    for (size_t k = 0; k < examples_[0].size(); ++k)
      if (visible(examples_[0][k], T)) train_kept_.push_back(static_cast<int64_t>(k));
    if (train_kept_.empty())
      throw DataError(fmt::format("corpus '{}': no training example has its answer within "
                                  "task.seq_len = {} tokens",
                                  corpus_.name, T),
                      "raise task.seq_len");
    sampler_ = std::make_unique<EpochSampler>(static_cast<int64_t>(train_kept_.size()), cfg.seed);
    // Per split: answers no token covers (a tokenizer that drops their characters), and answers
    // longer than the evaluation predicts (task.max_answer_len), which never match whole.
    size_t uncovered[3] = {0, 0, 0}, too_long[3] = {0, 0, 0};
    for (int s = 0; s < 3; ++s)
      for (int64_t q : examples_[s]) {
        const EncodedQuestion& eq = questions_[q];
        if (eq.answer_first < 0)
          ++uncovered[s];
        else if (eq.answer_last - eq.answer_first + 1 > cfg.task.max_answer_len)
          ++too_long[s];
      }
    const size_t dropped = examples_[0].size() - train_kept_.size();
    describe_ = fmt::format(
        "task span_qa; corpus {} ({}; {} documents: {}; questions {}); tokenizer {} (vocab {}); "
        "{} training questions dropped ({} with the answer beyond seq_len {}, {} with an answer "
        "no token covers); answers no token covers: {}; answers longer than task.max_answer_len "
        "= {} tokens: {}",
        corpus_.name, corpus_.source, corpus_.documents.size(),
        split_sizes(split_.train.size(), split_.valid.size(), split_.test.size()),
        split_sizes(examples_[0].size(), examples_[1].size(), examples_[2].size()), tok_->name(),
        tok_->vocab_size(), dropped, dropped - uncovered[0], T, uncovered[0],
        split_sizes(uncovered[0], uncovered[1], uncovered[2]), cfg.task.max_answer_len,
        split_sizes(too_long[0], too_long[1], too_long[2]));
  }

  const Tokenizer& tokenizer() const override { return *tok_; }

  Batch train_batch(int64_t index, int64_t batch_size) const override {
    std::vector<int64_t> pos;
    for (int64_t k : sampler_->batch(index, batch_size)) pos.push_back(train_kept_[k]);
    return make_batch(Split::Train, pos, cfg_.task.seq_len);
  }

  std::vector<Batch> eval_batches(Split split, int64_t batch_size, int64_t max_batches,
                                  int64_t length) const override {
    const int64_t n = static_cast<int64_t>(examples(split).size());
    const int64_t T = length > 0 ? length : cfg_.task.seq_len;
    return example_batches(n, batch_size, max_batches,
                           [&](const std::vector<int64_t>& pos) { return make_batch(split, pos, T); });
  }

  const std::vector<int64_t>& stream(Split) const override { return no_stream(); }

  std::string span_text(Split split, int64_t example_id, int64_t start, int64_t end,
                        TokenRange context) const override {
    const int64_t q = examples(split).at(example_id);
    const auto& off = contexts_[corpus_.questions[q].context].offsets;
    // Context token indices: the row's visible part, never more than the context has.
    const int64_t cs = context_start(q);
    const int64_t first = start - cs, last = end - cs;
    const int64_t visible = std::min<int64_t>(context.end - cs, off.size());
    if (start < context.begin || first < 0 || last < first || last >= visible) return {};
    const std::string& ctx = corpus_.contexts[corpus_.questions[q].context];
    return trim(ctx.substr(off[first].first, off[last].second - off[first].first));
  }

  int64_t max_answer_len() const override { return cfg_.task.max_answer_len; }

  std::vector<std::string> gold_answers(Split split, int64_t example_id) const override {
    return corpus_.questions[examples(split).at(example_id)].answers;
  }

  std::string describe() const override { return describe_; }
  std::vector<int64_t> split_documents(Split split) const override {
    return split_part(split_, split);
  }
  std::vector<std::string> split_document_names(Split split) const override {
    std::vector<std::string> out;
    for (int64_t id : split_documents(split)) out.push_back(corpus_.documents[id].name);
    return out;
  }

 private:
  const std::vector<int64_t>& examples(Split s) const { return examples_[static_cast<int>(s)]; }
  int64_t context_start(int64_t q) const {
    return static_cast<int64_t>(questions_[q].ids.size()) + 2;
  }
  // Context tokens that fit a sequence of length T.
  int64_t context_room(int64_t q, int64_t T) const {
    return std::max<int64_t>(0, T - context_start(q) - 1);
  }
  bool visible(int64_t q, int64_t T) const {
    return questions_[q].answer_first >= 0 && questions_[q].answer_last < context_room(q, T);
  }

  Batch make_batch(Split split, const std::vector<int64_t>& positions, int64_t T) const {
    const SpecialTokens& sp = tok_->special();
    std::vector<std::vector<int64_t>> toks, segs;
    std::vector<int64_t> spans;
    std::vector<TokenRange> context_range;
    for (int64_t p : positions) {
      const int64_t q = examples(split)[p];
      const EncodedQuestion& eq = questions_[q];
      const auto& ctx = contexts_[corpus_.questions[q].context].ids;
      std::vector<int64_t> row = {sp.cls};
      row.insert(row.end(), eq.ids.begin(), eq.ids.end());
      row.push_back(sp.sep);
      std::vector<int64_t> seg(row.size(), 0);
      const int64_t room = std::min<int64_t>(context_room(q, T), ctx.size());
      row.insert(row.end(), ctx.begin(), ctx.begin() + room);
      context_range.push_back({context_start(q), context_start(q) + room});
      row.push_back(sp.sep);
      seg.resize(row.size(), 1);
      if (visible(q, T)) {
        spans.push_back(context_start(q) + eq.answer_first);
        spans.push_back(context_start(q) + eq.answer_last);
      } else {
        spans.push_back(0);
        spans.push_back(0);
      }
      toks.push_back(std::move(row));
      segs.push_back(std::move(seg));
    }
    Batch out;
    out.tokens = pack_rows(toks, sp.pad);                             // (B,T)
    out.key_mask = key_mask_for(toks);                                // (B,T) or undefined
    out.segments = pack_rows(segs, 0);                                // (B,T)
    out.targets = torch::tensor(spans, torch::kInt64).view({-1, 2});  // (B,2)
    out.example_ids = positions;
    out.context_range = std::move(context_range);
    return out;
  }

  Config cfg_;
  Corpus corpus_;
  int64_t q_cap_ = 0;
  DocumentSplit split_;
  std::vector<int64_t> examples_[3];  // question indices of each split, in corpus order
  std::vector<int64_t> train_kept_;   // positions in examples_[0] with a visible answer
  std::unique_ptr<Tokenizer> tok_;
  std::vector<EncodedContext> contexts_;
  std::vector<EncodedQuestion> questions_;
  std::unique_ptr<EpochSampler> sampler_;
  std::string describe_;
};

}  // namespace

std::unique_ptr<TaskData> make_span_qa_task(const Config& cfg, Corpus corpus) {
  return std::make_unique<SpanQaTaskData>(cfg, std::move(corpus));
}

}  // namespace relpos

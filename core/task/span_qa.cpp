// span_qa: extractive question answering (SQuAD v1.1). A row is [CLS] question [SEP] context
// [SEP], padded to the batch's longest; the model points at the answer's first and last token.
//   head: Span (a start and an end logit per position)
//   loss: (CE(start) + CE(end)) / 2
//   metrics: SQuAD F1 (primary) and exact match of the best span (at most task.max_answer_len
//     tokens), both in %, with the official answer normalization; accuracy (start and end both
//     right) and loss
//   other lengths: every test example in rows of L tokens (more of a long context fits)
#include <memory>

#include "core/data/corpus.h"
#include "core/data/tasks.h"
#include "core/task/task_registry.h"

namespace relpos {

void register_span_qa(TaskRegistry& r) {
  TaskInfo t;
  t.name = "span_qa";
  t.summary = "extractive question answering: the answer's span in the context";
  t.head = HeadKind::Span;
  t.loss = "(cross-entropy of the start + cross-entropy of the end) / 2";
  t.metrics = {{"f1", "F1", "%", true},
               {"em", "exact match", "%", true},
               {"accuracy", "accuracy", "", true},
               {"loss", "loss", "nats per target", false}};
  t.mode = ModelMode::Bidirectional;
  t.length_eval = LengthEval::Examples;
  t.validate = [](const Config& c, const SourceMap* src) {
    reject_corpora(c, src, {"sotu", "sentiment"},
                   "span QA data: wordnet_qa or a SQuAD v1.1 .json");
  };
  t.make_data = [](const Config& c) { return make_span_qa_task(c, load_corpus(c)); };
  r.add(std::move(t));
}

}  // namespace relpos

// classify: sentence (pair) classification. A row is [CLS] sentence [SEP] (sentence [SEP]),
// padded to the batch's longest; the class is read at [CLS] (encoders) or at the last real
// token (decoders).
//   head: Classifier (task.num_classes logits)
//   loss: cross-entropy of the class
//   metrics: accuracy (primary), F1 (class 1 of two, else macro) and MCC from the confusion
//     matrix, loss
//   other lengths: every test example in rows of L tokens (more of a long pair fits)
#include <memory>

#include "core/data/corpus.h"
#include "core/data/tasks.h"
#include "core/task/task_registry.h"

namespace relpos {

void register_classify(TaskRegistry& r) {
  TaskInfo t;
  t.name = "classify";
  t.summary = "sentence (pair) classification";
  t.head = HeadKind::Classifier;
  t.loss = "cross-entropy of the class";
  t.metrics = {{"accuracy", "classification accuracy", "", true},
               {"f1", "classification F1 (label 1, or macro)", "", true},
               {"mcc", "Matthews correlation", "", true},
               {"loss", "loss", "nats per target", false}};
  t.length_eval = LengthEval::Examples;
  t.validate = [](const Config& c, const SourceMap* src) {
    reject_corpora(c, src, {"sotu", "wordnet_qa"},
                   "a labelled corpus: sentiment or a GLUE-style .tsv");
  };
  t.make_data = [](const Config& c) { return make_classify_task(c, load_corpus(c)); };
  r.add(std::move(t));
}

}  // namespace relpos

// mlm: masked language modelling (BERT). Each row is [CLS] and a window of the token stream;
// 15 % of the text positions (task.mask_prob) are chosen, of those 80 % become [MASK], 10 % a
// random token and 10 % stay, and the model predicts the original token at each chosen one.
//   head: Lm (the output embedding tied to the input's, after a transform)
//   loss: cross-entropy over the chosen positions
//   metrics: accuracy (primary) and loss over the chosen positions
//   rows: always task.seq_len tokens; the probe needs [CLS] and one text token
//   other lengths: windows of L tokens of the test stream, masked the same way
#include <memory>

#include "core/data/corpus.h"
#include "core/data/tasks.h"
#include "core/task/task_registry.h"

namespace relpos {

// The task of a config that names none (TaskConfig::type).
const char* const kDefaultTaskType = "mlm";

void register_mlm(TaskRegistry& r) {
  TaskInfo t;
  t.name = "mlm";
  t.summary = "masked language model: predict the masked tokens (15 %, 80/10/10)";
  t.head = HeadKind::Lm;
  t.loss = "cross-entropy over the masked positions";
  t.metrics = {{"accuracy", "masked-token accuracy", "", true},
               {"loss", "masked-token loss", "nats", false}};
  t.mode = ModelMode::Bidirectional;
  t.fixed_length_rows = true;
  t.min_probe_len = 2;
  t.probe = "[CLS] and at least one text token";
  t.length_eval = LengthEval::MaskedStream;
  t.validate = [](const Config& c, const SourceMap* src) {
    reject_corpora(c, src, {"wordnet_qa"}, "text: sotu, sentiment, a text file or a folder");
  };
  t.make_data = [](const Config& c) { return make_lm_task(c, load_corpus(c), /*masked=*/true); };
  r.add(std::move(t));
}

}  // namespace relpos

// clm: causal language modelling (GPT). Each row is a window of the token stream and the model
// predicts every next token, seeing only the tokens before it.
//   head: Lm (the output embedding tied to the input's)
//   loss: cross-entropy of each next token
//   metrics: perplexity exp(loss) (primary, lower is better), loss and accuracy
//   rows: always task.seq_len tokens
//   other lengths: perplexity over the test stream cut into nonoverlapping chunks of L tokens,
//     and with a sliding window (eval --stride): the protocol of Press et al. 2022
#include <memory>

#include "core/data/corpus.h"
#include "core/data/tasks.h"
#include "core/task/task_registry.h"

namespace relpos {

void register_clm(TaskRegistry& r) {
  TaskInfo t;
  t.name = "clm";
  t.summary = "causal language model: predict each next token";
  t.head = HeadKind::Lm;
  t.loss = "cross-entropy of each next token";
  t.metrics = {{"ppl", "perplexity (nonoverlapping chunks)", "", false},
               {"loss", "next-token loss", "nats", false},
               {"accuracy", "next-token accuracy", "", true}};
  t.mode = ModelMode::Causal;
  t.fixed_length_rows = true;
  t.length_eval = LengthEval::CausalStream;
  t.validate = [](const Config& c, const SourceMap* src) {
    reject_corpora(c, src, {"wordnet_qa"}, "text: sotu, sentiment, a text file or a folder");
  };
  t.make_data = [](const Config& c) { return make_lm_task(c, load_corpus(c), /*masked=*/false); };
  r.add(std::move(t));
}

}  // namespace relpos

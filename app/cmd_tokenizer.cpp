// relpos tokenizer train: a WordPiece vocabulary trained on a corpus's training split
// (core/train/vocab_training.h, docs/data.md).
#include <fmt/format.h>

#include <iostream>

#include "app/commands.h"
#include "core/train/vocab_training.h"

namespace relpos::app {

Command add_tokenizer(CLI::App& app) {
  auto* cmd = app.add_subcommand("tokenizer", "tokenizer tools: train a WordPiece vocabulary");
  cmd->require_subcommand(1);
  auto* train = cmd->add_subcommand(
      "train",
      "train a WordPiece vocabulary (BERT vocab.txt) on the training split of a corpus, as a run "
      "with data.tokenizer wordpiece and no data.vocab_file does by itself");
  struct Args {
    ConfigArgs config;
    std::string corpus, out;
    int64_t vocab_size = 0;
    bool cased = false, overwrite = false;
  };
  auto a = std::make_shared<Args>();
  a->config.add_to(train);
  train->add_option("--corpus", a->corpus,
                    "the text: a built-in name or a path, as data.corpus (default: the config's)")
      ->check(non_empty("a corpus"));
  train->add_option("--vocab-size", a->vocab_size,
                    "tokens in the vocabulary, the 5 special tokens included (default: the "
                    "config's data.vocab_size)")
      ->check(integer_in(16));
  train->add_flag("--cased", a->cased,
                  "keep case and accents (data.lower_case false); the runs that use the "
                  "vocabulary need data.lower_case: false too");
  train->add_option("--out,-o", a->out, "the vocab.txt to write")->required()->check(non_empty("a file"));
  train->add_flag("--overwrite", a->overwrite, "replace the file at --out");
  return {cmd, [a]() {
            ConfigArgs c = a->config;
            if (!a->corpus.empty()) c.sets.push_back("data.corpus=" + a->corpus);
            if (a->vocab_size > 0) c.sets.push_back(fmt::format("data.vocab_size={}", a->vocab_size));
            if (a->cased) c.sets.push_back("data.lower_case=false");
            const LoadedConfig cfg = c.load();
            const VocabTrainReport r = train_wordpiece_vocab_file(cfg.config, a->out, a->overwrite);
            std::cout << fmt::format("wrote {} tokens to {} (trained on the training split of {})\n",
                                     r.tokens, a->out, r.data);
            std::cout << fmt::format("use it with: --set data.tokenizer=wordpiece --set "
                                     "data.vocab_file={}{}\n",
                                     a->out, a->cased ? " --set data.lower_case=false" : "");
            return 0;
          }};
}

}  // namespace relpos::app

#include "core/train/vocab_training.h"

#include <fmt/format.h>

#include <filesystem>

#include "core/data/task.h"
#include "core/task/task_registry.h"
#include "core/util/errors.h"
#include "core/util/text_util.h"
#include "core/train/run_folder.h"

namespace relpos {

VocabTrainReport train_wordpiece_vocab_file(const Config& cfg, const std::string& out,
                                            bool overwrite) {
  namespace fs = std::filesystem;
  if (!task_info(cfg.task.type).tokenized)
    throw ConfigError(fmt::format("tokenizer train: task.type {} makes its own symbols and reads "
                                  "no text",
                                  cfg.task.type),
                      "give the task of the runs the vocabulary is for (mlm, clm, classify, "
                      "span_qa)");
  if (fs::exists(out) && !overwrite)
    throw ConfigError(fmt::format("tokenizer train: --out {}: exists", out),
                      "pass --overwrite to replace it, or choose another --out");
  Config c = cfg;
  c.data.tokenizer = "wordpiece";
  c.data.vocab_file.clear();
  const auto data = make_task_data(c);  // trains (or finds in the cache) the vocabulary
  VocabTrainReport r;
  r.cached = data->tokenizer().model_file();
  r.tokens = data->vocab_size();
  r.data = data->describe();
  const fs::path parent = fs::path(out).parent_path();
  std::error_code ec;
  if (!parent.empty()) fs::create_directories(parent, ec);
  write_text_atomic(out, read_file(r.cached, "WordPiece vocabulary"));
  return r;
}

}  // namespace relpos

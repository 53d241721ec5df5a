// make_task_data: the corpus, the split, the tokenizer and the task of a config.
#include "core/data/task.h"

#include <fmt/format.h>

#include "core/data/corpus.h"
#include "core/data/tasks.h"

namespace relpos {

const char* split_name(Split s) {
  switch (s) {
    case Split::Train:
      return "train";
    case Split::Valid:
      return "valid";
    case Split::Test:
      return "test";
  }
  return "?";
}

bool is_synthetic_task(const std::string& type) {
  return type == "copy" || type == "reverse" || type == "sort" || type == "shift" ||
         type == "recall" || type == "marker_distance";
}

std::string split_sizes(size_t train, size_t valid, size_t test) {
  return fmt::format("train {} / valid {} / test {}", train, valid, test);
}

std::unique_ptr<TaskData> make_task_data(const Config& cfg) {
  const std::string& type = cfg.task.type;
  if (is_synthetic_task(type)) return make_synthetic_task(cfg);
  Corpus corpus = load_corpus(cfg);
  if (type == "classify") return make_classify_task(cfg, std::move(corpus));
  if (type == "span_qa") return make_span_qa_task(cfg, std::move(corpus));
  return make_lm_task(cfg, std::move(corpus));
}

}  // namespace relpos

#include "core/train/run_model.h"

#include <fmt/format.h>

#include <filesystem>

#include "core/io/checkpoint.h"
#include "core/task/task_registry.h"
#include "core/train/trainer.h"
#include "core/util/errors.h"

namespace relpos {

LoadedRun load_run(const std::string& dir, const std::vector<std::string>& overrides) {
  LoadedRun run;
  run.dir = dir;
  run.config = load_run_config(dir, overrides);
  const Config& cfg = run.config.config;
  run.device = parse_device(cfg.device);
  Config data_cfg = cfg;
  // Every sentencepiece run keeps its tokenizer: without it the ids of the checkpoint's
  // embeddings would be those of whatever tokenizer a new training produced.
  if (cfg.data.tokenizer == "sentencepiece" && task_info(cfg.task.type).tokenized &&
      cfg.data.tokenizer_file.empty() && !std::filesystem::exists(run_tokenizer_path(dir)))
    throw ConfigError(fmt::format("{}: missing: the run's sentencepiece tokenizer",
                                  run_tokenizer_path(dir)),
                      "restore it from a copy of the run folder; the embeddings were trained on "
                      "its token ids");
  if (cfg.data.tokenizer == "wordpiece" && task_info(cfg.task.type).tokenized &&
      cfg.data.vocab_file.empty() && !std::filesystem::exists(run_vocab_path(dir)))
    throw ConfigError(fmt::format("{}: missing: the WordPiece vocabulary the run trained",
                                  run_vocab_path(dir)),
                      "restore it from a copy of the run folder; the embeddings were trained on "
                      "its token ids");
  use_run_tokenizer(dir, data_cfg);
  run.data = make_task_data(data_cfg);
  run.model = Model(cfg, run.data->vocab_size());
  // Strict: a parameter of the checkpoint the model has no use for (or one the model lacks)
  // means the model built from the config is not the model that was trained.
  load_model_parameters(run_checkpoint_path(dir), *run.model);
  run.model->to(run.device);
  run.model->eval();
  return run;
}

}  // namespace relpos

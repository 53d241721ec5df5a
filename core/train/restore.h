// Where a run's parameters start: a fresh seeded model, the run's own checkpoint (--resume), or
// the parameters of another run by name (--init-from, a drop-in fine-tune). docs/training.md,
// "Checkpoints and resume" and "--init-from".
#pragma once

#include <torch/nn/module.h>
#include <torch/optim/optimizer.h>

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "core/config/config.h"
#include "core/io/checkpoint.h"
#include "core/io/run_file.h"

namespace relpos {

// --resume continues the run that the folder's files describe. Only settings that leave the
// model, the data and the task alone may differ from the config the run started with (run.h5's
// `config` attribute; config.yaml when there is no run.h5): train.*, eval.*, device, threads,
// cpu_allocator, precision, sweep.*, name; anything else is a ConfigError naming each change.
// Returns the changes against config.yaml, which the caller records once every other check of
// the resume has passed (config.yaml stays the record of the run).
std::vector<std::string> check_resume_config(const std::string& dir, const Config& cfg);

struct Resumed {
  TrainState state;                         // the checkpoint's (model and optimizer loaded)
  std::optional<InitFromRecord> init_from;  // a resumed fine-tune's record (run.h5's /init_from)
  bool has_split_record = false;            // run.h5 has /split already
};

// Loads DIR/checkpoint.pt into `model` and `optimizer` and checks it against cfg.train.steps: a
// run cannot be cut back below the checkpoint's step (ConfigError), and a finished run has
// nothing left to resume (RunError). `main`: this process writes the run folder (rank 0); it
// rewrites config.yaml as `recorded_yaml` when there are `changes`, and reads run.h5's records.
// `say` gets the progress messages.
Resumed resume_from_checkpoint(const std::string& dir, const Config& cfg, bool main,
                               const std::string& recorded_yaml,
                               const std::vector<std::string>& changes, torch::nn::Module& model,
                               torch::optim::Optimizer& optimizer,
                               const std::function<void(const std::string&)>& say);

// Loads the parameters of run folder `source`'s checkpoint that `model` has with the same name
// and shape. More than half of the model new is a ConfigError (the models differ in size: the
// "fine-tune" would start from scratch). Returns the record of what was loaded.
InitFromRecord init_from_run(const std::string& source, torch::nn::Module& model,
                             const std::function<void(const std::string&)>& say);

}  // namespace relpos

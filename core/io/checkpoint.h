// Checkpoints: everything a run needs to continue exactly where it stopped. Written to a
// temporary name in the same folder, fsync'ed, then renamed, so a crash at any moment leaves
// either the previous checkpoint or the new one, never a torn file.
#pragma once

#include <torch/nn/module.h>
#include <torch/optim/optimizer.h>

#include <cstdint>
#include <string>
#include <vector>

namespace relpos {

struct TrainState {
  int64_t step = 0;                 // optimizer steps completed
  double best_metric = 0.0;         // early stopping
  int64_t evals_without_improvement = 0;
  bool has_best = false;
  // Train losses summed since the last logged step, so that a run resumed between two logged
  // steps logs the same averages as an uninterrupted one (absent in older checkpoints: zero).
  double window_loss = 0.0;
  int64_t window_steps = 0;
  int64_t skipped_batches = 0;      // batches skipped as non-finite (train.skip_nonfinite)
  // The checkpoint was saved by an interrupt during the evaluation after `step`: the resumed
  // run first does that step's evaluation, logging, snapshot and checkpoint.
  bool pending_post_step = false;
  double elapsed_seconds = 0.0;     // training wall time over every invocation so far
  torch::Tensor cpu_rng_state;      // torch's default CPU generator
  torch::Tensor cuda_rng_state;     // undefined on CPU runs (then not saved)
};

// Saves model parameters and buffers, optimizer state and train state to `path` atomically.
// RNG states: state.cpu_rng_state when defined, otherwise the current state of torch's default
// CPU generator; state.cuda_rng_state only when defined (the trainer sets it on CUDA runs).
// Throws RunError when the file cannot be written (the previous checkpoint is then unchanged).
void save_checkpoint(const std::string& path, torch::nn::Module& model,
                     torch::optim::Optimizer& optimizer, const TrainState& state);

// The current state of the default CUDA generator (initializes CUDA); undefined without CUDA.
torch::Tensor current_cuda_rng_state();

// Loads what save_checkpoint wrote, and sets torch's default CPU generator (and the CUDA one,
// when saved and available) to the saved states, which it also returns. Throws SchemaError naming
// the file when it is missing, truncated, or does not match the model (each mismatching
// parameter named with both shapes); the model is left unchanged then.
TrainState load_checkpoint(const std::string& path, torch::nn::Module& model,
                           torch::optim::Optimizer& optimizer);

// Loads the parameters and buffers of `path` into `model` (evaluating a trained run), strictly:
// a model parameter or buffer missing from the checkpoint, one of the checkpoint's the model
// lacks, or a shape that differs is a SchemaError naming each (the model is left unchanged then).
void load_model_parameters(const std::string& path, torch::nn::Module& model);

// What load_matching_parameters did with each parameter, by LibTorch parameter path: `loaded`
// and `initialised` (kept as the model initialised it) in the model's order, together every
// parameter of the model; `shape_mismatched`, the part of `initialised` that the checkpoint
// holds under the same name with another shape; `unused`, the checkpoint's parameters whose
// names the model lacks (sorted).
struct ParameterMatch {
  std::vector<std::string> loaded;
  std::vector<std::string> initialised;
  std::vector<std::string> shape_mismatched;
  std::vector<std::string> unused;
};

// Loads only the parameters of `path` whose names and shapes match `model` (fine-tuning from a
// pre-trained run, switching position variants) and says which those were.
ParameterMatch load_matching_parameters(const std::string& path, torch::nn::Module& model);

// What a checkpoint holds, as text for `relpos inspect`: its format version and size, the train
// state, the optimizer's parameter groups, and every parameter and buffer with its element type
// and shape (sorted by name). Verifies the checksum first; throws SchemaError like
// load_checkpoint for a missing, truncated, corrupt or foreign file.
std::string describe_checkpoint(const std::string& path);

// The step a checkpoint was saved at (its train state only: no model needed), for launchers that
// report what a restart resumes from. Throws SchemaError like load_checkpoint.
int64_t checkpoint_step(const std::string& path);

// True when `path` starts like a checkpoint (a zip archive) rather than an HDF5 file.
bool looks_like_checkpoint(const std::string& path);

}  // namespace relpos

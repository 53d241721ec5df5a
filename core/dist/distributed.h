// Data-parallel training over LibTorch's c10d process groups: Gloo on CPU, NCCL on CUDA when
// this LibTorch has it (Gloo otherwise). Launched like torchrun: every process reads RANK,
// WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE, MASTER_ADDR and MASTER_PORT; rank 0 serves the
// TCPStore the ranks meet through. Without WORLD_SIZE (or with 1) every call is a no-op, so the
// trainer runs the same code in one process.
//
// What the trainer does with it (docs/scaling.md):
//   - train.batch_size is the global batch B; rank r trains rows [r·B/W, (r+1)·B/W) of the
//     global batch `step`, so W ranks see exactly the rows one process with batch B sees;
//   - after backward, gradients are summed over ranks weighted by each rank's loss items (masked
//     tokens, rows) in a few flat buckets, which gives the gradient of the global batch's mean
//     loss, the quantity one process computes;
//   - parameters and buffers go from rank 0 to all ranks at start (and after a resume);
//   - only rank 0 evaluates, writes the run folder and prints progress; control decisions
//     (interrupt, early stop) are agreed so every rank leaves the loop at the same step.
// Failures: every collective and the store have a timeout (RELPOS_DIST_TIMEOUT seconds, default
// 600); a rank that dies closes its sockets, so the others fail at their next collective at once
// with a RunError naming the rank, the step and the operation.
#pragma once

#include <torch/nn/module.h>
#include <torch/types.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/data/task.h"

namespace relpos {

class RunFileWriter;

// The launch environment of this process.
struct DistEnv {
  int64_t rank = 0;
  int64_t world_size = 1;
  int64_t local_rank = 0;         // rank on this node (selects the GPU)
  int64_t local_world_size = 1;   // processes on this node (divides the CPU threads)
  std::string master_addr = "127.0.0.1";
  int64_t master_port = 29500;
  std::chrono::milliseconds timeout{600000};
  // RELPOS_DIST_BACKEND: "" picks NCCL for CUDA devices when built with it and Gloo otherwise;
  // "gloo" forces Gloo (CUDA tensors through host memory: several ranks can then share one
  // GPU, which NCCL refuses); "nccl" insists on NCCL and fails when it cannot be had.
  std::string backend;
  bool distributed() const { return world_size > 1; }
};

// Reads the variables above, RELPOS_DIST_TIMEOUT and RELPOS_DIST_BACKEND. Throws ConfigError
// naming the variable when one is malformed or they contradict each other (RANK >= WORLD_SIZE).
DistEnv dist_env_from_environment();

// Backends this build can use: "gloo", "nccl" (empty when built without c10d).
std::vector<std::string> available_backends();

class DataParallel {
 public:
  // Joins the process group (when env.distributed()). `requested` is the run's device: CUDA
  // without an index becomes cuda:<LOCAL_RANK> (modulo the visible GPUs); NCCL is used for CUDA
  // devices when built with it, Gloo otherwise.
  DataParallel(const DistEnv& env, torch::Device requested);
  ~DataParallel();
  DataParallel(const DataParallel&) = delete;
  DataParallel& operator=(const DataParallel&) = delete;

  int64_t rank() const;
  int64_t world_size() const;
  bool is_main() const { return rank() == 0; }
  torch::Device device() const;       // this rank's device
  std::string backend() const;        // "gloo", "nccl" or "none"
  // CPU threads for a process whose config says threads: 0 (automatic): physical cores /
  // LOCAL_WORLD_SIZE when several ranks share the node; 0 (configure_threads' automatic) otherwise.
  int64_t default_threads() const;

  // Copies rank 0's parameters and buffers to every rank and remembers the parameters whose
  // gradients backward() averages. Call after the model is built (and loaded, on resume).
  void attach(torch::nn::Module& model);

  // This rank's rows of the global training batch `step` (all of it in one process). Ranks
  // > 0 also reseed torch's generator from (seed, rank, step), so their dropout differs from
  // rank 0's and a resumed run draws what the uninterrupted one drew. Throws ConfigError when
  // the global batch does not split evenly.
  Batch local_batch(const TaskData& data, int64_t step, int64_t global_batch, int64_t seed);
  // The same, from global batch `step` already built (by a BatchPrefetcher).
  Batch local_rows(const Batch& global, int64_t step, int64_t global_batch, int64_t seed);

  // Backward of this rank's mean loss over `items` loss items, then (distributed) the
  // gradients of all ranks combined into the gradient of the global mean loss. Returns the
  // global mean loss, identical on every rank (NaN on every rank when it is NaN on one).
  // Also exchanges the ranks' interrupt flags (see stop_requested()).
  double backward(const torch::Tensor& loss, int64_t items, int64_t step);
  // The loss items of the last backward() over all ranks (0: no rank's rows had a target).
  int64_t last_global_items() const;

  // One process: a SIGINT/SIGTERM arrived. Distributed: some rank had one at the last
  // backward() — the same answer on every rank, so they stop at the same step.
  bool stop_requested() const;

  // Rank 0's value on every rank.
  int64_t broadcast_from_main(int64_t value, const std::string& what);
  void barrier(const std::string& what);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// The run file of ranks > 0: accepts every write and keeps nothing (only rank 0 writes).
std::unique_ptr<RunFileWriter> discarding_run_file();

// Test hook: RELPOS_FAULT="RANK:STEP[:hang|:always]" makes that rank die by SIGKILL (or stop by
// SIGSTOP, to test timeouts) when it reaches STEP, on the first attempt only (not once the
// launcher restarted the ranks: RELPOS_RESTART_COUNT above 0), or with `always` (SIGKILL) on
// every attempt. Called by local_batch().
void maybe_inject_fault(int64_t rank, int64_t step);

}  // namespace relpos

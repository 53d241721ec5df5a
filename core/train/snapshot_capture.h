// What a snapshot of a run holds (docs/hdf5-schema.md, /snapshots/step_<N>/): attention
// probabilities averaged over the probe set, each encoding's position-only scores, and every
// position tensor the encodings export.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "core/config/config.h"
#include "core/data/task.h"
#include "core/io/run_file.h"
#include "core/model/model.h"

namespace relpos {

struct SnapshotContent {
  torch::Tensor attention;                     // (L,H,T,T) float32, CPU; each query row
                                               // averaged over the probes where it is a real
                                               // token (all probes where it is in none)
  std::vector<NamedTensor> position_scores;    // per encoding: (L,H,T,T), or (1,H,T,T) at layer 0
                                               // for encodings that add to the input
  std::map<std::string, std::vector<NamedTensor>> position;  // encoding -> exported tensors
};

// Runs the probe batch (eval mode, no gradients) and collects the snapshot.
SnapshotContent compute_snapshot(Model& model, const Batch& probe, const SnapshotConfig& cfg,
                                 torch::Device device);

// The steps at which a run of `steps` steps takes snapshots: 0, every `every_percent` % of
// training, the last step, and the explicit list; sorted, unique.
std::vector<int64_t> snapshot_steps(const SnapshotConfig& cfg, int64_t steps);

// Every parameter of the model by its LibTorch path, float32 on CPU.
std::vector<NamedTensor> parameter_tensors(torch::nn::Module& model);

}  // namespace relpos

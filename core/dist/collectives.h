// The few c10d collectives the trainer needs, behind an interface, so that only
// collectives.cpp sees the c10d headers (their base classes differ between LibTorch versions,
// and ProcessGroupGloo.hpp needs the gloo headers).
#pragma once

#include <torch/types.h>

#include <memory>
#include <string>
#include <vector>

#include "core/dist/distributed.h"

namespace relpos {

class Collectives {
 public:
  virtual ~Collectives() = default;
  virtual std::string name() const = 0;
  // Sums each tensor over the ranks, in place (all started, then all waited for).
  virtual void allreduce_sum(std::vector<torch::Tensor>& tensors) = 0;
  // Rank 0's tensor into every rank's, in place.
  virtual void broadcast(torch::Tensor& tensor) = 0;
  virtual void barrier() = 0;
};

// Connects to the TCPStore at env.master_addr:master_port (rank 0 serves it) and creates the
// process group: NCCL for CUDA devices when built with it, Gloo otherwise (env.backend
// overrides). Throws when the other ranks do not arrive within env.timeout or no backend fits.
std::unique_ptr<Collectives> make_collectives(const DistEnv& env, torch::Device device);

std::vector<std::string> compiled_backends();

}  // namespace relpos

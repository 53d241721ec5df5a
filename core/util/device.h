// The `device` config key as a LibTorch device, checked against what this LibTorch and machine
// have: "cpu", "cuda" or "cuda:N".
#pragma once

#include <torch/types.h>

#include <string>

namespace relpos {

// Throws ConfigError naming the key when CUDA is asked for but absent, or the GPU index is not
// visible.
torch::Device parse_device(const std::string& device);

}  // namespace relpos

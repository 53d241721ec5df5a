#include "core/util/device.h"

#include <fmt/format.h>
#include <torch/cuda.h>

#include "core/util/errors.h"

namespace relpos {

torch::Device parse_device(const std::string& device) {
  if (device == "cpu") return torch::kCPU;
  if (!torch::cuda::is_available())
    throw ConfigError(fmt::format("device: '{}' asked for, but CUDA is not available", device),
                      "this LibTorch has no CUDA or no GPU is visible; use device: cpu, or build "
                      "against a CUDA LibTorch (docs/scaling.md, \"CUDA\")");
  const torch::Device d(device);
  const auto visible = static_cast<int64_t>(torch::cuda::device_count());
  if (d.has_index() && d.index() >= visible)
    throw ConfigError(fmt::format("device: '{}' asked for, but {} GPU(s) are visible", device, visible),
                      "use cuda (GPU 0, or the rank's LOCAL_RANK under data parallelism) or cuda:0..");
  return d;
}

}  // namespace relpos

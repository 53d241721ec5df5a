#include "core/util/precision.h"

#include <ATen/autocast_mode.h>
#include <torch/version.h>

namespace relpos {

namespace {

// LibTorch 2.4 keyed the autocast state by device type and deprecated the per-device
// functions (is_enabled, set_autocast_gpu_dtype, ...) that 1.13 has only.
#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 4)
bool autocast_on(bool cuda) { return at::autocast::is_autocast_enabled(cuda ? at::kCUDA : at::kCPU); }
void set_autocast_on(bool cuda, bool on) {
  at::autocast::set_autocast_enabled(cuda ? at::kCUDA : at::kCPU, on);
}
c10::ScalarType autocast_dtype(bool cuda) {
  return at::autocast::get_autocast_dtype(cuda ? at::kCUDA : at::kCPU);
}
void set_autocast_dtype(bool cuda, c10::ScalarType t) {
  at::autocast::set_autocast_dtype(cuda ? at::kCUDA : at::kCPU, t);
}
#else
bool autocast_on(bool cuda) {
  return cuda ? at::autocast::is_enabled() : at::autocast::is_cpu_enabled();
}
void set_autocast_on(bool cuda, bool on) {
  if (cuda)
    at::autocast::set_enabled(on);
  else
    at::autocast::set_cpu_enabled(on);
}
c10::ScalarType autocast_dtype(bool cuda) {
  return cuda ? at::autocast::get_autocast_gpu_dtype() : at::autocast::get_autocast_cpu_dtype();
}
void set_autocast_dtype(bool cuda, c10::ScalarType t) {
  if (cuda)
    at::autocast::set_autocast_gpu_dtype(t);
  else
    at::autocast::set_autocast_cpu_dtype(t);
}
#endif

}  // namespace

PrecisionScope::PrecisionScope(const std::string& precision, const c10::Device& device) {
  if (precision != "bf16") return;
  cuda_ = device.is_cuda();
  was_enabled_ = autocast_on(cuda_);
  was_dtype_ = autocast_dtype(cuda_);
  set_autocast_dtype(cuda_, at::kBFloat16);
  set_autocast_on(cuda_, true);
  at::autocast::increment_nesting();
  active_ = true;
}

PrecisionScope::~PrecisionScope() {
  if (!active_) return;
  // The cast copies of the parameters are cached while autocast is on; drop them when the
  // outermost scope ends (the parameters change at the next optimizer step).
  if (at::autocast::decrement_nesting() == 0) at::autocast::clear_cache();
  set_autocast_on(cuda_, was_enabled_);
  set_autocast_dtype(cuda_, was_dtype_);
}

}  // namespace relpos

#include "core/util/precision.h"

#include <ATen/autocast_mode.h>

namespace relpos {

PrecisionScope::PrecisionScope(const std::string& precision, const c10::Device& device) {
  if (precision != "bf16") return;
  cuda_ = device.is_cuda();
  if (cuda_) {
    was_enabled_ = at::autocast::is_enabled();
    was_dtype_ = at::autocast::get_autocast_gpu_dtype();
    at::autocast::set_autocast_gpu_dtype(at::kBFloat16);
    at::autocast::set_enabled(true);
  } else {
    was_enabled_ = at::autocast::is_cpu_enabled();
    was_dtype_ = at::autocast::get_autocast_cpu_dtype();
    at::autocast::set_autocast_cpu_dtype(at::kBFloat16);
    at::autocast::set_cpu_enabled(true);
  }
  at::autocast::increment_nesting();
  active_ = true;
}

PrecisionScope::~PrecisionScope() {
  if (!active_) return;
  // The cast copies of the parameters are cached while autocast is on; drop them when the
  // outermost scope ends (the parameters change at the next optimizer step).
  if (at::autocast::decrement_nesting() == 0) at::autocast::clear_cache();
  if (cuda_) {
    at::autocast::set_enabled(was_enabled_);
    at::autocast::set_autocast_gpu_dtype(was_dtype_);
  } else {
    at::autocast::set_cpu_enabled(was_enabled_);
    at::autocast::set_autocast_cpu_dtype(was_dtype_);
  }
}

}  // namespace relpos

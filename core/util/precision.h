// Config::precision: forward passes under bfloat16 autocast.
#pragma once

#include <c10/core/Device.h>
#include <c10/core/DispatchKeySet.h>
#include <c10/core/ScalarType.h>
#include <c10/core/impl/LocalDispatchKeySet.h>

#include <string>

namespace relpos {

// For its lifetime, the forward passes of this thread run under LibTorch's autocast with
// bfloat16 on `device`'s type when `precision` is "bf16" (matrix products and the other
// autocast ops in bfloat16, reductions such as softmax and the losses in float32; parameters,
// gradients and optimizer state stay float32); "fp32" does nothing. Restores the previous
// autocast state on exit. Backward passes need no scope: autograd replays the casts.
class PrecisionScope {
 public:
  PrecisionScope(const std::string& precision, const c10::Device& device);
  ~PrecisionScope();
  PrecisionScope(const PrecisionScope&) = delete;
  PrecisionScope& operator=(const PrecisionScope&) = delete;

 private:
  bool active_ = false;
  bool cuda_ = false;
  bool was_enabled_ = false;
  c10::ScalarType was_dtype_ = c10::ScalarType::Float;
};

// Autocast off for the scope's lifetime, for the hand-written autograd Functions: their
// forward and backward must see one dtype (call them with inputs cast to the widest of the
// inputs' dtypes); autocast would otherwise hand their backward a mix of bfloat16 and float32.
class AutocastOff {
 public:
  AutocastOff() : guard_(c10::autocast_dispatch_keyset) {}

 private:
  c10::impl::ExcludeDispatchKeyGuard guard_;
};

}  // namespace relpos

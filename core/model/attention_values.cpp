#include "core/model/attention_values.h"

#include <ATen/Dispatch.h>
#include <torch/autograd.h>

#include "core/model/dropout.h"
#include "core/util/precision.h"

namespace relpos {
namespace {

using torch::Tensor;

// probs.masked_fill(drop, 0).mul_(scale), the same values (the scale in x's dtype, as mul_ takes
// a double), in one pass for contiguous float and double CPU tensors; no autograd.
Tensor drop_and_scale(const Tensor& x, const Tensor& drop, double scale) {
  const auto dt = x.scalar_type();
  if (!x.device().is_cpu() || (dt != torch::kFloat && dt != torch::kDouble) ||
      x.sizes() != drop.sizes())
    return x.masked_fill(drop, 0.0).mul_(scale);
  const Tensor xc = x.contiguous(), dc = drop.contiguous();
  auto out = torch::empty_like(xc);
  AT_DISPATCH_FLOATING_TYPES(dt, "drop_and_scale", [&] {
    const scalar_t s = static_cast<scalar_t>(scale);
    const scalar_t* in = xc.data_ptr<scalar_t>();
    const bool* d = dc.data_ptr<bool>();
    scalar_t* o = out.data_ptr<scalar_t>();
    const int64_t n = xc.numel();
    for (int64_t i = 0; i < n; ++i) o[i] = d[i] ? scalar_t(0) : in[i] * s;
  });
  return out;
}

// dropped = drop_and_scale(probs): its gradient is the incoming one dropped and scaled the same
// way (masked_fill's and mul_'s backward: scaled, then zero where dropped). Keeps the bool mask.
struct DropProbs : public torch::autograd::Function<DropProbs> {
  static Tensor forward(torch::autograd::AutogradContext* ctx, const Tensor& probs,
                        const Tensor& drop, double scale) {
    ctx->save_for_backward({drop});
    ctx->saved_data["scale"] = scale;
    return drop_and_scale(probs, drop, scale);  // (B,H,T,T)
  }

  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grads) {
    if (!grads[0].defined()) return {Tensor(), Tensor(), Tensor()};
    const Tensor drop = ctx->get_saved_variables()[0];
    const double scale = ctx->saved_data["scale"].toDouble();
    return {drop_and_scale(grads[0], drop, scale), Tensor(), Tensor()};
  }
};

// z = dropped·v with dropped = probs.masked_fill(drop, 0)·scale recomputed in backward.
struct DroppedValues : public torch::autograd::Function<DroppedValues> {
  static Tensor forward(torch::autograd::AutogradContext* ctx, const Tensor& dropped,
                        const Tensor& v, const Tensor& probs, const Tensor& drop, double scale) {
    ctx->save_for_backward({v, probs, drop});
    ctx->saved_data["scale"] = scale;
    return torch::matmul(dropped, v);  // (B,H,T,d)
  }

  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grads) {
    auto saved = ctx->get_saved_variables();
    const Tensor &v = saved[0], &probs = saved[1], &drop = saved[2];
    const double scale = ctx->saved_data["scale"].toDouble();
    const Tensor& g = grads[0];                                 // (B,H,T,d)
    auto grad_dropped = torch::matmul(g, v.transpose(-1, -2));  // (B,H,T,T)
    auto dropped = drop_and_scale(probs, drop, scale);          // (B,H,T,T)
    auto grad_v = torch::matmul(dropped.transpose(-1, -2), g);  // (B,H,T,d)
    return {grad_dropped, grad_v, Tensor(), Tensor(), Tensor()};
  }
};

}  // namespace

std::pair<Tensor, Tensor> attend_values(const Tensor& probs, const Tensor& v, double p,
                                        bool training) {
  TORCH_CHECK(probs.dim() == 4 && v.dim() == 4 && probs.size(-1) == v.size(-2),
              "attend_values: probabilities ", probs.sizes(), " and values ", v.sizes(),
              " do not match");
  if (!training || p <= 0.0) return {torch::matmul(probs, v), probs};  // (B,H,T,d), (B,H,T,T)
  if (p >= 1.0) {
    auto dropped = probs * 0.0;                   // (B,H,T,T) everything dropped
    return {torch::matmul(dropped, v), dropped};  // (B,H,T,d)
  }
  auto drop = bernoulli_mask(probs.sizes(), p, probs.options());  // (B,H,T,T)
  const double scale = 1.0 / (1.0 - p);
  // Keeps only the bool mask for its gradient, as masked_fill and an in-place scale would.
  auto dropped = DropProbs::apply(probs, drop, scale);  // (B,H,T,T)
  // One dtype, outside autocast (precision: bf16 gives bfloat16 values, float32 probabilities).
  const AutocastOff no_autocast;
  const auto dt = c10::promoteTypes(probs.scalar_type(), v.scalar_type());
  auto z = DroppedValues::apply(dropped.to(dt), v.to(dt), probs.to(dt), drop, scale);  // (B,H,T,d)
  return {z, dropped};
}

}  // namespace relpos

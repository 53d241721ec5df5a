#include "core/model/attention_values.h"

#include <torch/autograd.h>

#include "core/util/precision.h"

namespace relpos {
namespace {

using torch::Tensor;

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
    const Tensor& g = grads[0];                                            // (B,H,T,d)
    auto grad_dropped = torch::matmul(g, v.transpose(-1, -2));             // (B,H,T,T)
    auto dropped = probs.masked_fill(drop, 0.0).mul_(scale);               // (B,H,T,T)
    auto grad_v = torch::matmul(dropped.transpose(-1, -2), g);             // (B,H,T,d)
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
    auto dropped = probs * 0.0;                 // (B,H,T,T) everything dropped
    return {torch::matmul(dropped, v), dropped};  // (B,H,T,d)
  }
  auto drop = torch::empty(probs.sizes(), probs.options().dtype(torch::kBool))
                  .bernoulli_(p);                                            // (B,H,T,T)
  const double scale = 1.0 / (1.0 - p);
  // masked_fill keeps only the bool mask for its gradient; the in-place scale keeps nothing.
  auto dropped = probs.masked_fill(drop, 0.0).mul_(scale);  // (B,H,T,T)
  // One dtype, outside autocast (precision: bf16 gives bfloat16 values, float32 probabilities).
  const AutocastOff no_autocast;
  const auto dt = c10::promoteTypes(probs.scalar_type(), v.scalar_type());
  auto z = DroppedValues::apply(dropped.to(dt), v.to(dt), probs.to(dt), drop, scale);  // (B,H,T,d)
  return {z, dropped};
}

}  // namespace relpos

// The "skew" between products with the distinct relative vectors and the (T,T) score layout:
//   expand  out[i,j] = x[i, clamp(j - i + o, 0, W-1)]       x (...,Tq,W) -> out (...,Tq,Tk)
//   reduce  y[i,w]   = Σ_j g[i,j] [clamp(j - i + o, 0, W-1) = w]   its adjoint (...,Tq,W)
// With W = 2K+1 and o = K, clamp(j-i+K, 0, 2K) = c(j-i)+K: expand lays out q·a_{c(j-i)}, reduce
// sums attention probabilities per clipped distance (Shaw's value term). Each is the other's
// gradient. A key-layout pair (out[i,j] = x[j, ...], rows of x are keys) serves k·a_{c(j-i)}
// without a transposed (T,T) copy in either direction. On the CPU a row is three contiguous
// pieces (left fill, band copy, right fill), so both run at memory speed without an index
// tensor; elsewhere (CUDA, bfloat16) gather / scatter_add with a (Tq,Tk) index.
#include <ATen/Dispatch.h>
#include <ATen/Parallel.h>
#include <torch/autograd.h>

#include <algorithm>

#include "core/position/relative_ops.h"

namespace relpos {

using torch::Tensor;

namespace {

struct RowSplit {
  int64_t lo, hi;  // j < lo: w = 0 (left fill); lo <= j < hi: w = j - i + o; j >= hi: w = W-1
};

RowSplit split_row(int64_t i, int64_t Tk, int64_t W, int64_t o) {
  const int64_t lo = std::clamp<int64_t>(i - o + 1, 0, Tk);
  const int64_t hi = std::clamp<int64_t>(i - o + W - 1, lo, Tk);
  return {lo, hi};
}

template <class S>
S row_sum(const S* p, int64_t n) {
  constexpr int kLanes = 16;  // independent partial sums, so that the loop vectorises
  S acc[kLanes] = {};
  int64_t j = 0;
  for (; j + kLanes <= n; j += kLanes)
    for (int l = 0; l < kLanes; ++l) acc[l] += p[j + l];
  S s = 0;
  for (; j < n; ++j) s += p[j];
  for (int l = 0; l < kLanes; ++l) s += acc[l];
  return s;
}

thread_local bool force_tensor_ops = false;

// (Tq,Tk) int64: clamp(j - i + o, 0, W-1), for the gather / scatter_add path.
Tensor skew_index(int64_t Tq, int64_t Tk, int64_t W, int64_t o, torch::Device device) {
  auto opts = torch::TensorOptions().dtype(torch::kLong).device(device);
  auto i = torch::arange(Tq, opts).unsqueeze(1);  // (Tq,1)
  auto j = torch::arange(Tk, opts).unsqueeze(0);  // (1,Tk)
  return (j - i + o).clamp(0, W - 1);             // (Tq,Tk)
}

// zeros(sizes).scatter_add(-1, idx, g), summed in float32 when g is bfloat16 or half: a
// clipped distance's bin collects up to T values, far more than 8 mantissa bits can add up.
Tensor scatter_sum(const Tensor& g, const Tensor& idx, const std::vector<int64_t>& sizes) {
  const bool low = g.scalar_type() == torch::kBFloat16 || g.scalar_type() == torch::kHalf;
  const auto acc = low ? torch::kFloat : g.scalar_type();
  auto out = torch::zeros(sizes, g.options().dtype(acc)).scatter_add(-1, idx, g.to(acc));
  return out.to(g.scalar_type());
}

Tensor expand_impl(const Tensor& x, int64_t Tk, int64_t o) {
  const int64_t Tq = x.size(-2), W = x.size(-1);
  auto sizes = x.sizes().vec();
  sizes.back() = Tk;
  if (!detail::cpu_kernels_take(x)) {
    auto idx = skew_index(Tq, Tk, W, o, x.device()).expand(sizes);  // (...,Tq,Tk)
    return x.gather(-1, idx);                                        // (...,Tq,Tk)
  }
  auto xc = x.contiguous();
  auto out = torch::empty(sizes, x.options());  // (...,Tq,Tk)
  const int64_t rows = xc.numel() / W;
  AT_DISPATCH_FLOATING_TYPES(x.scalar_type(), "relative_expand", [&] {
    const scalar_t* xp = xc.data_ptr<scalar_t>();
    scalar_t* op = out.data_ptr<scalar_t>();
    at::parallel_for(0, rows, 16, [&](int64_t r0, int64_t r1) {
      for (int64_t r = r0; r < r1; ++r) {
        const int64_t i = r % Tq;
        const scalar_t* xr = xp + r * W;
        scalar_t* orow = op + r * Tk;
        const RowSplit s = split_row(i, Tk, W, o);
        std::fill(orow, orow + s.lo, xr[0]);
        std::copy(xr + (s.lo - i + o), xr + (s.hi - i + o), orow + s.lo);
        std::fill(orow + s.hi, orow + Tk, xr[W - 1]);
      }
    });
  });
  return out;
}

Tensor reduce_impl(const Tensor& g, int64_t W, int64_t o) {
  const int64_t Tq = g.size(-2), Tk = g.size(-1);
  auto sizes = g.sizes().vec();
  sizes.back() = W;
  if (!detail::cpu_kernels_take(g)) {
    auto idx = skew_index(Tq, Tk, W, o, g.device()).expand(g.sizes());  // (...,Tq,Tk)
    return scatter_sum(g, idx, sizes);                                   // (...,Tq,W)
  }
  auto gc = g.contiguous();
  auto out = torch::zeros(sizes, g.options());  // (...,Tq,W)
  const int64_t rows = gc.numel() / Tk;
  AT_DISPATCH_FLOATING_TYPES(g.scalar_type(), "relative_reduce", [&] {
    const scalar_t* gp = gc.data_ptr<scalar_t>();
    scalar_t* op = out.data_ptr<scalar_t>();
    at::parallel_for(0, rows, 16, [&](int64_t r0, int64_t r1) {
      for (int64_t r = r0; r < r1; ++r) {
        const int64_t i = r % Tq;
        const scalar_t* grow = gp + r * Tk;
        scalar_t* yr = op + r * W;
        const RowSplit s = split_row(i, Tk, W, o);
        yr[0] += row_sum(grow, s.lo);
        for (int64_t j = s.lo; j < s.hi; ++j) yr[j - i + o] += grow[j];
        yr[W - 1] += row_sum(grow + s.hi, Tk - s.hi);
      }
    });
  });
  return out;
}

// Key layout (square, T = Tq = Tk): out[i,j] = x[j, clamp(j - i + o, 0, W-1)], x (...,T,W) holding
// one row per key. Written row by row of out (contiguous), reading x with a stride; per
// (batch, head) slice x is small (T·W) and stays in cache.
Tensor expand_keys_impl(const Tensor& x, int64_t o) {
  const int64_t T = x.size(-2), W = x.size(-1);
  if (!detail::cpu_kernels_take(x)) {
    // out[i,j] = x[j, idx[i,j]] = the flattened slice at j·W + idx[i,j], gathered in the (i,j)
    // layout from the slice broadcast over the rows i. The output is a tensor of its own, not a
    // transposed view: a term added to in place (huang's sum of terms) may not be a view made
    // inside an autograd function. (expand_impl(x).transpose would read x[j, clamp(i - j + o)],
    // the opposite distance.)
    auto sizes = x.sizes().vec();
    sizes.back() = T;
    const auto opts = torch::TensorOptions().dtype(torch::kLong).device(x.device());
    auto flat = skew_index(T, T, W, o, x.device()) + torch::arange(T, opts).unsqueeze(0) * W;
    auto rows = sizes;
    rows.back() = T * W;
    return x.flatten(-2).unsqueeze(-2).expand(rows).gather(-1, flat.expand(sizes));  // (...,T,T)
  }
  auto xc = x.contiguous();
  auto sizes = x.sizes().vec();
  sizes.back() = T;
  auto out = torch::empty(sizes, x.options());  // (...,T,T)
  const int64_t slices = xc.numel() / (T * W);
  AT_DISPATCH_FLOATING_TYPES(x.scalar_type(), "relative_expand_keys", [&] {
    const scalar_t* xp = xc.data_ptr<scalar_t>();
    scalar_t* op = out.data_ptr<scalar_t>();
    at::parallel_for(0, slices * T, 16, [&](int64_t r0, int64_t r1) {
      for (int64_t r = r0; r < r1; ++r) {
        const int64_t i = r % T;
        const scalar_t* xs = xp + (r / T) * T * W;
        scalar_t* orow = op + r * T;
        // j - i + o <= 0 for j < lo; >= W-1 for j >= hi (key j's row, clipped ends).
        const RowSplit s = split_row(i, T, W, o);
        for (int64_t j = 0; j < s.lo; ++j) orow[j] = xs[j * W];
        for (int64_t j = s.lo; j < s.hi; ++j) orow[j] = xs[j * (W + 1) + o - i];
        for (int64_t j = s.hi; j < T; ++j) orow[j] = xs[j * W + W - 1];
      }
    });
  });
  return out;
}

// Adjoint of expand_keys_impl: y[j, w] = sum_i g[i,j] [clamp(j - i + o, 0, W-1) = w].
Tensor reduce_keys_impl(const Tensor& g, int64_t W, int64_t o) {
  const int64_t T = g.size(-1);
  if (!detail::cpu_kernels_take(g)) {
    auto gt = g.transpose(-1, -2);                                      // (...,T,T) [j,i]
    auto idx = skew_index(T, T, W, o, g.device()).t().expand(gt.sizes());  // (...,T,T) [j,i]
    auto sizes = g.sizes().vec();
    sizes.back() = W;
    return scatter_sum(gt, idx, sizes);                                 // (...,T,W)
  }
  auto gc = g.contiguous();
  auto sizes = g.sizes().vec();
  sizes.back() = W;
  auto out = torch::zeros(sizes, g.options());  // (...,T,W)
  const int64_t slices = gc.numel() / (T * T);
  AT_DISPATCH_FLOATING_TYPES(g.scalar_type(), "relative_reduce_keys", [&] {
    const scalar_t* gp = gc.data_ptr<scalar_t>();
    scalar_t* op = out.data_ptr<scalar_t>();
    // One slice per task: rows i of a slice all write into the same (T,W) block.
    at::parallel_for(0, slices, 1, [&](int64_t s0, int64_t s1) {
      for (int64_t sl = s0; sl < s1; ++sl) {
        const scalar_t* gs = gp + sl * T * T;
        scalar_t* ys = op + sl * T * W;
        for (int64_t i = 0; i < T; ++i) {
          const scalar_t* grow = gs + i * T;
          const RowSplit s = split_row(i, T, W, o);
          for (int64_t j = 0; j < s.lo; ++j) ys[j * W] += grow[j];
          for (int64_t j = s.lo; j < s.hi; ++j) ys[j * (W + 1) + o - i] += grow[j];
          for (int64_t j = s.hi; j < T; ++j) ys[j * W + W - 1] += grow[j];
        }
      }
    });
  });
  return out;
}

struct SkewReduceKeys;

struct SkewExpandKeys : public torch::autograd::Function<SkewExpandKeys> {
  static Tensor forward(torch::autograd::AutogradContext* ctx, const Tensor& x, int64_t o) {
    ctx->saved_data["W"] = x.size(-1);
    ctx->saved_data["o"] = o;
    return expand_keys_impl(x, o);
  }
  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grads);
};

struct SkewReduceKeys : public torch::autograd::Function<SkewReduceKeys> {
  static Tensor forward(torch::autograd::AutogradContext* ctx, const Tensor& g, int64_t W,
                        int64_t o) {
    ctx->saved_data["o"] = o;
    return reduce_keys_impl(g, W, o);
  }
  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grads) {
    return {SkewExpandKeys::apply(grads[0], ctx->saved_data["o"].toInt()), Tensor(), Tensor()};
  }
};

torch::autograd::variable_list SkewExpandKeys::backward(torch::autograd::AutogradContext* ctx,
                                                        torch::autograd::variable_list grads) {
  const int64_t W = ctx->saved_data["W"].toInt(), o = ctx->saved_data["o"].toInt();
  return {SkewReduceKeys::apply(grads[0], W, o), Tensor()};
}

struct SkewReduce;

struct SkewExpand : public torch::autograd::Function<SkewExpand> {
  static Tensor forward(torch::autograd::AutogradContext* ctx, const Tensor& x, int64_t Tk,
                        int64_t o) {
    ctx->saved_data["W"] = x.size(-1);
    ctx->saved_data["o"] = o;
    return expand_impl(x, Tk, o);
  }
  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grads);
};

struct SkewReduce : public torch::autograd::Function<SkewReduce> {
  static Tensor forward(torch::autograd::AutogradContext* ctx, const Tensor& g, int64_t W,
                        int64_t o) {
    ctx->saved_data["Tk"] = g.size(-1);
    ctx->saved_data["o"] = o;
    return reduce_impl(g, W, o);
  }
  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grads) {
    const int64_t Tk = ctx->saved_data["Tk"].toInt(), o = ctx->saved_data["o"].toInt();
    return {SkewExpand::apply(grads[0], Tk, o), Tensor(), Tensor()};
  }
};

torch::autograd::variable_list SkewExpand::backward(torch::autograd::AutogradContext* ctx,
                                                    torch::autograd::variable_list grads) {
  const int64_t W = ctx->saved_data["W"].toInt(), o = ctx->saved_data["o"].toInt();
  return {SkewReduce::apply(grads[0], W, o), Tensor(), Tensor()};
}

}  // namespace

namespace detail {
SkewTensorOpsScope::SkewTensorOpsScope() : previous_(force_tensor_ops) { force_tensor_ops = true; }
SkewTensorOpsScope::~SkewTensorOpsScope() { force_tensor_ops = previous_; }
bool cpu_kernels_take(const Tensor& t) {
  return !force_tensor_ops && t.device().is_cpu() &&
         (t.scalar_type() == torch::kFloat || t.scalar_type() == torch::kDouble);
}
}  // namespace detail

Tensor relative_expand(const Tensor& x, int64_t Tk, int64_t offset) {
  TORCH_CHECK(x.dim() >= 2 && x.size(-1) >= 1, "relative_expand: expected (...,Tq,W), got ",
              x.sizes());
  return SkewExpand::apply(x, Tk, offset);  // (...,Tq,Tk)
}

Tensor relative_expand_keys(const Tensor& x, int64_t offset) {
  TORCH_CHECK(x.dim() >= 2 && x.size(-1) >= 1, "relative_expand_keys: expected (...,T,W), got ",
              x.sizes());
  return SkewExpandKeys::apply(x, offset);  // (...,T,T)
}

Tensor relative_reduce(const Tensor& g, int64_t W, int64_t offset) {
  TORCH_CHECK(g.dim() >= 2 && W >= 1, "relative_reduce: expected (...,Tq,Tk) and W >= 1, got ",
              g.sizes(), " and W = ", W);
  return SkewReduce::apply(g, W, offset);  // (...,Tq,W)
}

}  // namespace relpos

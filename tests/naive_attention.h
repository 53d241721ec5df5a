// A naive multi-head attention written with plain loops over b, h, i, j, m (docs/variants.md), for
// tests that compare the real layer and a position variant against the paper's formula.
// The score of each pair is given by a callback written in the test from the variant's formula.
#pragma once

#include <torch/nn/modules/linear.h>
#include <torch/types.h>

#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>

#include "core/model/attention.h"

namespace relpos::test {

// Element of a float64 tensor of any strides: el(t, a, b, c).
template <class... I>
double el(const torch::Tensor& t, I... idx) {
  TORCH_CHECK(t.dim() == static_cast<int64_t>(sizeof...(I)) && t.scalar_type() == torch::kDouble,
              "el: expected a float64 tensor of ", sizeof...(I), " dims, got ", t.sizes(), " ",
              t.scalar_type());
  const int64_t ix[] = {static_cast<int64_t>(idx)...};
  int64_t off = 0;
  for (size_t n = 0; n < sizeof...(I); ++n) off += ix[n] * t.stride(static_cast<int64_t>(n));
  return t.data_ptr<double>()[off];
}

// y = x Wᵀ + b by loops, split into heads: x (B,T,D) -> (B,H,T,d).
inline torch::Tensor naive_heads(const torch::Tensor& x, const torch::nn::Linear& lin, int64_t H) {
  const int64_t B = x.size(0), T = x.size(1), D = x.size(2), d = D / H;
  auto out = torch::zeros({B, H, T, d}, torch::kDouble);  // (B,H,T,d)
  auto O = out.accessor<double, 4>();
  for (int64_t b = 0; b < B; ++b)
    for (int64_t t = 0; t < T; ++t)
      for (int64_t h = 0; h < H; ++h)
        for (int64_t m = 0; m < d; ++m) {
          double s = el(lin->bias, h * d + m);
          for (int64_t c = 0; c < D; ++c) s += el(x, b, t, c) * el(lin->weight, h * d + m, c);
          O[b][h][t][m] = s;
        }
  return out;
}

struct NaiveHeads {
  torch::Tensor q, k, v;  // (B,H,T,d) each
};

// e_ij for batch b, head h, query i, key j (the full score, content included).
using ScoreFn = std::function<double(int64_t b, int64_t h, int64_t i, int64_t j)>;
// Channel m of a vector added to v_j for the pair (i, j) in head h (Shaw's a^V); may be empty.
using ValueFn = std::function<double(int64_t h, int64_t i, int64_t j, int64_t m)>;

struct NaiveResult {
  torch::Tensor content;  // (B,H,T,T) q·k/√d
  torch::Tensor scores;   // (B,H,T,T) e, before masking
  torch::Tensor probs;    // (B,H,T,T) softmax over visible keys, 0 elsewhere
  torch::Tensor out;      // (B,T,D) after the output projection
};

inline NaiveResult naive_attend(const NaiveHeads& x, const MultiHeadAttentionImpl& attn,
                                bool causal, const ScoreFn& score, const ValueFn& value) {
  const int64_t B = x.q.size(0), H = x.q.size(1), T = x.q.size(2), d = x.q.size(3);
  const double rsd = 1.0 / std::sqrt(static_cast<double>(d));
  NaiveResult r;
  r.content = torch::zeros({B, H, T, T}, torch::kDouble);  // (B,H,T,T)
  r.scores = torch::zeros({B, H, T, T}, torch::kDouble);   // (B,H,T,T)
  r.probs = torch::zeros({B, H, T, T}, torch::kDouble);    // (B,H,T,T)
  auto z = torch::zeros({B, H, T, d}, torch::kDouble);     // (B,H,T,d)
  auto C = r.content.accessor<double, 4>(), E = r.scores.accessor<double, 4>();
  auto P = r.probs.accessor<double, 4>();
  auto Z = z.accessor<double, 4>();
  for (int64_t b = 0; b < B; ++b)
    for (int64_t h = 0; h < H; ++h)
      for (int64_t i = 0; i < T; ++i) {
        double mx = -std::numeric_limits<double>::infinity();
        for (int64_t j = 0; j < T; ++j) {
          double dot = 0;
          for (int64_t m = 0; m < d; ++m) dot += el(x.q, b, h, i, m) * el(x.k, b, h, j, m);
          C[b][h][i][j] = dot * rsd;
          E[b][h][i][j] = score(b, h, i, j);
          if (!causal || j <= i) mx = std::max(mx, E[b][h][i][j]);
        }
        double sum = 0;
        for (int64_t j = 0; j < T; ++j)
          if (!causal || j <= i) sum += std::exp(E[b][h][i][j] - mx);
        for (int64_t j = 0; j < T; ++j)
          P[b][h][i][j] = (!causal || j <= i) ? std::exp(E[b][h][i][j] - mx) / sum : 0.0;
        for (int64_t m = 0; m < d; ++m) {
          double s = 0;
          for (int64_t j = 0; j < T; ++j)
            s += P[b][h][i][j] * (el(x.v, b, h, j, m) + (value ? value(h, i, j, m) : 0.0));
          Z[b][h][i][m] = s;
        }
      }
  const int64_t D = H * d;
  r.out = torch::zeros({B, T, D}, torch::kDouble);  // (B,T,D)
  auto O = r.out.accessor<double, 3>();
  for (int64_t b = 0; b < B; ++b)
    for (int64_t t = 0; t < T; ++t)
      for (int64_t o = 0; o < D; ++o) {
        double s = el(attn.output->bias, o);
        for (int64_t h = 0; h < H; ++h)
          for (int64_t m = 0; m < d; ++m)
            s += Z[b][h][t][m] * el(attn.output->weight, o, h * d + m);
        O[b][t][o] = s;
      }
  return r;
}

}  // namespace relpos::test

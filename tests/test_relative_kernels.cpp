// The fast relative-term paths that `relpos bench` tuned (relative_qka.cpp's CPU kernel and
// tensor-op band, the skewed query/key terms, the value-term aggregation) against loops written
// here from the formulas, at sizes where the kernels' vector lanes and tails are both used
// (2K-1 >= 16 band entries), clipped and unclipped, float64 and float32.
#include <doctest/doctest.h>
#include <torch/autograd.h>
#include <torch/types.h>

#include <algorithm>
#include <functional>
#include <optional>
#include <vector>

#include "core/position/relative_ops.h"
#include "tests/tensor_compare.h"

using namespace relpos;

namespace {

int64_t clip(int64_t r, int64_t K) { return std::max(-K, std::min(K, r)); }

// e_ij = Σ_m q_im k_jm a_{c(j-i)+K, m}, one scalar product at a time (float64, autograd).
torch::Tensor naive_qka(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& a,
                        int64_t K) {
  const int64_t B = q.size(0), H = q.size(1), T = q.size(2);
  std::vector<torch::Tensor> rows;
  for (int64_t b = 0; b < B; ++b)
    for (int64_t h = 0; h < H; ++h)
      for (int64_t i = 0; i < T; ++i)
        for (int64_t j = 0; j < T; ++j)
          rows.push_back((q[b][h][i] * k[b][h][j] * a[clip(j - i, K) + K]).sum());
  return torch::stack(rows).view({B, H, T, T});
}

// e_ij = Σ_m x_im a_{c(j-i)+K, m} (query) or Σ_m x_jm a_{c(j-i)+K, m} (key).
torch::Tensor naive_qa(const torch::Tensor& x, const torch::Tensor& a, int64_t K, bool key) {
  const int64_t B = x.size(0), H = x.size(1), T = x.size(2);
  std::vector<torch::Tensor> rows;
  for (int64_t b = 0; b < B; ++b)
    for (int64_t h = 0; h < H; ++h)
      for (int64_t i = 0; i < T; ++i)
        for (int64_t j = 0; j < T; ++j)
          rows.push_back((x[b][h][key ? j : i] * a[clip(j - i, K) + K]).sum());
  return torch::stack(rows).view({B, H, T, T});
}

// z_i = Σ_j p_ij a_{c(j-i)+K}.
torch::Tensor naive_value(const torch::Tensor& p, const torch::Tensor& a, int64_t K) {
  const int64_t B = p.size(0), H = p.size(1), T = p.size(2);
  std::vector<torch::Tensor> rows;
  for (int64_t b = 0; b < B; ++b)
    for (int64_t h = 0; h < H; ++h)
      for (int64_t i = 0; i < T; ++i) {
        auto z = torch::zeros({a.size(1)}, a.options());
        for (int64_t j = 0; j < T; ++j) z = z + p[b][h][i][j] * a[clip(j - i, K) + K];
        rows.push_back(z);
      }
  return torch::stack(rows).view({B, H, T, a.size(1)});
}

struct Inputs {
  torch::Tensor q, k, a, p;
};

// q, k as attention makes them (a transposed view), a table, probabilities.
Inputs make_inputs(int64_t B, int64_t H, int64_t T, int64_t d, int64_t K, torch::Dtype dtype) {
  Inputs in;
  in.q = torch::randn({B, T, H, d}, dtype).transpose(1, 2).requires_grad_(true);  // (B,H,T,d)
  in.k = torch::randn({B, T, H, d}, dtype).transpose(1, 2).requires_grad_(true);  // (B,H,T,d)
  in.a = torch::randn({2 * K + 1, d}, dtype).requires_grad_(true);                 // (R,d)
  in.p = torch::softmax(torch::randn({B, H, T, T}, dtype), -1).requires_grad_(true);
  return in;
}

// Forward and the gradients of sum(G ⊙ out) w.r.t. `wrt`, for the fast op and the naive loop
// (evaluated in float64 on float64 copies of the same inputs).
void compare(const std::function<torch::Tensor(const Inputs&)>& fast,
             const std::function<torch::Tensor(const Inputs&)>& naive, const Inputs& in,
             const std::vector<int>& wrt, double tol) {
  auto out = fast(in);
  auto g = torch::randn(out.sizes(), out.options());
  auto grads = torch::autograd::grad({(out * g).sum()}, {in.q, in.k, in.a, in.p},
                                     /*grad_outputs=*/{}, /*retain_graph=*/false,
                                     /*create_graph=*/false, /*allow_unused=*/true);
  Inputs ref;
  ref.q = in.q.detach().to(torch::kDouble).requires_grad_(true);
  ref.k = in.k.detach().to(torch::kDouble).requires_grad_(true);
  ref.a = in.a.detach().to(torch::kDouble).requires_grad_(true);
  ref.p = in.p.detach().to(torch::kDouble).requires_grad_(true);
  auto expect = naive(ref);
  auto expect_grads =
      torch::autograd::grad({(expect * g.to(torch::kDouble)).sum()}, {ref.q, ref.k, ref.a, ref.p},
                            {}, false, false, true);
  const double scale = std::max(1.0, expect.abs().max().item<double>());
  CHECK(test::max_abs_diff(out, expect) < tol * scale);
  for (int w : wrt) {
    CAPTURE(w);
    REQUIRE(grads[w].defined());
    const double gs = std::max(1.0, expect_grads[w].abs().max().item<double>());
    CHECK(test::max_abs_diff(grads[w], expect_grads[w]) < tol * gs);
  }
}

struct Shape {
  int64_t T, K;
};
// Band widths 2M+1 = 23 (clipped, K-1 = 11) and 2T-1 = 23 (unclipped): the kernels' tiles of
// 16 distances run whole and cut short; lengths 30, 3 and 1 cut their tiles of 4 queries short;
// plus a short sequence and K = T-1 exactly.
// {40, 12}: two query blocks of 2K = 24 rows for the clipped triangles; {30, 5}: K too small to
// block (whole masked products).
const std::vector<Shape> kShapes = {{40, 12}, {60, 9}, {30, 5}, {12, 20}, {12, 11}, {3, 1}, {1, 2}};

}  // namespace

TEST_CASE("relative kernels: qka (CPU kernel and tensor-op band) vs the formula") {
  for (auto dtype : {torch::kDouble, torch::kFloat}) {
    const double tol = dtype == torch::kDouble ? 1e-10 : 2e-4;
    for (const auto& s : kShapes) {
      CAPTURE(s.T);
      CAPTURE(s.K);
      CAPTURE(dtype);
      auto in = make_inputs(2, 2, s.T, 5, s.K, dtype);
      auto naive = [&](const Inputs& r) { return naive_qka(r.q, r.k, r.a, s.K); };
      compare([&](const Inputs& x) { return relative_qka_term(x.q, x.k, x.a, s.K, false); },
              naive, in, {0, 1, 2}, tol);
      compare([&](const Inputs& x) {
                return relpos::detail::relative_qka_term_tensor_ops(x.q, x.k, x.a, s.K);
              },
              naive, in, {0, 1, 2}, tol);
    }
  }
}

TEST_CASE("relative kernels: query, key and value terms vs the formula") {
  for (auto dtype : {torch::kDouble, torch::kFloat}) {
    const double tol = dtype == torch::kDouble ? 1e-10 : 2e-4;
    for (const auto& s : kShapes) {
      CAPTURE(s.T);
      CAPTURE(s.K);
      CAPTURE(dtype);
      auto in = make_inputs(2, 2, s.T, 5, s.K, dtype);
      compare([&](const Inputs& x) { return relative_query_term(x.q, x.a, s.K, false); },
              [&](const Inputs& r) { return naive_qa(r.q, r.a, s.K, false); }, in, {0, 2}, tol);
      compare([&](const Inputs& x) { return relative_key_term(x.k, x.a, s.K, false); },
              [&](const Inputs& r) { return naive_qa(r.k, r.a, s.K, true); }, in, {1, 2}, tol);
      compare([&](const Inputs& x) { return relative_value_term(x.p, x.a, s.K, false); },
              [&](const Inputs& r) { return naive_value(r.p, r.a, s.K); }, in, {2, 3}, tol);
    }
  }
}

// CUDA and bfloat16 tensors take gather / scatter_add instead of the CPU row kernels; the scope
// sends float64 CPU tensors down that path so that it meets the same naive loops, gradients
// included.
TEST_CASE("relative kernels: the gather path (CUDA, bfloat16) vs the formula") {
  relpos::detail::SkewTensorOpsScope tensor_ops;
  for (const auto& s : kShapes) {
    CAPTURE(s.T);
    CAPTURE(s.K);
    auto in = make_inputs(2, 2, s.T, 5, s.K, torch::kDouble);
    compare([&](const Inputs& x) { return relative_query_term(x.q, x.a, s.K, false); },
            [&](const Inputs& r) { return naive_qa(r.q, r.a, s.K, false); }, in, {0, 2}, 1e-10);
    compare([&](const Inputs& x) { return relative_key_term(x.k, x.a, s.K, false); },
            [&](const Inputs& r) { return naive_qa(r.k, r.a, s.K, true); }, in, {1, 2}, 1e-10);
    compare([&](const Inputs& x) { return relative_value_term(x.p, x.a, s.K, false); },
            [&](const Inputs& r) { return naive_value(r.p, r.a, s.K); }, in, {2, 3}, 1e-10);
  }
}

// The same dispatch as on a GPU under precision: bf16, without forcing anything: bfloat16 CPU
// tensors skip the row kernels. Tolerance: bfloat16 keeps 8 bits of mantissa.
TEST_CASE("relative kernels: bfloat16 key and query terms follow the formula") {
  const int64_t T = 9, K = 3;
  auto in = make_inputs(1, 2, T, 4, K, torch::kDouble);
  auto bf = [](const torch::Tensor& t) { return t.detach().to(torch::kBFloat16); };
  auto key = relative_key_term(bf(in.k), bf(in.a), K, false).to(torch::kDouble);
  auto query = relative_query_term(bf(in.q), bf(in.a), K, false).to(torch::kDouble);
  auto key_ref = naive_qa(bf(in.k).to(torch::kDouble), bf(in.a).to(torch::kDouble), K, true);
  auto query_ref = naive_qa(bf(in.q).to(torch::kDouble), bf(in.a).to(torch::kDouble), K, false);
  const double scale = key_ref.abs().max().item<double>() + 1.0;
  CHECK(test::max_abs_diff(key, key_ref) < 0.02 * scale);
  CHECK(test::max_abs_diff(query, query_ref) < 0.02 * scale);
}

TEST_CASE("relative kernels: long unclipped query term (query blocks) equals the direct path") {
  // T >= 128 without clipping takes the blocked path (Transformer-XL's per-head 2T-1 table);
  // the direct [T,T,d] einsum is the independent reference here.
  const int64_t B = 2, H = 2, T = 130, d = 3;  // B > 1: per-head tables batch over the heads
  for (int64_t K : {T - 1, T + 40}) {
    for (bool per_head : {true, false}) {
      CAPTURE(K);
      CAPTURE(per_head);
      auto q = torch::randn({B, T, H, d}, torch::kDouble).transpose(1, 2).requires_grad_(true);
      auto table = (per_head ? torch::randn({H, 2 * K + 1, d}, torch::kDouble)
                             : torch::randn({2 * K + 1, d}, torch::kDouble))
                       .requires_grad_(true);
      auto fast = relative_query_term(q, table, K, false);   // (B,H,T,T)
      auto direct = relative_query_term(q, table, K, true);  // (B,H,T,T)
      CHECK(test::max_abs_diff(fast, direct) < 1e-10);
      auto g = torch::randn(fast.sizes(), torch::kDouble);
      auto gf = torch::autograd::grad({(fast * g).sum()}, {q, table});
      auto gd = torch::autograd::grad({(direct * g).sum()}, {q, table});
      CHECK(test::max_abs_diff(gf[0], gd[0]) < 1e-10);
      CHECK(test::max_abs_diff(gf[1], gd[1]) < 1e-10);
    }
  }
}

TEST_CASE("relative kernels: Transformer-XL's one-pass query term equals its terms added up") {
  // base + (q + v)·a_{j-i} + c_j from unclipped_query_term (the CPU node at T = 7, one block,
  // and T = 130, four uneven blocks; the tensor-op route other devices take) against the direct
  // einsum of q + v plus c and base added here, values and the gradients of all five inputs.
  const int64_t B = 2, H = 3, d = 4;
  for (int64_t T : {7, 130}) {
    for (bool tensor_ops : {false, true}) {
      for (bool extras : {true, false}) {
        CAPTURE(T);
        CAPTURE(tensor_ops);
        CAPTURE(extras);
        auto q = torch::randn({B, T, H, d}, torch::kDouble).transpose(1, 2).requires_grad_(true);
        auto table = torch::randn({H, 2 * T - 1, d}, torch::kDouble).requires_grad_(true);
        auto v = torch::randn({H, d}, torch::kDouble).requires_grad_(true);
        auto col = torch::randn({B, H, 1, T}, torch::kDouble).requires_grad_(true);
        auto base = torch::randn({B, H, T, T}, torch::kDouble).requires_grad_(true);
        torch::Tensor fast;
        {
          std::optional<relpos::detail::SkewTensorOpsScope> scope;
          if (tensor_ops) scope.emplace();
          fast = extras ? unclipped_query_term(q, table, v, col, base)
                        : unclipped_query_term(q, table, {}, {}, {});  // (B,H,T,T)
        }
        auto ref = extras ? relative_query_term(q + v.unsqueeze(1), table, T - 1, true) + col + base
                          : relative_query_term(q, table, T - 1, true);  // (B,H,T,T)
        CHECK(test::max_abs_diff(fast, ref) < 1e-10);
        auto g = torch::randn(fast.sizes(), torch::kDouble);
        std::vector<torch::Tensor> inputs = {q, table};
        if (extras) inputs.insert(inputs.end(), {v, col, base});
        auto gf = torch::autograd::grad({(fast * g).sum()}, inputs);
        auto gr = torch::autograd::grad({(ref * g).sum()}, inputs);
        for (size_t n = 0; n < inputs.size(); ++n) {
          CAPTURE(n);
          CHECK(test::max_abs_diff(gf[n], gr[n]) < 1e-9);
        }
      }
    }
  }
}

TEST_CASE("relative kernels: relative_expand and relative_reduce are adjoint and match the index") {
  // <expand(x), g> = <x, reduce(g)> for random x, g, with the layout checked element-wise
  // against clamp(j - i + o, 0, W-1) for a few (Tq, Tk, W, o), including W = 1.
  struct Case {
    int64_t Tq, Tk, W, o;
  };
  for (const Case& c : {Case{5, 5, 3, 1}, Case{7, 7, 13, 6}, Case{4, 9, 12, 3}, Case{6, 6, 1, 0},
                        Case{3, 40, 21, 10}}) {
    CAPTURE(c.Tq);
    CAPTURE(c.Tk);
    CAPTURE(c.W);
    CAPTURE(c.o);
    auto x = torch::randn({2, c.Tq, c.W}, torch::kDouble);
    auto g = torch::randn({2, c.Tq, c.Tk}, torch::kDouble);
    auto e = relative_expand(x, c.Tk, c.o);  // (2,Tq,Tk)
    bool layout = true;
    for (int64_t b = 0; b < 2; ++b)
      for (int64_t i = 0; i < c.Tq; ++i)
        for (int64_t j = 0; j < c.Tk; ++j) {
          const int64_t w = std::max<int64_t>(0, std::min<int64_t>(c.W - 1, j - i + c.o));
          layout = layout && e[b][i][j].item<double>() == x[b][i][w].item<double>();
        }
    CHECK(layout);
    const double lhs = (e * g).sum().item<double>();
    const double rhs = (x * relative_reduce(g, c.W, c.o)).sum().item<double>();
    CHECK(std::abs(lhs - rhs) < 1e-10 * std::max(1.0, std::abs(lhs)));
  }
}

// Relative-position terms: the functions of relative_ops.h against naive loops (forward and
// hand-derived gradients, including relative_qka_term's custom backward), and every variant
// built on them with relative_impl "fast" against "direct" (scores, outputs and gradients), in
// float64 with clip distances K < T-1, K = T-1 and K > T. deberta's shared projections and
// CoPE's interpolation (n_pos in place of K) have a fast and a direct path too.
#include <doctest/doctest.h>
#include <torch/autograd.h>
#include <torch/types.h>

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "core/model/attention.h"
#include "core/position/relative_ops.h"
#include "tests/variant_helpers.h"

using namespace relpos;
using namespace relpos::test;

namespace {

constexpr double kFastDirectTol = 1e-10;

enum class Op { query, key, value, qka };

const char* op_name(Op op) {
  switch (op) {
    case Op::query:
      return "query";
    case Op::key:
      return "key";
    case Op::value:
      return "value";
    default:
      return "qka";
  }
}

// Output and gradients of sum(G ⊙ op(x, y, table)) by loops from the definitions:
//   query: out_ij = Σ_m x_im a_{c(j-i),m}     key: out_ij = Σ_m x_jm a_{c(j-i),m}
//   value: out_im = Σ_j x_ij a_{c(j-i),m}     qka: out_ij = Σ_m x_im y_jm a_{c(j-i),m}
// a is table[c + K] (shared) or table[h][c + K] (per head).
struct NaiveOp {
  torch::Tensor out, dx, dy, dtable;
};

NaiveOp naive_op(Op op, const torch::Tensor& x_in, const torch::Tensor& y_in,
                 const torch::Tensor& table_in, int64_t K, const torch::Tensor& g_in) {
  auto x = x_in.detach().contiguous(), table = table_in.detach().contiguous();
  auto y = y_in.defined() ? y_in.detach().contiguous() : x;
  auto g = g_in.contiguous();
  const int64_t B = x.size(0), H = x.size(1), T = x.size(2), d = table.size(-1);
  const bool per_head = table.dim() == 3;
  NaiveOp r;
  r.out = torch::zeros(g.sizes(), torch::kDouble);  // (B,H,T,T) or (B,H,T,d)
  r.dx = torch::zeros(x.sizes(), torch::kDouble);
  r.dy = torch::zeros(y.sizes(), torch::kDouble);
  r.dtable = torch::zeros(table.sizes(), torch::kDouble);  // (R,d) or (H,R,d)
  auto X = x.accessor<double, 4>(), Y = y.accessor<double, 4>(), G = g.accessor<double, 4>();
  auto O = r.out.accessor<double, 4>(), DX = r.dx.accessor<double, 4>();
  auto DY = r.dy.accessor<double, 4>();
  auto table3 = table.view({per_head ? H : 1, 2 * K + 1, d});      // (H|1,R,d)
  auto dtable3 = r.dtable.view({per_head ? H : 1, 2 * K + 1, d});  // (H|1,R,d), shares storage
  auto A = table3.accessor<double, 3>(), DA = dtable3.accessor<double, 3>();
  for (int64_t b = 0; b < B; ++b)
    for (int64_t h = 0; h < H; ++h)
      for (int64_t i = 0; i < T; ++i)
        for (int64_t j = 0; j < T; ++j)
          for (int64_t m = 0; m < d; ++m) {
            const int64_t c = clip_offset(j - i, K) + K, ht = per_head ? h : 0;
            const double a = A[ht][c][m];
            switch (op) {
              case Op::query:
                O[b][h][i][j] += X[b][h][i][m] * a;
                DX[b][h][i][m] += G[b][h][i][j] * a;
                DA[ht][c][m] += G[b][h][i][j] * X[b][h][i][m];
                break;
              case Op::key:
                O[b][h][i][j] += X[b][h][j][m] * a;
                DX[b][h][j][m] += G[b][h][i][j] * a;
                DA[ht][c][m] += G[b][h][i][j] * X[b][h][j][m];
                break;
              case Op::value:
                O[b][h][i][m] += X[b][h][i][j] * a;
                DX[b][h][i][j] += G[b][h][i][m] * a;
                DA[ht][c][m] += X[b][h][i][j] * G[b][h][i][m];
                break;
              case Op::qka:
                O[b][h][i][j] += X[b][h][i][m] * Y[b][h][j][m] * a;
                DX[b][h][i][m] += G[b][h][i][j] * Y[b][h][j][m] * a;
                DY[b][h][j][m] += G[b][h][i][j] * X[b][h][i][m] * a;
                DA[ht][c][m] += G[b][h][i][j] * X[b][h][i][m] * Y[b][h][j][m];
                break;
            }
          }
  return r;
}

// A (B,H,T,n) float64 leaf that is not contiguous, like q and k after split_heads.
torch::Tensor strided_leaf(int64_t B, int64_t H, int64_t T, int64_t n) {
  return torch::randn({B, T, H, n}, torch::kDouble).transpose(1, 2).requires_grad_(true);
}

void check_op(Op op, bool per_head, int64_t K, bool direct) {
  const int64_t B = 2, H = 3, T = 6, d = 4;
  CAPTURE(op_name(op));
  CAPTURE(per_head);
  CAPTURE(K);
  CAPTURE(direct);
  // The table is one layer's slice of a (L,R,d) parameter, as the variants pass it.
  auto layers = per_head ? torch::randn({2, H, 2 * K + 1, d}, torch::kDouble)
                         : torch::randn({2, 2 * K + 1, d}, torch::kDouble);
  layers.requires_grad_(true);
  auto table = layers[1];  // (R,d) or (H,R,d)
  auto x = op == Op::value
               ? torch::softmax(torch::randn({B, H, T, T}, torch::kDouble), -1).requires_grad_(true)
               : strided_leaf(B, H, T, d);  // (B,H,T,T) or (B,H,T,d)
  auto y = op == Op::qka ? strided_leaf(B, H, T, d) : torch::Tensor();
  torch::Tensor out;
  switch (op) {
    case Op::query:
      out = relative_query_term(x, table, K, direct);
      break;
    case Op::key:
      out = relative_key_term(x, table, K, direct);
      break;
    case Op::value:
      out = relative_value_term(x, table, K, direct);
      break;
    case Op::qka:
      out = relative_qka_term(x, y, table, K, direct);
      break;
  }
  auto g = torch::randn(out.sizes(), torch::kDouble);
  auto expect = naive_op(op, x, y, table, K, g);
  CHECK(max_abs_diff(out, expect.out) < kFastDirectTol);

  std::vector<torch::Tensor> inputs = {x, layers};
  if (y.defined()) inputs.push_back(y);
  auto grads = torch::autograd::grad({(out * g).sum()}, inputs);
  CHECK(max_abs_diff(grads[0], expect.dx) < kFastDirectTol);
  CHECK(max_abs_diff(grads[1][1], expect.dtable) < kFastDirectTol);
  CHECK(grads[1][0].abs().max().item<double>() == 0.0);  // the other layer's slice is untouched
  if (y.defined()) CHECK(max_abs_diff(grads[2], expect.dy) < kFastDirectTol);
}

}  // namespace

TEST_CASE("relative ops: relative_index and gather_relative_table against c(j-i)+K") {
  for (int64_t K : {1, 3, 5, 9}) {
    const int64_t T = 6, H = 2, d = 3;
    CAPTURE(K);
    auto idx = relative_index(T, K, torch::kCPU);  // (T,T)
    auto shared = torch::randn({2 * K + 1, d}, torch::kDouble);
    auto per_head = torch::randn({H, 2 * K + 1, d}, torch::kDouble);
    auto gs = gather_relative_table(shared, T, K);    // (T,T,d)
    auto gh = gather_relative_table(per_head, T, K);  // (H,T,T,d)
    bool ok = true;
    for (int64_t i = 0; i < T; ++i)
      for (int64_t j = 0; j < T; ++j) {
        const int64_t c = clip_offset(j - i, K) + K;
        ok = ok && idx[i][j].item<int64_t>() == c;
        ok = ok && torch::equal(gs[i][j], shared[c]);
        for (int64_t h = 0; h < H; ++h) ok = ok && torch::equal(gh[h][i][j], per_head[h][c]);
      }
    CHECK(ok);
  }
}

TEST_CASE("relative ops: query, key, value and qka terms and their gradients vs naive loops") {
  for (Op op : {Op::query, Op::key, Op::value, Op::qka})
    for (bool per_head : {false, true}) {
      if (op == Op::qka && per_head) continue;  // qka takes a table shared by heads
      for (int64_t K : {1, 2, 5, 8})            // T = 6: K < T-1, K = T-1, K > T
        for (bool direct : {false, true}) check_op(op, per_head, K, direct);
    }
}

TEST_CASE("relative ops: qka handles T = 1 and contiguous inputs") {
  for (int64_t T : {1, 2}) {
    CAPTURE(T);
    auto q = torch::randn({1, 2, T, 3}, torch::kDouble).requires_grad_(true);
    auto k = torch::randn({1, 2, T, 3}, torch::kDouble).requires_grad_(true);
    auto a = torch::randn({3, 3}, torch::kDouble).requires_grad_(true);  // K = 1
    auto out = relative_qka_term(q, k, a, 1, false);                     // (1,2,T,T)
    auto g = torch::randn(out.sizes(), torch::kDouble);
    auto expect = naive_op(Op::qka, q, k, a, 1, g);
    CHECK(max_abs_diff(out, expect.out) < kFastDirectTol);
    auto grads = torch::autograd::grad({(out * g).sum()}, {q, k, a});
    CHECK(max_abs_diff(grads[0], expect.dx) < kFastDirectTol);
    CHECK(max_abs_diff(grads[1], expect.dy) < kFastDirectTol);
    CHECK(max_abs_diff(grads[2], expect.dtable) < kFastDirectTol);
  }
}

namespace {

struct VariantCase {
  std::string type;
  std::string yaml;  // "{K}" is replaced by the clip distance
};

std::string with_clip(std::string yaml, int64_t K) {
  const auto p = yaml.find("{K}");
  if (p != std::string::npos) yaml.replace(p, 3, std::to_string(K));
  return yaml;
}

std::vector<torch::Tensor> params_of(torch::nn::Module& m) {
  std::vector<torch::Tensor> p;
  for (auto& t : m.parameters()) p.push_back(t);
  return p;
}

// The hooks driven by leaf q, k, v (B,H,T,d): a small attention in the test, so the gradients
// with respect to q, k and v themselves can be compared.
struct HookRun {
  torch::Tensor term, z;
  std::vector<torch::Tensor> grads;  // q, k, v, then every position parameter
};

HookRun run_hooks(PositionEncodingImpl& enc, const torch::Tensor& q0, const torch::Tensor& k0,
                  const torch::Tensor& v0, const AttentionContext& ctx, const torch::Tensor& g_term,
                  const torch::Tensor& g_z) {
  auto q = q0.detach().clone().requires_grad_(true);  // (B,H,T,d)
  auto k = k0.detach().clone().requires_grad_(true);  // (B,H,T,d)
  auto v = v0.detach().clone().requires_grad_(true);  // (B,H,T,d)
  const int64_t T = q.size(2);
  auto content = torch::matmul(q, k.transpose(-1, -2)) /
                 std::sqrt(static_cast<double>(q.size(3)));  // (B,H,T,T)
  HookRun r;
  r.term = enc.score_term(content, q, k, ctx);  // (B|1,H,T,T)
  auto visible = torch::ones({T, T}, torch::kBool);
  if (ctx.causal) visible = visible.tril();
  auto probs = torch::softmax((content + r.term).masked_fill(visible.logical_not(), -INFINITY),
                              -1);  // (B,H,T,T)
  r.z = torch::matmul(probs, v);    // (B,H,T,d)
  auto vt = enc.value_term(probs, ctx);
  if (vt.defined()) r.z = r.z + vt;
  auto loss = (r.term * g_term).sum() + (r.z * g_z).sum();
  std::vector<torch::Tensor> inputs = {q, k, v};
  for (auto& p : params_of(enc)) inputs.push_back(p);
  r.grads = torch::autograd::grad({loss}, inputs);
  return r;
}

void check_fast_direct(const VariantCase& vc, int64_t K, bool causal) {
  const int64_t B = 2, H = 3, d = 4, T = 6;
  const std::string yaml = with_clip(vc.yaml, K);
  CAPTURE(vc.type);
  CAPTURE(yaml);
  CAPTURE(causal);
  torch::manual_seed(99);
  auto dims = tiny_dims(H, d, causal);
  auto fast = make_variant(vc.type, dims, yaml, "fast");
  auto direct = make_variant(vc.type, dims, yaml, "direct");
  randomize(*fast, 1.0);
  copy_parameters(*fast, *direct);
  AttentionContext ctx;
  ctx.layer = 1;
  ctx.length = T;
  ctx.causal = causal;
  // A stand-in for the layer's own projections (deberta share_projections).
  torch::nn::Linear proj_q(H * d, H * d), proj_k(H * d, H * d);
  proj_q->to(torch::kDouble);
  proj_k->to(torch::kDouble);
  ctx.project_qk = [&](const torch::Tensor& x) {
    auto heads = [&](const torch::Tensor& y) {
      return y.view({y.size(0), y.size(1), H, d}).transpose(1, 2);  // (B,H,N,d)
    };
    return std::make_pair(heads(proj_q(x)), heads(proj_k(x)));
  };

  // Hook level: gradients w.r.t. q, k, v and the position parameters.
  auto q = torch::randn({B, H, T, d}, torch::kDouble),
       k = torch::randn({B, H, T, d}, torch::kDouble);
  auto v = torch::randn({B, H, T, d}, torch::kDouble);
  auto g_term = torch::randn({B, H, T, T}, torch::kDouble),
       g_z = torch::randn({B, H, T, d}, torch::kDouble);
  auto a = run_hooks(*fast, q, k, v, ctx, g_term, g_z);
  auto b = run_hooks(*direct, q, k, v, ctx, g_term, g_z);
  CHECK(max_abs_diff(a.term, b.term) < kFastDirectTol);
  CHECK(max_abs_diff(a.z, b.z) < kFastDirectTol);
  REQUIRE(a.grads.size() == b.grads.size());
  REQUIRE(a.grads.size() > 3);  // every variant here has parameters
  for (size_t n = 0; n < a.grads.size(); ++n) {
    CAPTURE(n);
    CHECK(max_abs_diff(a.grads[n], b.grads[n]) < kFastDirectTol);
  }

  // Layer level: the real attention with each encoding; output, probabilities and gradients
  // w.r.t. the input, the layer weights and the position parameters.
  MultiHeadAttention attn(H * d, H, 0.0);
  attn->to(torch::kDouble);
  randomize(*attn, 0.5);
  auto x = torch::randn({B, T, H * d}, torch::kDouble);  // (B,T,D)
  auto g_y = torch::randn({B, T, H * d}, torch::kDouble);
  auto layer_run = [&](std::shared_ptr<PositionEncodingImpl> enc, AttentionRecord& rec) {
    auto xl = x.clone().requires_grad_(true);
    auto y = attn->forward(xl, ctx, {enc}, {}, &rec);  // (B,T,D)
    std::vector<torch::Tensor> inputs = {xl};
    for (auto& p : params_of(*attn)) inputs.push_back(p);
    for (auto& p : params_of(*enc)) inputs.push_back(p);
    auto grads = torch::autograd::grad({(y * g_y).sum()}, inputs);
    grads.insert(grads.begin(), y.detach());
    return grads;
  };
  AttentionRecord ra, rb;
  auto la = layer_run(fast, ra), lb = layer_run(direct, rb);
  CHECK(max_abs_diff(ra.probs, rb.probs) < kFastDirectTol);
  CHECK(max_abs_diff(ra.terms[0], rb.terms[0]) < kFastDirectTol);
  REQUIRE(la.size() == lb.size());
  for (size_t n = 0; n < la.size(); ++n) {
    CAPTURE(n);
    CHECK(max_abs_diff(la[n], lb[n]) < kFastDirectTol);
  }
}

}  // namespace

// cope's fast term on a GPU (and in float32 there) is tensor ops in one autograd node rather than
// the CPU row kernels: the same comparison with the CPU kernels turned off.
TEST_CASE("relative variants: cope's tensor-op fast path agrees with the direct one") {
  relpos::detail::SkewTensorOpsScope tensor_ops;
  for (int64_t K : {2, 5, 8})
    for (bool causal : {false, true}) check_fast_direct({"cope", "{n_pos: {K}}"}, K, causal);
}

TEST_CASE("relative variants: fast and direct agree in scores, outputs and gradients") {
  const std::vector<VariantCase> cases = {
      {"shaw", "{clip: {K}}"},
      {"shaw", "{clip: {K}, values: false}"},
      {"huang_m1", "{clip: {K}}"},
      {"huang_m2", "{clip: {K}}"},
      {"huang_m3", "{clip: {K}}"},
      {"huang_m4", "{clip: {K}}"},
      {"huang", "{terms: [qa], clip: {K}}"},
      {"huang", "{terms: [ka], clip: {K}}"},
      {"huang", "{terms: [qka], clip: {K}}"},
      {"huang", "{terms: [qk, qa, ka, qka], scale_qk: none, clip: {K}}"},
      {"huang", "{terms: [qk, qa, ka, qka], scale_qk: abs, clip: {K}}"},
      {"huang", "{terms: [qk, qa, ka, qka], scale_qk: signed, clip: {K}}"},
      {"transformer_xl", "{}"},
      {"shaw", "{clip: {K}, per_head: true}"},
      {"huang_m4", "{clip: {K}, per_head: true}"},
      {"deberta", "{clip: {K}}"},
      {"deberta", "{clip: {K}, table_per_layer: true}"},
      {"deberta", "{clip: {K}, share_projections: true}"},
      {"deberta", "{clip: {K}, bucketing: log, max_distance: 11}"},
      {"cope", "{n_pos: {K}}"},
  };
  for (const auto& vc : cases)
    for (int64_t K : {2, 5, 8})  // T = 6: K < T-1, K = T-1, K > T
      for (bool causal : {false, true}) check_fast_direct(vc, K, causal);
  // Every variant the registry says has a direct path is compared here.
  for (const auto& name : Registry::get().names()) {
    if (!Registry::get().at(name).direct_path) continue;
    CAPTURE(name);
    CHECK(std::any_of(cases.begin(), cases.end(),
                      [&](const VariantCase& vc) { return vc.type == name; }));
  }
}

// Snapshot attention of a padded probe (core/train/snapshot_capture.h): each query row is averaged over
// the probes where that query is a real token, and over every probe where it is real in none.
// Checked against each probe run on its own and a per-row average written as a loop here.
#include <doctest/doctest.h>

#include <vector>

#include "core/train/snapshot_capture.h"
#include "tests/small_model.h"

using namespace relpos;

namespace {

// A probe batch of P = lengths.size() random sequences of length T, sequence b real for its
// first lengths[b] tokens and [PAD] after them.
Batch padded_probe(const std::vector<int64_t>& lengths, int64_t T, uint64_t seed) {
  const auto P = static_cast<int64_t>(lengths.size());
  torch::manual_seed(seed);
  Batch probe;
  probe.tokens = torch::randint(5, 40, {P, T}, torch::kLong);  // (P,T)
  probe.key_mask = torch::zeros({P, T}, torch::kBool);         // (P,T)
  for (int64_t b = 0; b < P; ++b) {
    probe.key_mask[b].narrow(0, 0, lengths[b]).fill_(true);
    probe.tokens[b].narrow(0, lengths[b], T - lengths[b]).fill_(0);  // [PAD]
  }
  probe.pool_index = torch::zeros({P}, torch::kLong);  // (P)
  return probe;
}

}  // namespace

TEST_CASE(
    "snapshot attention of a padded probe: each query row averages the probes where it "
    "is a real token") {
  // Real lengths 6, 4 and 2: queries 0-1 are real in all three probes, 2-3 in two, 4-5 in one,
  // and 6-7 in none (a probe padded past its longest row). Then 19 probes of lengths 2..6: more
  // than one chunk of the snapshot's forward passes (16), so the means are accumulated.
  std::vector<int64_t> nineteen;
  for (int64_t b = 0; b < 19; ++b) nineteen.push_back(2 + (b * 3) % 5);
  for (const auto& lengths : {std::vector<int64_t>{6, 4, 2}, nineteen})
    for (bool causal : {false, true}) {
      CAPTURE(causal);
      CAPTURE(lengths.size());
      const Config cfg = test::small_config(
          "alibi", causal, {"task.type=classify", "data.corpus=sentiment", "task.num_classes=2"});
      Model model = test::small_model(cfg);
      const int64_t P = static_cast<int64_t>(lengths.size()), T = 8, L = cfg.model.layers,
                    H = cfg.model.heads;
      const Batch probe = padded_probe(lengths, T, 3);
      const SnapshotContent snap = compute_snapshot(model, probe, cfg.snapshots, torch::kCPU);
      REQUIRE(snap.attention.sizes() == torch::IntArrayRef({L, H, T, T}));

      // Each probe on its own: (P) x (L,H,T,T).
      std::vector<torch::Tensor> single;
      {
        torch::NoGradGuard guard;
        for (int64_t b = 0; b < P; ++b) {
          std::vector<AttentionRecord> records;
          ForwardOptions o;
          o.key_mask = probe.key_mask.narrow(0, b, 1);  // (1,T)
          o.records = &records;
          model->hidden(probe.tokens.narrow(0, b, 1), o);
          std::vector<torch::Tensor> layers;
          for (const auto& r : records) layers.push_back(r.probs[0].to(torch::kDouble));  // (H,T,T)
          single.push_back(torch::stack(layers));  // (L,H,T,T)
        }
      }
      auto expected = torch::zeros({L, H, T, T}, torch::kDouble);  // (L,H,T,T)
      for (int64_t l = 0; l < L; ++l)
        for (int64_t h = 0; h < H; ++h)
          for (int64_t i = 0; i < T; ++i) {
            std::vector<int64_t> real;
            for (int64_t b = 0; b < P; ++b)
              if (i < lengths[b]) real.push_back(b);
            if (real.empty())
              for (int64_t b = 0; b < P; ++b) real.push_back(b);  // padding everywhere: all
            for (int64_t j = 0; j < T; ++j) {
              double sum = 0;
              for (int64_t b : real) sum += single[b][l][h][i][j].item<double>();
              expected[l][h][i][j] = sum / static_cast<double>(real.size());
            }
          }
      const auto got = snap.attention.to(torch::kDouble);  // (L,H,T,T)
      CHECK(torch::allclose(got, expected, 1e-5, 1e-6));
      auto rows = got.sum(-1);  // (L,H,T)
      CHECK(torch::allclose(rows, torch::ones_like(rows), 1e-5, 1e-5));
      // The old plain mean differs wherever some probe pads the query: rows 2..5.
      const auto plain = torch::stack(single).mean(0);  // (L,H,T,T)
      CHECK_FALSE(torch::allclose(got.narrow(2, 2, 4), plain.narrow(2, 2, 4), 1e-3, 1e-4));
      CHECK(torch::allclose(got.narrow(2, 0, 2), plain.narrow(2, 0, 2), 1e-5, 1e-6));
    }
}

TEST_CASE(
    "snapshot position scores of a padded probe: entry (i, j) averages the probes where "
    "query i and key j are both real") {
  const Config cfg = test::small_config(
      "shaw", false, {"task.type=classify", "data.corpus=sentiment", "task.num_classes=2"});
  Model model = test::small_model(cfg);
  const int64_t P = 3, T = 8, L = cfg.model.layers, H = cfg.model.heads;
  const std::vector<int64_t> lengths = {6, 4, 2};  // positions 6-7 are padding in every probe
  const Batch probe = padded_probe(lengths, T, 5);
  const SnapshotContent snap = compute_snapshot(model, probe, cfg.snapshots, torch::kCPU);
  REQUIRE(snap.position_scores.size() == 1);
  const auto got = snap.position_scores[0].value.to(torch::kDouble);  // (L,H,T,T)
  REQUIRE(got.sizes() == torch::IntArrayRef({L, H, T, T}));

  // shaw's score term q_i·a_{c(j-i)}/√d of each probe run on its own: (P) x (L,H,T,T).
  std::vector<torch::Tensor> single;
  {
    torch::NoGradGuard guard;
    for (int64_t b = 0; b < P; ++b) {
      std::vector<AttentionRecord> records;
      ForwardOptions o;
      o.key_mask = probe.key_mask.narrow(0, b, 1);  // (1,T)
      o.records = &records;
      model->hidden(probe.tokens.narrow(0, b, 1), o);
      std::vector<torch::Tensor> layers;
      for (const auto& r : records)
        layers.push_back(r.terms.at(0)[0].to(torch::kDouble));  // (H,T,T)
      single.push_back(torch::stack(layers));                   // (L,H,T,T)
    }
  }
  double worst = 0;
  for (int64_t l = 0; l < L; ++l)
    for (int64_t h = 0; h < H; ++h)
      for (int64_t i = 0; i < T; ++i)
        for (int64_t j = 0; j < T; ++j) {
          double sum = 0;
          int64_t n = 0;
          for (int64_t b = 0; b < P; ++b)
            if (i < lengths[b] && j < lengths[b]) {
              sum += single[b][l][h][i][j].item<double>();
              ++n;
            }
          if (n == 0) {  // no probe has both real: the plain mean
            for (int64_t b = 0; b < P; ++b) sum += single[b][l][h][i][j].item<double>();
            n = P;
          }
          worst = std::max(worst, std::abs(got[l][h][i][j].item<double>() - sum / n));
        }
  CHECK(worst < 1e-5);
  // The plain mean differs where some probe pads the query or the key (here at (3, 1)).
  const auto plain = (single[0] + single[1] + single[2]) / 3.0;  // (L,H,T,T)
  CHECK(std::abs(got[0][0][3][1].item<double>() - plain[0][0][3][1].item<double>()) > 1e-4);
}

TEST_CASE("snapshot position scores of transformer_xl leave out its content bias u·k_j") {
  // With W_R = 0 the position part (q_i + v)·(R_{i−j} W_R)/√d is 0 everywhere, while the whole
  // score term still holds u·k_j/√d: the stored position scores must be 0, and with W_R restored
  // layer 0's must not depend on u (later layers see u through the earlier layers' outputs).
  const Config cfg = test::small_config("transformer_xl", false);
  Model model = test::small_model(cfg);
  Batch probe;
  torch::manual_seed(4);
  probe.tokens = torch::randint(5, 40, {3, 8}, torch::kLong);  // (P,T)
  auto params = model->transformer->position->named_parameters();
  const auto find = [&](const std::string& suffix) {
    for (auto& p : params)
      if (p.key().size() >= suffix.size() &&
          p.key().compare(p.key().size() - suffix.size(), suffix.size(), suffix) == 0)
        return p.value();
    FAIL("no parameter " << suffix);
    return torch::Tensor();
  };
  torch::Tensor w_r = find("w_r"), u = find("u");
  REQUIRE(u.abs().max().item<double>() > 0.01);
  const auto w_saved = w_r.detach().clone();
  {
    torch::NoGradGuard guard;
    w_r.zero_();
  }
  const SnapshotContent zero = compute_snapshot(model, probe, cfg.snapshots, torch::kCPU);
  REQUIRE(zero.position_scores.size() == 1);
  CHECK(zero.position_scores[0].value.abs().max().item<double>() == 0.0);
  torch::Tensor with_u, other_u;
  {
    torch::NoGradGuard guard;
    w_r.copy_(w_saved);
    with_u = compute_snapshot(model, probe, cfg.snapshots, torch::kCPU).position_scores[0].value;
    u.mul_(-3.0);  // another content bias: the attention changes, the position scores do not
    other_u = compute_snapshot(model, probe, cfg.snapshots, torch::kCPU).position_scores[0].value;
  }
  CHECK(with_u.abs().max().item<double>() > 1e-3);
  CHECK((with_u[0] - other_u[0]).abs().max().item<double>() < 1e-6);
}

// A synthetic snapshot with every kind of tensor the analysis reads, for the analysis tests.
#pragma once

#include <torch/types.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <string>
#include <vector>

#include "analysis/snapshot.h"

namespace relpos::test {

// A fresh, empty folder under the temp folder, unique to this process.
inline std::filesystem::path analysis_scratch(const std::string& tag) {
  const auto p = std::filesystem::temp_directory_path() /
                 ("relpos_analysis_" + tag + "_" + std::to_string(::getpid()));
  std::filesystem::remove_all(p);
  std::filesystem::create_directories(p);
  return p;
}

// L=2 layers, H=4 heads, T=24 probe tokens; learned table of 40 positions x 16 channels,
// TISA f and ALiBi profiles on r in [-30, 30], Shaw keys with clip 12 and 8 channels,
// Huang-m1-style scales on |r| = 0..12.
inline analysis::SnapshotData sample_snapshot(int64_t step = 100, bool causal = false) {
  torch::manual_seed(5);
  analysis::SnapshotData s;
  s.step = step;
  const int64_t L = 2, H = 4, T = 24, R = 30, K = 12;
  auto pos = torch::arange(T, torch::kFloat32);
  auto rel = pos.unsqueeze(0) - pos.unsqueeze(1);  // (T,T) j - i
  auto slopes = torch::tensor({0.5f, 0.25f, 0.125f, 0.0625f}).view({1, H, 1, 1});
  auto scores = -slopes * rel.abs().view({1, 1, T, T}) + 0.3f * torch::randn({L, H, T, T});
  if (causal) scores = scores.masked_fill(rel.gt(0).view({1, 1, T, T}), -INFINITY);
  s.attention = torch::softmax(scores, -1);  // (L,H,T,T)
  s.position_scores["alibi"] =
      (-slopes * rel.abs().view({1, 1, T, T})).expand({L, H, T, T}).clone();
  // sinusoid-like table with noise: p_n,c = sin(n / 10^(c/8)) + 0.1 N(0,1)
  auto n = torch::arange(40, torch::kFloat32).unsqueeze(1);                        // (40,1)
  auto freq = torch::pow(10.0f, torch::arange(16, torch::kFloat32) / 8);           // (16)
  auto table = torch::sin(n / freq.unsqueeze(0)) + 0.1f * torch::randn({40, 16});  // (40,16)
  s.position["learned"]["table"] = {"table", table, {"position", "channel"}};
  auto r = torch::arange(-R, R + 1, torch::kFloat32);  // (2R+1)
  auto f = torch::exp(-0.01f * (r.view({1, 1, -1}) - 5 * torch::randn({L, H, 1})).pow(2)) *
           torch::randn({L, H, 1});  // (L,H,2R+1)
  s.position["tisa"]["distances"] = {"distances", r, {"distance"}};
  s.position["tisa"]["f"] = {"f", f, {"layer", "head", "distance"}};
  s.position["alibi"]["distances"] = {"distances", r, {"distance"}};
  s.position["alibi"]["profile"] = {
      "profile", -slopes.view({H, 1}) * r.abs().view({1, -1}), {"head", "distance"}};
  s.position["alibi"]["slopes"] = {"slopes", slopes.view({H}), {"head"}};
  auto rk = torch::arange(-K, K + 1, torch::kFloat32);
  s.position["shaw"]["distances"] = {"distances", rk, {"distance"}};
  s.position["shaw"]["keys"] = {
      "keys", torch::randn({L, 2 * K + 1, 8}), {"layer", "distance", "channel"}};
  s.position["huang_m1"]["scale_distances"] = {
      "scale_distances", torch::arange(0, K + 1, torch::kFloat32), {"distance"}};
  s.position["huang_m1"]["scale"] = {
      "scale", 1 + 0.1f * torch::randn({L, K + 1}), {"layer", "distance"}};
  return s;
}

// Translation invariance from its definition, by brute force: each entry is compared with the
// mean of all entries (in the region) on its diagonal. Independent of analysis/invariance.cpp.
inline double naive_invariance(const torch::Tensor& a, bool lower) {
  const auto m = a.to(torch::kFloat64).contiguous();
  const int64_t T = m.size(0);
  auto acc = m.accessor<double, 2>();
  double sum = 0, n = 0;
  for (int64_t i = 0; i < T; ++i)
    for (int64_t j = 0; j < T; ++j)
      if (!lower || j <= i) sum += acc[i][j], n += 1;
  const double mu = sum / n;
  double num = 0, den = 0;
  for (int64_t i = 0; i < T; ++i)
    for (int64_t j = 0; j < T; ++j) {
      if (lower && j > i) continue;
      double diag = 0, cnt = 0;
      for (int64_t p = 0; p < T; ++p)
        for (int64_t q = 0; q < T; ++q)
          if (q - p == j - i && (!lower || q <= p)) diag += acc[p][q], cnt += 1;
      num += std::pow(acc[i][j] - diag / cnt, 2);
      den += std::pow(acc[i][j] - mu, 2);
    }
  return 1 - num / den;
}

// Pearson correlation written out.
inline double naive_pearson(const std::vector<double>& x, const std::vector<double>& y) {
  double mx = 0, my = 0;
  for (size_t k = 0; k < x.size(); ++k) mx += x[k] / x.size(), my += y[k] / y.size();
  double sxy = 0, sxx = 0, syy = 0;
  for (size_t k = 0; k < x.size(); ++k)
    sxy += (x[k] - mx) * (y[k] - my), sxx += (x[k] - mx) * (x[k] - mx),
        syy += (y[k] - my) * (y[k] - my);
  return sxy / std::sqrt(sxx * syy);
}

}  // namespace relpos::test

// What an invariance score is worth against chance (DESIGN §6, "Baselines for every score"):
// a random table already scores well above 0 — P·Pᵀ of an n × E Gaussian table scores about
// E / (E + n) — so every score is read against the score of the same quantity before any
// training, and corrected:
//
//   corrected = (I − I₀) / (1 − I₀)   (0: no more invariant than untrained; 1: fully invariant)
//
// I₀ for P·Pᵀ (gram:*): the mean invariance of P·Pᵀ over Monte Carlo draws of an n × E table of
// independent Gaussians — the learned table's init, N(0, σ²); the score does not depend on σ
// (it is a ratio of squared norms) — with the 95% interval of that mean. For attention maps and
// position-only scores: the run's own step-0 snapshot (the untrained model of the same init),
// when the run has one.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace relpos::analysis {

struct InvarianceBaseline {
  double mean = 0;        // I₀
  double lo = 0, hi = 0;  // its 95% interval (Monte Carlo); equal to mean for a step-0 value
  int64_t draws = 0;      // Monte Carlo draws; 0 for a step-0 value
  std::string how;        // "random 64 × 128 Gaussian tables (200 draws)", "step 0 of this run"
};

// The expected invariance of P·Pᵀ of an n × E table of independent standard normals: `draws`
// Monte Carlo draws from a fixed seed (deterministic), cached per shape within the process.
InvarianceBaseline random_gram_baseline(int64_t n, int64_t E, int64_t draws = 200);

// (I − I₀) / (1 − I₀); NaN when either is NaN or I₀ >= 1.
double corrected_invariance(double value, double baseline);

// Baselines of a run's invariance quantities (RunResult::invariance keys): gram:<variant> from
// `gram_shapes` (variant -> {n, E}), the others from the first snapshot when it is at step 0.
std::map<std::string, InvarianceBaseline> invariance_baselines(
    const std::map<std::string, std::vector<double>>& invariance, const std::vector<int64_t>& steps,
    const std::map<std::string, std::pair<int64_t, int64_t>>& gram_shapes);

}  // namespace relpos::analysis

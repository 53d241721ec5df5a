// The invariance metrics of one training snapshot, from plain in-memory tensors (read from
// run.h5 by run_source.h, or built by a test). Which matrices are measured:
//
//   attention        each head's probe-averaged attention map, and the head average, per layer
//   position_scores  each head's position-only score matrix of each variant, per layer
//   gram             P·Pᵀ of each absolute table P (position/<variant>/table with dims
//                    position,channel), restricted to positions 0..T−1 of the probe
//
// Causal models are measured on the visible triangle j <= i (Region::lower) for attention and
// position scores; P·Pᵀ is a property of the table and always uses the full matrix.
//
// Padded probes (key_mask set: classify, span_qa): attention and position scores are measured
// only over the pairs (i, j) that are real — query i and key j both real tokens — in at least one
// probe (real_pairs); a pair that is padding in every probe says nothing about the model. A
// bidirectional attention map is measured relative to the map that uniform attention over each
// probe's real keys would give under the snapshot's averaging (uniform_reference): probes of
// different lengths normalise their rows over different numbers of keys, which alone makes the
// averaged map of a model that ignores position non-Toeplitz. So uniform attention over the
// real keys scores 1, as attention that ignores position should (docs/analysis.md).
#pragma once

#include <torch/types.h>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "analysis/invariance.h"
#include "core/io/run_file.h"

namespace relpos::analysis {

struct SnapshotData {
  int64_t step = 0;
  // Probe sequences the attention maps average (P of /probe/tokens); 0: not known.
  int64_t probe_count = 0;
  torch::Tensor key_mask;  // (P,T) of the probe, nonzero at real tokens; undefined: no padding
  torch::Tensor attention;                               // (L,H,T,T); undefined when absent
  std::map<std::string, torch::Tensor> position_scores;  // variant -> (L',H,T,T)
  // variant -> dataset name -> tensor with its axis names
  std::map<std::string, std::map<std::string, NamedTensor>> position;
};

struct MatrixRow {
  int64_t step = 0;
  std::string source;   // "attention" | "position_scores" | "gram"
  std::string variant;  // empty for attention
  int64_t layer = -1;   // -1 for gram
  int64_t head = -1;    // -1: the head average (attention) or no head (gram)
  Region region = Region::full;
  MatrixMetrics metrics;
};

struct SnapshotOptions {
  bool causal = false;
  // Positions of an absolute table used for P·Pᵀ (analyze passes the trained length, task.seq_len):
  // 0 means the probe length T (the attention maps' size), or the whole table when the snapshot
  // has no attention. Never more than the table's rows.
  int64_t gram_length = 0;
};

Matrix to_matrix(const torch::Tensor& t);  // a 2-D tensor, any floating dtype

// (T,T) 1 where query i and key j are both real in at least one probe of key_mask (P,T), and
// (causal) j <= i; the region of a padded probe's maps.
Mask real_pairs(const torch::Tensor& key_mask, bool causal);
// (T,T) float64: what the snapshot's attention would hold if every probe attended uniformly to
// its real keys: row i is the mean over the probes where token i is real of 1/n_p at their real
// keys (n_p real tokens), 0 elsewhere (core/train/snapshot_capture.cpp averages rows the same way).
torch::Tensor uniform_reference(const torch::Tensor& key_mask);
// The absolute tables of a snapshot: variant -> (N,E) tensor.
std::map<std::string, torch::Tensor> absolute_tables(const SnapshotData& s);
// P·Pᵀ of the first n rows of P (all when n <= 0 or n > rows): (n,n) float64.
torch::Tensor gram(const torch::Tensor& table, int64_t n);
int64_t gram_length(const SnapshotData& s, const SnapshotOptions& o, int64_t table_rows);

std::vector<MatrixRow> measure_snapshot(const SnapshotData& s, const SnapshotOptions& o);
// The shape of each absolute table's P·Pᵀ factor as measured: variant -> {rows used, width}.
std::map<std::string, std::pair<int64_t, int64_t>> gram_shapes(const SnapshotData& s,
                                                               const SnapshotOptions& o);

// Headline numbers of one snapshot, quantity key -> value:
//   attention           mean over layers of the head-averaged map's invariance
//   attention_heads     mean over layers and heads of each head's invariance
//   scores:<variant>    mean over layers and heads of the variant's position-only scores
//   gram:<variant>      invariance of P·Pᵀ of the variant's table
std::map<std::string, double> summarize(const std::vector<MatrixRow>& rows);
// A readable name for figures and tables: "attention (head average)", "P·Pᵀ learned", ...
std::string quantity_label(const std::string& key);

}  // namespace relpos::analysis

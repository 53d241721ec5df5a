#include "analysis/snapshot.h"

#include <fmt/format.h>
#include <fmt/ranges.h>  // fmt::join (in fmt/format.h only before fmt 11)

#include "core/util/errors.h"

namespace relpos::analysis {
namespace {

void check_maps(const torch::Tensor& t, const std::string& what, int64_t step) {
  if (t.dim() != 4 || t.size(2) != t.size(3))
    throw SchemaError(fmt::format("snapshot step {}: {} has shape {}; expected (L,H,T,T)", step,
                                  what, fmt::join(t.sizes(), "x")));
}

// Rows for every head of every layer of a (L,H,T,T) stack, and the head average when asked,
// measured over `mask`; with a reference (T,T), each map divided by it where it is positive.
void measure_stack(const torch::Tensor& maps, const std::string& source, const std::string& variant,
                   bool head_average, Region region, const Mask& mask,
                   const torch::Tensor& reference, int64_t step, std::vector<MatrixRow>& rows) {
  auto m = maps.to(torch::kFloat64);  // (L,H,T,T)
  if (reference.defined())
    m = torch::where(reference > 0, m / reference.clamp_min(1e-300), torch::zeros_like(m));
  for (int64_t l = 0; l < m.size(0); ++l) {
    if (head_average)
      rows.push_back(
          {step, source, variant, l, -1, region, measure(to_matrix(m[l].mean(0)), mask)});
    for (int64_t h = 0; h < m.size(1); ++h)
      rows.push_back({step, source, variant, l, h, region, measure(to_matrix(m[l][h]), mask)});
  }
}

// The probe's key mask as (P,T) float64 of 0/1, checked against the maps' T.
torch::Tensor real_tokens(const torch::Tensor& key_mask, int64_t T, int64_t step) {
  if (key_mask.dim() != 2 || key_mask.size(1) != T)
    throw SchemaError(fmt::format("snapshot step {}: the probe's key_mask has shape {}; expected "
                                  "(P,{}) like the attention maps",
                                  step, fmt::join(key_mask.sizes(), "x"), T));
  return (key_mask.to(torch::kCPU) != 0).to(torch::kFloat64);  // (P,T)
}

}  // namespace

Mask real_pairs(const torch::Tensor& key_mask, bool causal) {
  const auto real = (key_mask.to(torch::kCPU) != 0).to(torch::kFloat64);  // (P,T)
  const int64_t T = real.size(1);
  const auto any = (real.t().matmul(real) > 0).to(torch::kUInt8).contiguous();  // (T,T)
  Mask m(any.data_ptr<uint8_t>(), any.data_ptr<uint8_t>() + T * T);
  if (causal)
    for (int64_t i = 0; i < T; ++i)
      for (int64_t j = i + 1; j < T; ++j) m[i * T + j] = 0;
  return m;
}

torch::Tensor uniform_reference(const torch::Tensor& key_mask) {
  const auto real = (key_mask.to(torch::kCPU) != 0).to(torch::kFloat64);  // (P,T)
  const auto n = real.sum(1, true).clamp_min(1);                          // (P,1)
  const auto rows = real.sum(0).unsqueeze(1);                             // (T,1) probes per query
  // Σ_p real[p,i] · real[p,j] / n_p over the probes where i is real, divided by their count.
  const auto sum = real.t().matmul(real / n);                            // (T,T)
  return torch::where(rows > 0, sum / rows.clamp_min(1), torch::zeros_like(sum));  // (T,T)
}

Matrix to_matrix(const torch::Tensor& t) {
  TORCH_CHECK(t.dim() == 2, "to_matrix: expected a 2-D tensor, got ", t.sizes());
  const auto c = t.to(torch::kCPU, torch::kFloat64).contiguous();  // (n,m)
  Matrix out(c.size(0), c.size(1));
  std::copy(c.data_ptr<double>(), c.data_ptr<double>() + c.numel(), out.data.begin());
  return out;
}

std::map<std::string, torch::Tensor> absolute_tables(const SnapshotData& s) {
  std::map<std::string, torch::Tensor> out;
  for (const auto& [variant, tensors] : s.position) {
    auto it = tensors.find("table");
    if (it == tensors.end() || it->second.value.dim() != 2) continue;
    const auto& dims = it->second.dims;
    if (!dims.empty() && (dims.size() != 2 || dims[0] != "position")) continue;
    out[variant] = it->second.value;
  }
  return out;
}

torch::Tensor gram(const torch::Tensor& table, int64_t n) {
  TORCH_CHECK(table.dim() == 2, "gram: expected a (N,E) table, got ", table.sizes());
  if (n <= 0 || n > table.size(0)) n = table.size(0);
  const auto p = table.narrow(0, 0, n).to(torch::kFloat64);  // (n,E)
  return p.matmul(p.t());                                    // (n,n)
}

int64_t gram_length(const SnapshotData& s, const SnapshotOptions& o, int64_t table_rows) {
  int64_t n = o.gram_length > 0                                 ? o.gram_length
              : s.attention.defined() && s.attention.dim() == 4 ? s.attention.size(2)
                                                                : table_rows;
  return std::min(n, table_rows);
}

std::map<std::string, std::pair<int64_t, int64_t>> gram_shapes(const SnapshotData& s,
                                                               const SnapshotOptions& o) {
  std::map<std::string, std::pair<int64_t, int64_t>> out;
  for (const auto& [variant, table] : absolute_tables(s))
    out[variant] = {gram_length(s, o, table.size(0)), table.size(1)};
  return out;
}

std::vector<MatrixRow> measure_snapshot(const SnapshotData& s, const SnapshotOptions& o) {
  std::vector<MatrixRow> rows;
  const Region region = o.causal ? Region::lower : Region::full;
  // The measured entries of a T×T map: the region, and for a padded probe its real pairs.
  const auto mask_for = [&](int64_t T) {
    return s.key_mask.defined() ? real_pairs(real_tokens(s.key_mask, T, s.step), o.causal)
                                : region_mask(T, region);
  };
  if (s.attention.defined()) {
    check_maps(s.attention, "attention", s.step);
    const int64_t T = s.attention.size(2);
    // A bidirectional map of a padded probe against what uniform attention would give (causal
    // rows are normalised over the prefix j <= i whatever the padding: no reference).
    const torch::Tensor reference = s.key_mask.defined() && !o.causal
                                        ? uniform_reference(real_tokens(s.key_mask, T, s.step))
                                        : torch::Tensor();
    measure_stack(s.attention, "attention", "", true, region, mask_for(T), reference, s.step, rows);
  }
  for (const auto& [variant, scores] : s.position_scores) {
    check_maps(scores, "position_scores/" + variant, s.step);
    measure_stack(scores, "position_scores", variant, false, region, mask_for(scores.size(2)), {},
                  s.step, rows);
  }
  for (const auto& [variant, table] : absolute_tables(s)) {
    const int64_t n = gram_length(s, o, table.size(0));
    rows.push_back({s.step, "gram", variant, -1, -1, Region::full,
                    measure(to_matrix(gram(table, n)), Region::full)});
  }
  return rows;
}

std::map<std::string, double> summarize(const std::vector<MatrixRow>& rows) {
  std::map<std::string, std::pair<double, int64_t>> acc;
  for (const auto& r : rows) {
    std::string key;
    if (r.source == "attention")
      key = r.head < 0 ? "attention" : "attention_heads";
    else if (r.source == "position_scores")
      key = "scores:" + r.variant;
    else
      key = r.source + ":" + r.variant;
    acc[key].first += r.metrics.invariance;
    acc[key].second += 1;
  }
  std::map<std::string, double> out;
  for (const auto& [k, v] : acc) out[k] = v.first / static_cast<double>(v.second);
  return out;
}

std::string quantity_label(const std::string& key) {
  if (key == "attention") return "attention (head average)";
  if (key == "attention_heads") return "attention (per head)";
  if (key.rfind("scores:", 0) == 0) return "position scores " + key.substr(7);
  if (key.rfind("gram:", 0) == 0) return "P·Pᵀ " + key.substr(5);
  return key;
}

}  // namespace relpos::analysis

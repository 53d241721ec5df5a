#include "core/train/snapshot_capture.h"

#include <algorithm>

#include "core/io/schema.h"
#include "core/train/objective.h"

namespace relpos {

namespace {

torch::Tensor cpu_float(const torch::Tensor& t) {
  return t.detach().to(torch::kCPU, torch::kFloat32).contiguous();
}

// Attention probabilities (B,H,T,T) averaged over the probes, each query row over the probes
// where that query is a real token (key_mask (B,T), undefined: no padding): a padding query
// row attends like any other and would pull the map toward what padding does. A row that is
// padding in every probe keeps the plain mean over the probes, so every row still sums to 1.
torch::Tensor probe_attention_mean(const torch::Tensor& probs, const torch::Tensor& key_mask) {
  if (!key_mask.defined()) return probs.mean(0);  // (H,T,T)
  const int64_t B = probs.size(0), T = probs.size(2);
  TORCH_CHECK(key_mask.sizes() == torch::IntArrayRef({B, T}), "probe key mask must be (", B, ",", T,
              "), got ", key_mask.sizes());
  auto real = key_mask.to(probs.dtype()).view({B, 1, T, 1});    // (B,1,T,1)
  auto count = real.sum(0);                                     // (1,T,1)
  auto over_real = (probs * real).sum(0) / count.clamp_min(1);  // (H,T,T)
  return torch::where(count > 0, over_real, probs.mean(0));     // (H,T,T)
}

// A variant's position-only score term (B,H,T,T), or (1,H,T,T) for a bias that does not depend
// on the tokens, averaged over the probes: entry (i, j) over the probes where both query i and key
// j are real tokens, since a content-dependent term (shaw, huang, transformer_xl) at a padding
// query or key says nothing about the model. Where no probe has both real, the plain mean.
torch::Tensor probe_pair_mean(const torch::Tensor& term, const torch::Tensor& key_mask) {
  if (!key_mask.defined() || term.size(0) == 1) return term.mean(0);  // (H,T,T)
  const int64_t B = term.size(0), T = term.size(2);
  TORCH_CHECK(key_mask.sizes() == torch::IntArrayRef({B, T}), "probe key mask must be (", B, ",", T,
              "), got ", key_mask.sizes());
  auto real = key_mask.to(term.dtype());                             // (B,T)
  auto both = (real.unsqueeze(2) * real.unsqueeze(1)).unsqueeze(1);  // (B,1,T,T)
  auto count = both.sum(0);                                          // (1,T,T)
  auto over_real = (term * both).sum(0) / count.clamp_min(1);        // (H,T,T)
  return torch::where(count > 0, over_real, term.mean(0));           // (H,T,T)
}

}  // namespace

SnapshotContent compute_snapshot(Model& model, const Batch& probe_cpu, const SnapshotConfig& cfg,
                                 torch::Device device) {
  torch::NoGradGuard guard;
  const bool was_training = model->is_training();
  model->eval();
  const Batch probe = to_device(probe_cpu, device);
  std::vector<AttentionRecord> records;
  ForwardOptions opts;
  opts.segments = probe.segments;
  opts.key_mask = probe.key_mask;
  opts.records = &records;
  model->hidden(probe.tokens, opts);
  const int64_t T = probe.tokens.size(1);

  SnapshotContent out;
  std::vector<torch::Tensor> attention;
  for (const auto& r : records)
    attention.push_back(probe_attention_mean(r.probs, probe.key_mask));  // (H,T,T)
  out.attention = cpu_float(torch::stack(attention));                  // (L,H,T,T)

  auto& transformer = model->transformer;
  const auto& encodings = transformer->position->encodings();
  auto input_scores = transformer->input_position_scores(T);  // per encoding (H,T,T) or undefined
  for (size_t e = 0; e < encodings.size(); ++e) {
    std::vector<torch::Tensor> layers;
    for (const auto& r : records) {
      auto term = r.terms.at(e);
      if (!term.defined()) break;
      // The position-only part: a content bias such as Transformer-XL's u·k_j is left out.
      if (e < r.content_parts.size() && r.content_parts[e].defined())
        term = term - r.content_parts[e];                        // (B,H,T,T)
      layers.push_back(probe_pair_mean(term, probe.key_mask));  // (H,T,T)
    }
    if (layers.size() == records.size() && !layers.empty()) {
      out.position_scores.push_back(
          {encodings[e]->type(), cpu_float(torch::stack(layers)), schema::axis_names(schema::kDimsAttention)});
    } else if (input_scores[e].defined()) {
      out.position_scores.push_back({encodings[e]->type(), cpu_float(input_scores[e].unsqueeze(0)),
                                     schema::axis_names(schema::kDimsAttention)});
    }
    ExportOptions eo;
    eo.length = T;
    eo.radius = cfg.profile_radius;
    std::vector<NamedTensor> tensors;
    for (auto& x : encodings[e]->export_tensors(eo))
      tensors.push_back({x.name, x.value.to(torch::kCPU).contiguous(), x.dims});
    out.position[encodings[e]->type()] = std::move(tensors);
  }
  if (was_training) model->train();
  return out;
}

std::vector<int64_t> snapshot_steps(const SnapshotConfig& cfg, int64_t steps) {
  std::vector<int64_t> s;
  if (cfg.every_percent > 0) {
    s.push_back(0);
    for (int64_t p = cfg.every_percent; p < 100; p += cfg.every_percent)
      s.push_back(steps * p / 100);
    s.push_back(steps);
  }
  for (auto x : cfg.steps) s.push_back(x);
  std::sort(s.begin(), s.end());
  s.erase(std::unique(s.begin(), s.end()), s.end());
  return s;
}

std::vector<NamedTensor> parameter_tensors(torch::nn::Module& model) {
  std::vector<NamedTensor> out;
  for (const auto& p : model.named_parameters()) out.push_back({p.key(), cpu_float(p.value()), {}});
  return out;
}

}  // namespace relpos

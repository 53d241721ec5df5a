#include "core/train/snapshot_capture.h"

#include <algorithm>

#include "core/io/schema.h"
#include "core/train/objective.h"

namespace relpos {

namespace {

torch::Tensor cpu_float(const torch::Tensor& t) {
  return t.detach().to(torch::kCPU, torch::kFloat32).contiguous();
}

// Probes per forward pass: the snapshot's maps are means over every probe sequence, accumulated
// chunk by chunk so that a large probe set at a long T (gpu scale: 64 x 12 heads x 512^2) never
// holds every probe's (B,H,T,T) probabilities at once.
constexpr int64_t kProbeChunk = 16;

// A mean over the probes of a (B,H,T,T) term, entry by entry over the probes where a weight is 1
// (the weight broadcasts against the term: (B,1,T,1) real queries, (B,1,T,T) real pairs), and the
// plain mean where no probe has weight there. Without weights, the plain mean. A (1,H,T,T) term (a
// bias that does not depend on the tokens) is the same in every probe: its plain mean.
class ProbeMean {
 public:
  void add(const torch::Tensor& term, const torch::Tensor& weight) {
    accumulate(plain_sum_, term.sum(0));
    probes_ += term.size(0);
    if (!weight.defined() || term.size(0) == 1) return;
    accumulate(weighted_sum_, (term * weight).sum(0));  // (H,T,T)
    accumulate(count_, weight.sum(0));                  // (1,T,1) or (1,T,T)
  }
  torch::Tensor mean() const {
    auto plain = plain_sum_ / static_cast<double>(probes_);
    if (!count_.defined()) return plain;
    return torch::where(count_ > 0, weighted_sum_ / count_.clamp_min(1), plain);
  }

 private:
  static void accumulate(torch::Tensor& into, const torch::Tensor& x) {
    into = into.defined() ? into + x : x;
  }
  torch::Tensor plain_sum_, weighted_sum_, count_;
  int64_t probes_ = 0;
};

// The probes' key mask as weights: real queries (B,1,T,1) for attention rows (a padding query
// row attends like any other and would pull the map toward what padding does), real query-key
// pairs (B,1,T,T) for a content-dependent score term (shaw, huang, transformer_xl at a padding
// token says nothing about the model). Undefined without padding.
torch::Tensor real_queries(const torch::Tensor& key_mask, torch::ScalarType dtype) {
  if (!key_mask.defined()) return {};
  const int64_t B = key_mask.size(0), T = key_mask.size(1);
  return key_mask.to(dtype).view({B, 1, T, 1});
}
torch::Tensor real_pairs(const torch::Tensor& key_mask, torch::ScalarType dtype) {
  if (!key_mask.defined()) return {};
  auto real = key_mask.to(dtype);                               // (B,T)
  return (real.unsqueeze(2) * real.unsqueeze(1)).unsqueeze(1);  // (B,1,T,T)
}

Batch probe_rows(const Batch& probe, int64_t start, int64_t count) {
  Batch out;
  out.tokens = probe.tokens.narrow(0, start, count);
  if (probe.key_mask.defined()) out.key_mask = probe.key_mask.narrow(0, start, count);
  if (probe.segments.defined()) out.segments = probe.segments.narrow(0, start, count);
  return out;
}

// The means over the probe set, per layer: attention probabilities, and per stacked encoding its
// position-only score term (a content bias such as Transformer-XL's u·k_j left out; encodings
// with no term in the attention have none).
struct ProbeMeans {
  std::vector<ProbeMean> attention;                // per layer
  std::vector<std::vector<ProbeMean>> positional;  // per encoding, per layer
  std::vector<bool> has_term;                      // per encoding
};

void add_probe_chunk(Model& model, const Batch& chunk, size_t encodings, ProbeMeans& means) {
  std::vector<AttentionRecord> records;
  ForwardOptions opts;
  opts.segments = chunk.segments;
  opts.key_mask = chunk.key_mask;
  opts.records = &records;
  model->hidden(chunk.tokens, opts);
  if (means.attention.empty()) {
    means.attention.resize(records.size());
    means.positional.assign(encodings, std::vector<ProbeMean>(records.size()));
    means.has_term.assign(encodings, !records.empty());
  }
  for (size_t l = 0; l < records.size(); ++l) {
    const auto& r = records[l];
    means.attention[l].add(r.probs, real_queries(chunk.key_mask, r.probs.scalar_type()));
    for (size_t e = 0; e < encodings; ++e) {
      auto term = e < r.terms.size() ? r.terms[e] : torch::Tensor();
      if (!term.defined()) {
        means.has_term[e] = false;
        continue;
      }
      if (e < r.content_parts.size() && r.content_parts[e].defined())
        term = term - r.content_parts[e];  // (B,H,T,T)
      means.positional[e][l].add(term, real_pairs(chunk.key_mask, term.scalar_type()));
    }
  }
}

torch::Tensor stacked_means(const std::vector<ProbeMean>& per_layer) {
  std::vector<torch::Tensor> layers;
  for (const auto& m : per_layer) layers.push_back(m.mean());  // (H,T,T)
  return cpu_float(torch::stack(layers));                      // (L,H,T,T)
}

}  // namespace

SnapshotContent compute_snapshot(Model& model, const Batch& probe_cpu, const SnapshotConfig& cfg,
                                 torch::Device device) {
  torch::NoGradGuard guard;
  const bool was_training = model->is_training();
  model->eval();
  const Batch probe = to_device(probe_cpu, device);
  const int64_t P = probe.tokens.size(0), T = probe.tokens.size(1);
  auto& transformer = model->transformer;
  const auto& encodings = transformer->position->encodings();
  ProbeMeans means;
  for (int64_t start = 0; start < P; start += kProbeChunk)
    add_probe_chunk(model, probe_rows(probe, start, std::min(kProbeChunk, P - start)),
                    encodings.size(), means);

  SnapshotContent out;
  out.attention = stacked_means(means.attention);             // (L,H,T,T)
  auto input_scores = transformer->input_position_scores(T);  // per encoding (H,T,T) or undefined
  for (size_t e = 0; e < encodings.size(); ++e) {
    if (means.has_term[e]) {
      out.position_scores.push_back({encodings[e]->type(), stacked_means(means.positional[e]),
                                     schema::axis_names(schema::kDimsAttention)});
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

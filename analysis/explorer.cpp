#include "analysis/explorer.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <nlohmann/json.hpp>

#include "analysis/explorer_js.h"  // generated from analysis/explorer.js (analysis/CMakeLists.txt)
#include "analysis/report.h"

namespace relpos::analysis {
namespace {

using json = nlohmann::json;

// float32 values, little-endian, as base64 (what the page decodes into a Float32Array).
std::string f32_base64(const torch::Tensor& t) {
  const auto c = t.to(torch::kCPU, torch::kFloat32).contiguous().reshape({-1});  // (n)
  std::string bytes(static_cast<size_t>(c.numel()) * 4, '\0');
  const float* v = c.data_ptr<float>();
  for (int64_t k = 0; k < c.numel(); ++k) {
    uint32_t u = 0;
    std::memcpy(&u, &v[k], 4);
    for (int b = 0; b < 4; ++b) bytes[4 * k + b] = static_cast<char>((u >> (8 * b)) & 0xFF);
  }
  return base64(bytes);
}

// One kind of map of a snapshot, as (A, B, n, n): A layers, B heads (1, 1 for P·Pᵀ).
struct ExplorerMap {
  std::string label;  // "attention", "position scores: learned", "P·Pᵀ: learned"
  std::string kind;   // attention | scores | gram
  torch::Tensor values;
};

std::vector<ExplorerMap> explorer_maps(const SnapshotData& s, const SnapshotOptions& o) {
  std::vector<ExplorerMap> out;
  if (s.attention.defined() && s.attention.dim() == 4)
    out.push_back({"attention", "attention", s.attention});
  for (const auto& [variant, scores] : s.position_scores)
    if (scores.dim() == 4) out.push_back({"position scores: " + variant, "scores", scores});
  for (const auto& [variant, table] : absolute_tables(s)) {
    const int64_t n = gram_length(s, o, table.size(0));
    out.push_back({"P·Pᵀ: " + variant, "gram", gram(table, n).view({1, 1, n, n})});  // (1,1,n,n)
  }
  return out;
}

// A family of relative-weight curves of a snapshot: rows over the distances r.
struct ExplorerCurves {
  std::string label;              // "tisa/f"
  std::vector<std::string> rows;  // "layer 0 head 1"
  std::vector<double> r;
  torch::Tensor values;  // (rows, r)
};

// Every exported tensor whose last axis is `distance` and whose other axes are layer, head or
// channel pair (the curves of relative_weight_figures), within the radius; r <= 0 of a signed
// profile of a causal model.
std::vector<ExplorerCurves> explorer_curves(const SnapshotData& s, int64_t radius, bool causal) {
  std::vector<ExplorerCurves> out;
  for (const auto& [variant, tensors] : s.position)
    for (const auto& [name, t] : tensors) {
      const auto& d = t.dims;
      if (d.size() < 2 || d.size() > 3 || d.back() != "distance" ||
          t.value.dim() != static_cast<int64_t>(d.size()))
        continue;
      bool known = true;
      for (size_t k = 0; k + 1 < d.size(); ++k)
        known = known && (d[k] == "layer" || d[k] == "head" || d[k] == "pair");
      if (!known) continue;
      const int64_t R = t.value.size(-1);
      torch::Tensor dist;
      for (const std::string& key : {name + "_distances", std::string("distances")})
        if (auto it = tensors.find(key); it != tensors.end() && it->second.value.numel() == R) {
          dist = it->second.value.to(torch::kFloat64).reshape({-1});
          break;
        }
      if (!dist.defined()) continue;
      const bool signed_r = dist.min().item<double>() < 0;
      std::vector<int64_t> keep;
      ExplorerCurves c;
      c.label = variant + "/" + name;
      for (int64_t k = 0; k < R; ++k) {
        const double r = dist[k].item<double>();
        if (std::abs(r) > static_cast<double>(radius) || (causal && signed_r && r > 0)) continue;
        keep.push_back(k);
        c.r.push_back(r);
      }
      if (keep.empty()) continue;
      const auto rows = t.value.reshape({-1, R});  // (rows,R)
      c.values = rows.index_select(1, torch::tensor(keep, torch::kInt64));
      const int64_t inner = d.size() == 3 ? t.value.size(1) : rows.size(0);
      for (int64_t k = 0; k < rows.size(0); ++k)
        c.rows.push_back(d.size() == 3 ? fmt::format("{} {} {} {}", d[0], k / inner, d[1], k % inner)
                                       : fmt::format("{} {}", d[0], k));
      out.push_back(std::move(c));
    }
  return out;
}

int64_t shown(int64_t n, int64_t stride) { return (n + stride - 1) / stride; }

// Floats of the maps of one snapshot at a stride.
int64_t map_values(const std::vector<ExplorerMap>& maps, int64_t stride) {
  int64_t total = 0;
  for (const auto& m : maps) {
    const int64_t side = shown(m.values.size(2), stride);
    total += m.values.size(0) * m.values.size(1) * side * side;
  }
  return total;
}

// Positions 0, s, 2s, ... below n.
std::vector<int64_t> shown_positions(int64_t n, int64_t stride) {
  std::vector<int64_t> idx;
  for (int64_t k = 0; k < n; k += stride) idx.push_back(k);
  return idx;
}

json run_json(const RunSource& src, const VariantPalette& palette, int64_t share,
              const ExplorerBudget& b, std::string& note) {
  const RunInfo& info = src.info();
  const SnapshotOptions so{info.causal, info.train_length};
  const SnapshotData last = src.snapshot(info.snapshot_steps.back());
  const ExplorerPlan plan = plan_explorer(last, info.snapshot_steps, so, share, b);
  json run = {{"name", info.name},        {"variant", info.group},
              {"colour", palette.colour(info.group)},
              {"causal", info.causal},    {"train_length", info.train_length},
              {"probes", last.probe_count}, {"stride", plan.stride},
              {"steps", plan.steps},      {"all_steps", info.snapshot_steps.size()}};
  json maps = json::array(), curves = json::array();
  for (size_t k = 0; k < plan.steps.size(); ++k) {
    const SnapshotData s = plan.steps[k] == last.step ? last : src.snapshot(plan.steps[k]);
    const auto ms = explorer_maps(s, so);
    for (size_t m = 0; m < ms.size(); ++m) {
      const int64_t n = ms[m].values.size(2);
      const std::vector<int64_t> pos = shown_positions(n, plan.stride);
      const auto idx = torch::tensor(pos, torch::kInt64);
      const auto sub = ms[m].values.index_select(2, idx).index_select(3, idx);  // (A,B,n',n')
      if (k == 0)
        maps.push_back({{"label", ms[m].label}, {"kind", ms[m].kind},
                        {"layers", sub.size(0)}, {"heads", sub.size(1)}, {"n", n},
                        {"pos", pos}, {"data", json::array()}});
      if (m < maps.size() && maps[m]["label"] == ms[m].label)
        maps[m]["data"].push_back(f32_base64(sub));
    }
    const auto cs = explorer_curves(s, b.radius, info.causal);
    for (size_t c = 0; c < cs.size(); ++c) {
      if (k == 0)
        curves.push_back({{"label", cs[c].label}, {"rows", cs[c].rows}, {"r", cs[c].r},
                          {"data", json::array()}});
      if (c < curves.size() && curves[c]["label"] == cs[c].label)
        curves[c]["data"].push_back(f32_base64(cs[c].values));
    }
  }
  run["maps"] = std::move(maps);
  run["curves"] = std::move(curves);
  if (plan.stride > 1 || plan.steps.size() < info.snapshot_steps.size())
    note += fmt::format(" {}: {}{}.", info.name,
                        plan.stride > 1 ? fmt::format("every {}th query/key (position) shown",
                                                      plan.stride)
                                        : "every position shown",
                        plan.steps.size() < info.snapshot_steps.size()
                            ? fmt::format(", {} of its {} snapshots", plan.steps.size(),
                                          info.snapshot_steps.size())
                            : "");
  return run;
}

}  // namespace

ExplorerPlan plan_explorer(const SnapshotData& sample, const std::vector<int64_t>& snapshot_steps,
                           const SnapshotOptions& o, int64_t share, const ExplorerBudget& b) {
  const auto maps = explorer_maps(sample, o);
  int64_t n = 1;
  for (const auto& m : maps) n = std::max(n, m.values.size(2));
  ExplorerPlan p;
  while (shown(n, p.stride) > b.max_side) p.stride *= 2;
  const int64_t total = static_cast<int64_t>(snapshot_steps.size());
  int64_t k = total;
  for (;;) {
    p.values_per_snapshot = std::max<int64_t>(1, map_values(maps, p.stride));
    k = std::min(total, std::max(std::min(total, b.min_snapshots), share / p.values_per_snapshot));
    if (k * p.values_per_snapshot <= share || shown(n, p.stride) <= 8) break;
    p.stride *= 2;
  }
  // k snapshots evenly spread over the run's, the first and the last among them.
  for (int64_t m = 0; m < k; ++m) {
    const int64_t at = k == 1 ? total - 1 : (m * (total - 1) + (k - 1) / 2) / (k - 1);
    if (p.steps.empty() || p.steps.back() != snapshot_steps[at]) p.steps.push_back(snapshot_steps[at]);
  }
  return p;
}

std::string explorer_json(const std::vector<const RunSource*>& runs, const VariantPalette& palette,
                          const ExplorerBudget& b) {
  std::vector<const RunSource*> with_snapshots;
  for (const RunSource* r : runs)
    if (!r->info().snapshot_steps.empty()) with_snapshots.push_back(r);
  json out = {{"runs", json::array()}};
  std::string note;
  const int64_t share =
      b.max_values / std::max<int64_t>(1, static_cast<int64_t>(with_snapshots.size()));
  for (const RunSource* r : with_snapshots)
    out["runs"].push_back(run_json(*r, palette, share, b, note));
  out["note"] = note;
  // Inside <script>: no "</" may close the element early.
  std::string text = out.dump();
  for (size_t at = text.find("</"); at != std::string::npos; at = text.find("</", at + 3))
    text.replace(at, 2, "<\\/");
  return text;
}

std::string explorer_html(const std::vector<const RunSource*>& runs, const VariantPalette& palette,
                          const ExplorerBudget& b) {
  const bool any = std::any_of(runs.begin(), runs.end(), [](const RunSource* r) {
    return !r->info().snapshot_steps.empty();
  });
  if (!any)
    return "<h2 id=\"explorer\">Explorer</h2>\n<p>No snapshots to explore: no run of this "
           "folder has a run.h5 with snapshots here.</p>\n";
  // Script errors go into the page (#rx-errors), where a reader, and the test, see them.
  return "<h2 id=\"explorer\">Explorer</h2>\n"
         "<style>#rx-errors:empty{display:none}</style>\n"
         "<pre id=\"rx-errors\" style=\"color:#b00000\"></pre>\n<script>\n"
         "(function () {\n"
         "  var note = function (m) { document.getElementById('rx-errors').textContent += m + '\\n'; };\n"
         "  window.addEventListener('error', function (e) { note('error: ' + e.message + ' (line ' + "
         "e.lineno + ')'); });\n"
         "  var original = console.error;\n"
         "  console.error = function () { note('console.error: ' + Array.prototype.join.call("
         "arguments, ' ')); original.apply(console, arguments); };\n"
         "})();\n</script>\n"
         "<div id=\"rx-root\"></div>\n"
         "<script type=\"application/json\" id=\"rx-data\">" +
         explorer_json(runs, palette, b) + "</script>\n<script>\n" + explorer_script() +
         "\n</script>\n";
}

const char* explorer_script() { return kExplorerJs; }

}  // namespace relpos::analysis

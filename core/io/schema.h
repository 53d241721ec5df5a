// Every name of the HDF5 run file (docs/hdf5-schema.md): group and dataset paths, attribute
// names, axis names and the schema version. Nothing else in the code base spells these strings;
// code that reads or writes run files builds its paths with the helpers below.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace relpos::schema {

// Version of the layout below. A reader refuses files with a newer version. Bump it when a
// path, dtype, shape or meaning changes; adding new optional datasets does not need a bump.
inline constexpr int64_t kSchemaVersion = 1;

// Root attributes.
inline constexpr const char* kAttrSchemaVersion = "schema_version";  // int64
inline constexpr const char* kAttrConfig = "config";                 // string, resolved YAML
inline constexpr const char* kAttrPositionTypes = "position_types";  // string, "learned+tisa"
inline constexpr const char* kAttrSeed = "seed";                     // int64
inline constexpr const char* kAttrTorchVersion = "torch_version";    // string
inline constexpr const char* kAttrGitCommit = "git_commit";          // string
inline constexpr const char* kAttrCreated = "created";               // string, ISO 8601 UTC
// int64, optional (runs before it lack it): trainable parameters of the position encodings
inline constexpr const char* kAttrPositionalParameters = "positional_parameters";
// string, optional (runs before it lack it): the attention path of the training steps, fused |
// eager (model.attention_impl after `auto` was resolved)
inline constexpr const char* kAttrAttention = "attention";

// On every dataset: comma-separated axis names, one per axis ("" for a scalar).
inline constexpr const char* kAttrDims = "dims";
// On /snapshots/step_<N> and /weights: the training step (int64).
inline constexpr const char* kAttrStep = "step";

// Groups.
inline constexpr const char* kRoot = "/";
inline constexpr const char* kMetrics = "/metrics";
inline constexpr const char* kProbe = "/probe";
inline constexpr const char* kSnapshots = "/snapshots";
inline constexpr const char* kWeights = "/weights";
inline constexpr const char* kEval = "/eval";
inline constexpr const char* kInitFrom = "/init_from";  // runs started with --init-from only
inline constexpr const char* kSplit = "/split";

// Datasets and subgroups (names relative to their group).
inline constexpr const char* kMetricStep = "step";        // /metrics/<name>/step    int64 (N)
inline constexpr const char* kMetricValue = "value";      // /metrics/<name>/value   float64 (N)
inline constexpr const char* kProbeTokens = "tokens";     // /probe/tokens    int64 (P,T)
inline constexpr const char* kProbeKeyMask = "key_mask";  // /probe/key_mask  uint8 (P,T)
inline constexpr const char* kSnapshotPrefix = "step_";   // /snapshots/step_<N>
inline constexpr const char* kAttention = "attention";    // float32 (L,H,T,T)
inline constexpr const char* kPositionScores = "position_scores";  // group of (L',H,T,T)
inline constexpr const char* kPosition = "position";               // group of groups per variant
// /init_from: attribute `source` (string); string datasets (parameter paths), each (N).
inline constexpr const char* kAttrInitSource = "source";
inline constexpr const char* kInitLoaded = "loaded";
inline constexpr const char* kInitInitialised = "initialised";
inline constexpr const char* kInitShapeMismatched = "shape_mismatched";
inline constexpr const char* kInitUnused = "unused";
// /split: attributes `split_seed` (int64) and `corpus` (string); /split/<train|valid|test>/
// with `ids` int64 (N) and `names` string (N).
inline constexpr const char* kAttrSplitSeed = "split_seed";
inline constexpr const char* kAttrSplitCorpus = "corpus";
inline constexpr const char* kSplitIds = "ids";
inline constexpr const char* kSplitNames = "names";
// Evaluation groups under /eval with a documented meaning.
inline constexpr const char* kEvalExtrapolation = "extrapolation";  // one row per eval length

// Axis names of the datasets whose axes the schema fixes.
inline constexpr const char* kDimsMetric = "point";
inline constexpr const char* kDimsProbe = "probe,token";
inline constexpr const char* kDimsAttention = "layer,head,query,key";
inline constexpr const char* kDimsParameter = "parameter";  // the /init_from lists
inline constexpr const char* kDimsDocument = "document";    // /split/<split>/{ids,names}
inline constexpr const char* kDimsEvalRow = "row";  // eval columns written without axis names
// Axis name i of a dataset written without axis names (e.g. /weights): "dim<i>".
inline constexpr const char* kDimsGenericPrefix = "dim";

// "layer,head,query,key" -> {"layer", "head", "query", "key"}; "" -> {}. For NamedTensor::dims:
// schema::axis_names(schema::kDimsAttention).
inline std::vector<std::string> axis_names(const std::string& dims) {
  std::vector<std::string> out;
  if (dims.empty()) return out;
  size_t start = 0;
  for (size_t comma; (comma = dims.find(',', start)) != std::string::npos; start = comma + 1)
    out.push_back(dims.substr(start, comma - start));
  out.push_back(dims.substr(start));
  return out;
}

// Paths.
inline std::string join(const std::string& group, const std::string& name) {
  return group == kRoot ? group + name : group + "/" + name;
}
inline std::string metric_group(const std::string& name) { return join(kMetrics, name); }
inline std::string metric_step_path(const std::string& name) {
  return join(metric_group(name), kMetricStep);
}
inline std::string metric_value_path(const std::string& name) {
  return join(metric_group(name), kMetricValue);
}
inline std::string probe_tokens_path() { return join(kProbe, kProbeTokens); }
inline std::string probe_key_mask_path() { return join(kProbe, kProbeKeyMask); }
inline std::string snapshot_name(int64_t step) { return kSnapshotPrefix + std::to_string(step); }
inline std::string snapshot_group(int64_t step) { return join(kSnapshots, snapshot_name(step)); }
inline std::string attention_path(int64_t step) { return join(snapshot_group(step), kAttention); }
inline std::string position_scores_group(int64_t step) {
  return join(snapshot_group(step), kPositionScores);
}
inline std::string position_scores_path(int64_t step, const std::string& variant) {
  return join(position_scores_group(step), variant);
}
inline std::string position_group(int64_t step) { return join(snapshot_group(step), kPosition); }
inline std::string position_variant_group(int64_t step, const std::string& variant) {
  return join(position_group(step), variant);
}
inline std::string position_path(int64_t step, const std::string& variant,
                                 const std::string& name) {
  return join(position_variant_group(step, variant), name);
}
inline std::string weight_path(const std::string& parameter) { return join(kWeights, parameter); }
inline std::string init_from_path(const std::string& list) { return join(kInitFrom, list); }
inline std::string split_group(const std::string& split) { return join(kSplit, split); }
inline std::string split_ids_path(const std::string& split) {
  return join(split_group(split), kSplitIds);
}
inline std::string split_names_path(const std::string& split) {
  return join(split_group(split), kSplitNames);
}
inline std::string eval_group(const std::string& group) { return join(kEval, group); }
inline std::string eval_column_path(const std::string& group, const std::string& column) {
  return join(eval_group(group), column);
}

}  // namespace relpos::schema

#include "core/train/run_record.h"

#include <nlohmann/json.hpp>

#include <cmath>

#include "core/io/schema.h"
#include "core/train/run_folder.h"
#include "core/util/paths.h"

namespace relpos {

namespace {

using Json = nlohmann::ordered_json;

Json number_or_null(double v) { return std::isfinite(v) ? Json(v) : Json(nullptr); }

}  // namespace

SplitRecord make_split_record(const TaskData& data, const DataConfig& cfg) {
  SplitRecord r;
  r.split_seed = cfg.split_seed;
  r.corpus = cfg.corpus;
  for (const auto& [split, name] :
       {std::pair{Split::Train, "train"}, {Split::Valid, "valid"}, {Split::Test, "test"}})
    r.parts.push_back({name, data.split_documents(split), data.split_document_names(split)});
  return r;
}

void write_split_json(const std::string& dir, const SplitRecord& split, const DataConfig& cfg) {
  Json j;
  j["corpus"] = cfg.corpus;
  if (!cfg.valid_corpus.empty()) j["valid_corpus"] = cfg.valid_corpus;
  if (!cfg.test_corpus.empty()) j["test_corpus"] = cfg.test_corpus;
  j["split_seed"] = cfg.split_seed;
  j["valid_fraction"] = cfg.valid_fraction;
  j["test_fraction"] = cfg.test_fraction;
  // One line per key, each split's lists compact on its line: tens of thousands of documents
  // (WordNet QA) stay a file one can read.
  std::string text = "{";
  const char* sep = "\n ";
  for (const auto& [key, value] : j.items()) {
    text += sep + Json(key).dump() + ": " + value.dump();
    sep = ",\n ";
  }
  for (const auto& p : split.parts) {
    const Json part{{"count", p.ids.size()}, {"ids", p.ids}, {"names", p.names}};
    text += sep + Json(p.split).dump() + ": " + part.dump();
  }
  write_text_atomic(run_split_path(dir), text + "\n}\n");
}

std::optional<InitFromRecord> read_init_from(const RunFileReader& file) {
  if (!file.exists(schema::kInitFrom)) return std::nullopt;
  InitFromRecord r;
  r.source = file.attribute(schema::kInitFrom, schema::kAttrInitSource);
  r.loaded = file.strings(schema::init_from_path(schema::kInitLoaded));
  r.initialised = file.strings(schema::init_from_path(schema::kInitInitialised));
  r.shape_mismatched = file.strings(schema::init_from_path(schema::kInitShapeMismatched));
  r.unused = file.strings(schema::init_from_path(schema::kInitUnused));
  return r;
}

void write_result_json(const std::string& dir, const TrainResult& r, double total_seconds,
                       const std::optional<InitFromRecord>& init) {
  Json j;
  j["steps"] = r.steps;
  j["train_seconds"] = std::round(total_seconds * 1000) / 1000;
  j["stopped_early"] = r.stopped_early;
  j["stop_reason"] = r.stop_reason;
  if (r.stopped_early)
    j["early_stop"] = Json{{"metric", r.early_stop_metric},
                           {"best", number_or_null(r.early_stop_best)},
                           {"evaluations_without_improvement", r.early_stop_evaluations}};
  j["skipped_batches"] = r.skipped_batches;
  if (init) {
    // Relative to the repository when inside it: committed results name no machine's folders
    // (readers resolve it with resolve_repo_path).
    j["init_from"] = repo_relative(init->source);
    j["init_from_parameters"] = Json{{"loaded", init->loaded},
                                     {"initialised", init->initialised},
                                     {"shape_mismatched", init->shape_mismatched},
                                     {"unused", init->unused}};
  }
  Json valid = Json::object();
  for (const auto& [k, v] : r.valid) valid[k] = number_or_null(v);
  j["valid"] = valid;
  write_text_atomic(run_result_path(dir), j.dump(2) + "\n");
}

}  // namespace relpos

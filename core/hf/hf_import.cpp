#include "core/hf/hf_import.h"

#include <fmt/format.h>
#include <fmt/ranges.h>  // fmt::join (in fmt/format.h only before fmt 11)

#include <filesystem>
#include <fstream>
#include <set>
#include <nlohmann/json.hpp>

#include "core/config/config.h"
#include "core/hf/hf_config.h"
#include "core/hf/hf_export.h"
#include "core/hf/hf_layout.h"
#include "core/hf/hf_vocab.h"
#include "core/hf/hf_weights.h"
#include "core/hf/staged_folder.h"
#include "core/io/checkpoint.h"
#include "core/io/run_file.h"
#include "core/io/schema.h"
#include "core/task/task_registry.h"
#include "core/model/model.h"
#include "core/train/optim.h"
#include "core/train/snapshot_capture.h"
#include "core/train/trainer.h"
#include "core/util/errors.h"
#include "core/util/paths.h"
#include "core/util/sha256.h"
#include "core/util/system.h"

namespace relpos {

namespace fs = std::filesystem;

namespace {

// A YAML double-quoted scalar for a --set value (JSON's quoting is valid YAML): a path with
// ": " or "#" in it stays one string.
std::string quoted(const std::string& s) { return nlohmann::json(s).dump(); }

std::string base_prefix(HfArch a) {
  switch (a) {
    case HfArch::Bert: return "bert.";
    case HfArch::Albert: return "albert.";
    case HfArch::Roberta: return "roberta.";
    case HfArch::Gpt2: return "transformer.";
  }
  return "";
}

// The settings a folder written by `relpos export` carries (config.json's "relpos":
// exported_run_settings), as overrides: the run's data, task and evaluation settings, except
// what the tokenizer files and config.json fix (the tokenizer and its files, the task type).
std::vector<std::string> exported_settings(const HfModelConfig& hf) {
  if (!hf.json.contains("relpos")) return {};
  const nlohmann::json& r = hf.json["relpos"];
  const auto bad = [&](const std::string& what) {
    return DataError(fmt::format("{}: \"relpos\": {} (expected the object relpos export writes: "
                                 "sections of string settings)",
                                 hf.config_path, what));
  };
  if (!r.is_object()) throw bad("not an object");
  static const std::set<std::string> fixed = {"data.tokenizer", "data.vocab_file",
                                              "data.merges_file", "data.tokenizer_file",
                                              "task.type"};
  std::vector<std::string> out;
  for (const char* section : kExportedSections) {
    if (!r.contains(section)) continue;
    if (!r[section].is_object()) throw bad(fmt::format("{} is not an object", section));
    for (const auto& [key, value] : r[section].items()) {
      const std::string dotted = fmt::format("{}.{}", section, key);
      if (fixed.count(dotted)) continue;
      if (!value.is_string() && !value.is_array())
        throw bad(fmt::format("{} is {}", dotted, value.type_name()));
      out.push_back(dotted + "=" + value.dump());  // JSON strings and arrays are YAML
    }
  }
  return out;
}

// The relpos config of the imported model: what config.json fixes (model.*, position.*, the task
// and tokenizer it was trained with), then the user's overrides of everything else.
LoadedConfig relpos_config(const HfModelConfig& hf, const ImportedVocab& vocab,
                           const std::string& run_dir, const std::vector<std::string>& sets) {
  for (const auto& s : sets) {
    const std::string key = s.substr(0, s.find('='));
    if (key.rfind("model.", 0) == 0 || key == "model" || key.rfind("position", 0) == 0)
      throw ConfigError(fmt::format("import: --set {}: model.* and position.* come from the "
                                    "checkpoint's config.json",
                                    s),
                        "set data.*, task.*, snapshots.* and the like here; change the model "
                        "later with relpos train --init-from RUN --set ...");
  }
  std::vector<std::string> o;
  auto add = [&](const std::string& key, const std::string& value) { o.push_back(key + "=" + value); };
  auto num = [](auto v) { return fmt::format("{}", v); };
  add("name", quoted(fs::path(hf.dir).lexically_normal().filename().string()));
  add("model.mode", hf.causal ? "decoder" : "encoder");
  add("model.layers", num(hf.layers));
  add("model.width", num(hf.width));
  add("model.heads", num(hf.heads));
  add("model.ff_width", num(hf.ff_width));
  add("model.embedding_width", num(hf.embed_width == hf.width ? 0 : hf.embed_width));
  add("model.share_layers", num(hf.arch == HfArch::Albert));
  add("model.norm", hf.pre_norm ? "pre" : "post");
  add("model.dropout", num(hf.dropout));
  add("model.attention_dropout", num(hf.attention_dropout));
  add("model.segments", num(hf.type_vocab > 0));
  add("model.segment_vocab", num(std::max<int64_t>(1, hf.type_vocab)));
  add("model.init_std", num(hf.init_std));
  add("model.activation", hf.activation);
  add("model.norm_eps", num(hf.norm_eps));
  add("model.embedding_norm_before_projection", num(hf.arch == HfArch::Albert));
  int64_t seq_len = hf.max_positions - hf.position_offset;
  if (hf.position_type == "absolute") {
    add("position.type", "learned");
    add("position.learned.max_len", num(seq_len));
  } else if (hf.position_type == "relative_key") {
    // Shaw et al.'s key vectors only (Hugging Face has no value term), unclipped up to M.
    add("position.type", "shaw");
    add("position.shaw.clip", num(hf.max_positions - 1));
    add("position.shaw.values", "false");
  } else {
    add("position.type", "huang_m4");
    add("position.huang_m4.clip", num(hf.max_positions - 1));
  }
  add("task.type",
      pretraining_task(hf.causal ? ModelMode::Causal : ModelMode::Bidirectional).name);
  add("task.seq_len", num(seq_len));
  add("data.tokenizer", vocab.tokenizer);
  if (vocab.tokenizer == "wordpiece") {
    add("data.vocab_file", quoted((fs::absolute(run_dir) / "vocab.txt").lexically_normal().string()));
    add("data.lower_case", num(vocab.lower_case));
  }
  if (vocab.tokenizer == "byte_bpe") {
    add("data.vocab_file",
        quoted((fs::absolute(run_dir) / "vocab.json").lexically_normal().string()));
    add("data.merges_file",
        quoted((fs::absolute(run_dir) / "merges.txt").lexically_normal().string()));
  }
  if (vocab.tokenizer == "sentencepiece") {
    // ALBERT's model has no byte pieces; these keys describe it, they train nothing.
    add("data.vocab_size", num(vocab.vocab_size));
    add("data.sentencepiece_byte_fallback", "false");
  }
  const std::vector<std::string> restored = exported_settings(hf);
  o.insert(o.end(), restored.begin(), restored.end());
  o.insert(o.end(), sets.begin(), sets.end());
  return load_config({config_dir() + "/base.yaml"}, o);
}

// Snapshot step 0: the position tensors and the position-only scores that need no probe text.
void write_run_file(const std::string& path, const Config& cfg, const std::string& yaml,
                    Model& model) {
  RunAttributes attrs;
  attrs.config_yaml = yaml;
  attrs.position_types = join_names(cfg.position.types, "+");
  attrs.seed = cfg.seed;
  attrs.torch_version = torch_version();
  attrs.git_commit = git_commit();
  attrs.created = utc_timestamp();
  auto file = RunFileWriter::create(path, attrs);
  const int64_t T = cfg.snapshots.probe_len > 0 ? cfg.snapshots.probe_len : cfg.task.seq_len;
  auto& transformer = model->transformer;
  const auto& encodings = transformer->position->encodings();
  const auto input_scores = transformer->input_position_scores(T);  // per encoding (H,T,T)
  std::vector<NamedTensor> scores;
  std::map<std::string, std::vector<NamedTensor>> position;
  ExportOptions eo;
  eo.length = T;
  eo.radius = cfg.snapshots.profile_radius;
  for (size_t e = 0; e < encodings.size(); ++e) {
    if (input_scores[e].defined())
      scores.push_back({encodings[e]->type(), input_scores[e].unsqueeze(0).contiguous(),
                        schema::axis_names(schema::kDimsAttention)});  // (1,H,T,T)
    for (auto& x : encodings[e]->export_tensors(eo))
      position[encodings[e]->type()].push_back({x.name, x.value.contiguous(), x.dims});
  }
  file->write_snapshot(0, torch::Tensor(), scores, position);
  file->write_weights(parameter_tensors(*model), 0);
  file->close();
}

void write_result(const std::string& path, const HfModelConfig& hf, const ImportReport& r,
                  const ImportedVocab& vocab) {
  nlohmann::ordered_json j;
  j["steps"] = 0;
  j["train_seconds"] = 0;
  j["stopped_early"] = false;
  j["stop_reason"] = "imported by relpos import (no training)";
  j["skipped_batches"] = 0;
  std::vector<std::string> files;
  for (const auto& [from, to] : vocab.copies) files.push_back(to);
  j["imported"] = {{"source", fs::absolute(hf.dir).lexically_normal().string()},
                   {"architecture", hf.model_type},
                   {"config_json", hf.json},
                   {"weights_file", r.weights_file},
                   {"weights_sha256", r.weights_sha256},
                   {"tokenizer", vocab.tokenizer},
                   {"tokenizer_files", files},
                   {"unused_tensors", r.unused},
                   {"initialised_parameters", r.initialised},
                   {"notes", r.notes}};
  j["valid"] = nlohmann::ordered_json::object();
  std::ofstream out(path);
  out << j.dump(2) << "\n";
  if (!out) throw RunError(fmt::format("{}: write failed (disk full?)", path));
}

}  // namespace

ImportReport import_hf_model(const ImportOptions& opts) {
  if (opts.source.empty()) throw ConfigError("import: no model folder given", "relpos import DIR --out RUN");
  if (opts.out.empty()) throw ConfigError("import: --out RUN is required", "the run folder to write");
  // Every input is read and checked before anything is written.
  const HfModelConfig hf = read_hf_config(opts.source);
  const ImportedVocab vocab = import_vocab(hf);
  const LoadedConfig loaded = relpos_config(hf, vocab, opts.out, opts.sets);
  const Config& cfg = loaded.config;
  HfWeights weights(open_weight_file(hf.dir), base_prefix(hf.arch));

  torch::manual_seed(static_cast<uint64_t>(cfg.seed));  // a fresh head is seeded like a run
  // relpos's token count (GPT-2: its <|endoftext|> row stands for five special ids).
  Model model = build_model(cfg, vocab.vocab_size, torch::kCPU);
  const MappedWeights mapped =
      map_hf_weights(hf, weights, model, vocab.rows, opts.init_missing_head);

  ImportReport r;
  r.architecture = hf.model_type;
  r.position_types = join_names(cfg.position.types, "+");
  r.weights_file = fs::absolute(weights.file().path()).lexically_normal().string();
  r.weights_sha256 = sha256_file(weights.file().path());
  for (const auto& p : model->parameters()) r.parameters += p.numel();
  r.unused = weights.unused();
  r.initialised = mapped.initialised;
  r.notes = vocab.notes;
  r.notes.insert(r.notes.end(), mapped.notes.begin(), mapped.notes.end());

  StagedFolder folder(opts.out, opts.overwrite, "import: --out", "config.yaml");
  const std::string dir = folder.path();
  const std::string yaml = to_yaml(cfg);
  {
    std::ofstream out(run_config_path(dir));
    out << yaml;
    if (!out) throw RunError(fmt::format("{}: write failed", run_config_path(dir)));
  }
  auto optimizer = make_optimizer(*model, cfg.train);
  save_checkpoint(run_checkpoint_path(dir), *model, *optimizer, TrainState{});
  write_run_file(run_h5_path(dir), cfg, yaml, model);
  for (const auto& [from, to] : vocab.copies) {
    std::error_code ec;
    fs::copy_file(from, fs::path(dir) / to, ec);
    if (ec) throw RunError(fmt::format("cannot copy {} into {}: {}", from, dir, ec.message()));
  }
  write_result(run_result_path(dir), hf, r, vocab);
  folder.commit();
  return r;
}

}  // namespace relpos

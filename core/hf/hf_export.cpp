#include "core/hf/hf_export.h"

#include <fmt/format.h>
#include <fmt/ranges.h>  // fmt::join (in fmt/format.h only before fmt 11)

#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <yaml-cpp/yaml.h>

#include "core/config/config.h"
#include "core/util/text_util.h"
#include "core/hf/hf_layout.h"
#include "core/hf/hf_vocab.h"
#include "core/hf/staged_folder.h"
#include "core/io/checkpoint.h"
#include "core/io/run_file.h"
#include "core/io/safetensors.h"
#include "core/io/schema.h"
#include "core/model/model.h"
#include "core/train/trainer.h"
#include "core/util/errors.h"

namespace relpos {

namespace fs = std::filesystem;

namespace {

using Tensors = std::vector<std::pair<std::string, torch::Tensor>>;

// The vocabulary size of a run: the rows of its token embeddings in run.h5's /weights.
int64_t run_vocab_size(const std::string& run) {
  const auto reader = RunFileReader::open(run_h5_path(run));
  const std::string p = schema::weight_path("transformer.token_embedding.weight");
  if (!reader->exists(p))
    throw SchemaError(fmt::format("{}: no {} (expected the run's final weights)", run_h5_path(run), p));
  return reader->dataset(p).value.size(0);
}

// A YAML tree as JSON: maps as objects, sequences as arrays, scalars as strings (the text
// relpos's config reader parses, whatever the type).
nlohmann::ordered_json hf_export_yaml_json(const YAML::Node& n) {
  if (n.IsMap()) {
    nlohmann::ordered_json o = nlohmann::ordered_json::object();
    for (const auto& kv : n) o[kv.first.as<std::string>()] = hf_export_yaml_json(kv.second);
    return o;
  }
  if (n.IsSequence()) {
    nlohmann::ordered_json a = nlohmann::ordered_json::array();
    for (const auto& x : n) a.push_back(hf_export_yaml_json(x));
    return a;
  }
  return n.IsScalar() ? n.Scalar() : std::string();
}

void write_text(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary);
  out << text;
  if (!out) throw RunError(fmt::format("{}: write failed (disk full?)", path));
}

}  // namespace

nlohmann::ordered_json exported_run_settings(const Config& cfg) {
  const YAML::Node root = YAML::Load(to_yaml(cfg));
  nlohmann::ordered_json j = {{"format", 1},
                              {"about", "written by relpos export: the run's data, task and "
                                        "evaluation settings, which relpos import restores"},
                              {"tokenizer", cfg.data.tokenizer}};
  for (const char* section : kExportedSections) j[section] = hf_export_yaml_json(root[section]);
  return j;
}

std::string hf_exportable_variants() {
  return "learned (absolute), huang_m4 (relative_key_query), shaw with position.shaw.values=false "
         "(relative_key); the relative ones with clip >= task.seq_len - 1";
}

namespace {

using ParameterMap = std::map<std::string, torch::Tensor>;

// The relative table of a huang_m4 or shaw run ((L,2K+1,d), or (L,H,2K+1,d) per head).
const torch::Tensor& relative_table(const ParameterMap& p, const std::string& type) {
  return p.at(type == "huang_m4" ? "transformer.position.huang_m4.table"
                                 : "transformer.position.shaw.keys");
}

// Every reason at once why the run is not Hugging Face's BertForMaskedLM (empty: it is), and the
// relative table's clip K (-1 for learned).
std::vector<std::string> bert_incompatibilities(const Config& cfg, const Model& model,
                                                const ParameterMap& p, int64_t& K) {
  std::vector<std::string> why;
  const ModelConfig& m = cfg.model;
  const auto& types = cfg.position.types;
  const std::string type = types.size() == 1 ? types[0] : "";
  K = -1;
  if (type == "huang_m4" || type == "shaw") {
    const torch::Tensor& table = relative_table(p, type);
    K = (table.size(-2) - 1) / 2;
    const char* hf = type == "huang_m4" ? "relative_key_query" : "relative_key";
    if (table.dim() == 4)
      why.push_back(fmt::format(
          "position.{}.per_head true: Hugging Face's {} shares one table across the heads", type,
          hf));
  }
  if (type == "shaw" && p.count("transformer.position.shaw.values"))
    why.push_back(
        "shaw with value vectors (position.shaw.values true): Hugging Face's "
        "relative_key has none");
  if (type != "learned" && type != "huang_m4" && type != "shaw")
    why.push_back(fmt::format("position.type {} has no Hugging Face BERT equivalent",
                              join_names(types, "+")));
  if (K >= 0 && K < cfg.task.seq_len - 1)
    why.push_back(fmt::format("position.{}.clip {} is below task.seq_len - 1 = {}: the run "
                              "clipped distances, which Hugging Face's table (one row per "
                              "distance) cannot express",
                              type, K, cfg.task.seq_len - 1));
  if (m.causal()) why.push_back("model.mode decoder (BERT is an encoder)");
  if (m.norm != "post") why.push_back("model.norm pre (BERT is post-LN)");
  if (m.embed_dim() != m.width) why.push_back("model.embedding_width below model.width (ALBERT-style)");
  if (m.share_layers) why.push_back("model.share_layers (ALBERT-style)");
  if (!model->lm_head) why.push_back(fmt::format("task.type {} has no MLM head", cfg.task.type));
  return why;
}

// The run's parameters under BertForMaskedLM's names; sets the report's position embedding type
// and notes, and `max_positions`.
Tensors bert_tensors(const Config& cfg, const ParameterMap& p, int64_t K, HfExportReport& r,
                     int64_t& max_positions) {
  const ModelConfig& m = cfg.model;
  const std::string& type = cfg.position.types[0];
  const int64_t D = m.width, L = m.layers;
  Tensors t;
  auto bert = [](const std::string& name) { return "bert." + name; };
  const auto& word = p.at("transformer.token_embedding.weight");
  t.push_back({bert("embeddings.word_embeddings.weight"), word});
  if (type == "learned") {
    const auto& table = p.at("transformer.position.learned.table");
    max_positions = table.size(0);
    t.push_back({bert("embeddings.position_embeddings.weight"), table});
    r.position_embedding_type = "absolute";
  } else {
    // Hugging Face's BERT keeps (and ignores) an absolute table with relative attention.
    max_positions = K + 1;
    t.push_back({bert("embeddings.position_embeddings.weight"), torch::zeros({max_positions, D})});
    r.position_embedding_type = type == "huang_m4" ? "relative_key_query" : "relative_key";
  }
  if (m.segments) {
    t.push_back({bert("embeddings.token_type_embeddings.weight"), p.at("transformer.segment_embedding.weight")});
  } else {
    t.push_back({bert("embeddings.token_type_embeddings.weight"), torch::zeros({2, D})});
    r.notes.push_back("the run has no segment embeddings: token_type_embeddings are zeros "
                      "(type_vocab_size 2), so token_type_ids change nothing");
  }
  for (const auto& mp : bert_modules(L)) {
    const bool head = mp.relpos.rfind("lm_head.", 0) == 0;
    for (const char* part : {".weight", ".bias"})
      t.push_back({(head ? mp.hf : bert(mp.hf)) + part, p.at(mp.relpos + part)});
  }
  if (type != "learned") {
    const auto& table = relative_table(p, type);  // (L,2K+1,d)
    for (int64_t l = 0; l < L; ++l)
      t.push_back({bert(bert_distance_name(l)), reverse_distance_rows(table[l])});  // (2K+1,d)
  }
  t.push_back({"cls.predictions.bias", p.at("lm_head.bias")});
  t.push_back({"cls.predictions.decoder.weight", word});  // tied; stored for older loaders
  t.push_back({"cls.predictions.decoder.bias", p.at("lm_head.bias")});
  return t;
}

// config.json of BertForMaskedLM for the run.
nlohmann::ordered_json bert_config(const Config& cfg, int64_t vocab, int64_t max_positions,
                                   const std::string& position_embedding_type) {
  const ModelConfig& m = cfg.model;
  return {{"architectures", {"BertForMaskedLM"}},
          {"model_type", "bert"},
          {"vocab_size", vocab},
          {"hidden_size", m.width},
          {"num_hidden_layers", m.layers},
          {"num_attention_heads", m.heads},
          {"intermediate_size", m.ff_width},
          {"hidden_act", m.activation == "gelu_tanh" ? "gelu_new" : "gelu"},
          {"hidden_dropout_prob", m.dropout},
          {"attention_probs_dropout_prob", m.attention_dropout},
          {"max_position_embeddings", max_positions},
          {"type_vocab_size", m.segments ? m.segment_vocab : 2},
          {"initializer_range", m.init_std},
          {"layer_norm_eps", m.norm_eps},
          {"pad_token_id", 0},
          {"position_embedding_type", position_embedding_type},
          {"torch_dtype", "float32"}};
}

}  // namespace

HfExportReport export_hf_model(const HfExportOptions& opts) {
  if (opts.run.empty()) throw ConfigError("export: no run folder given", "relpos export RUN --format hf --out DIR");
  if (opts.out.empty()) throw ConfigError("export: --out DIR is required", "the folder to write");
  if (!is_run_folder(opts.run))
    throw ConfigError(fmt::format("export: {}: not a run folder (no run.h5)", opts.run),
                      "give the folder that `relpos train --out` wrote");
  Config cfg = load_run_config(opts.run).config;
  const int64_t vocab = run_vocab_size(opts.run);
  Model model(cfg, vocab);
  load_model_parameters(run_checkpoint_path(opts.run), *model);
  ParameterMap p;
  for (const auto& kv : model->named_parameters()) p[kv.key()] = kv.value().detach();
  int64_t K = -1;
  const std::vector<std::string> why = bert_incompatibilities(cfg, model, p, K);
  if (!why.empty())
    throw ConfigError(
        fmt::format("export {}: cannot be written as Hugging Face's BertForMaskedLM: {}",
                    opts.run, fmt::join(why, "; ")),
        "exportable: BERT-shaped runs (model.mode encoder, model.norm post, task.type mlm) with "
        "position.type " + hf_exportable_variants());

  HfExportReport r;
  int64_t max_positions = 0;
  const Tensors t = bert_tensors(cfg, p, K, r, max_positions);
  nlohmann::ordered_json config = bert_config(cfg, vocab, max_positions, r.position_embedding_type);
  // The tokenizer in relpos's id order, and the settings an import needs to read the same
  // documents the run read.
  use_run_tokenizer(opts.run, cfg);
  const ExportedVocab tokenizer = export_vocab(cfg, vocab, max_positions);
  r.notes.insert(r.notes.end(), tokenizer.notes.begin(), tokenizer.notes.end());
  config["relpos"] = exported_run_settings(load_run_config(opts.run).config);

  StagedFolder folder(opts.out, opts.overwrite, "export: --out", "config.json");
  const fs::path dir(folder.path());
  write_text((dir / "config.json").string(), config.dump(2) + "\n");
  write_safetensors((dir / "model.safetensors").string(), t, {{"format", "pt"}});
  r.files = {"config.json", "model.safetensors"};
  for (const auto& [name, text] : tokenizer.files) {
    write_text((dir / name).string(), text);
    r.files.push_back(name);
  }
  folder.commit();
  return r;
}

}  // namespace relpos

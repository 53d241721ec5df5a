#include "core/hf/hf_layout.h"

#include <fmt/format.h>

#include <map>
#include <set>

#include "core/util/errors.h"

namespace relpos {

namespace {

// relpos block module -> BERT layer module (both without the layer prefix).
const std::vector<std::pair<std::string, std::string>>& bert_block() {
  static const std::vector<std::pair<std::string, std::string>> b = {
      {"attention.query", "attention.self.query"}, {"attention.key", "attention.self.key"},
      {"attention.value", "attention.self.value"}, {"attention.output", "attention.output.dense"},
      {"attention_norm", "attention.output.LayerNorm"}, {"ff_in", "intermediate.dense"},
      {"ff_out", "output.dense"},                  {"ff_norm", "output.LayerNorm"}};
  return b;
}

const std::vector<std::pair<std::string, std::string>>& albert_block() {
  static const std::vector<std::pair<std::string, std::string>> b = {
      {"attention.query", "attention.query"},   {"attention.key", "attention.key"},
      {"attention.value", "attention.value"},   {"attention.output", "attention.dense"},
      {"attention_norm", "attention.LayerNorm"}, {"ff_in", "ffn"},
      {"ff_out", "ffn_output"},                 {"ff_norm", "full_layer_layer_norm"}};
  return b;
}

// The MLM head's module names: dense, LayerNorm, output bias, tied decoder.
struct HeadNames {
  std::string prefix, dense, norm, bias, decoder;
};

HeadNames head_names(HfArch arch) {
  switch (arch) {
    case HfArch::Bert:
      return {"cls.predictions.", "cls.predictions.transform.dense",
              "cls.predictions.transform.LayerNorm", "cls.predictions.bias",
              "cls.predictions.decoder"};
    case HfArch::Roberta:
      return {"lm_head.", "lm_head.dense", "lm_head.layer_norm", "lm_head.bias", "lm_head.decoder"};
    case HfArch::Albert:
      return {"predictions.", "predictions.dense", "predictions.LayerNorm", "predictions.bias",
              "predictions.decoder"};
    case HfArch::Gpt2:
      return {"lm_head.", "", "", "", "lm_head"};
  }
  return {};
}

// Copies checkpoint tensors into the model's parameters by name, and says which were never set.
class Filler {
 public:
  Filler(Model& model, HfWeights& w, const std::string& config_path)
      : w_(w), why_(config_path) {
    for (const auto& p : model->named_parameters()) params_[p.key()] = p.value();
  }
  const torch::Tensor& param(const std::string& name) const { return params_.at(name); }

  // The checkpoint tensor `hf` for parameter `relpos`, with the parameter's shape.
  torch::Tensor take_as(const std::string& hf, const std::string& relpos) {
    return w_.take(hf, param(relpos).sizes().vec(), why_);
  }
  void set(const std::string& relpos, const torch::Tensor& value) {
    set_.insert(relpos);
    if (!value.defined()) return;  // missing: reported by check_complete()
    torch::NoGradGuard guard;
    auto& p = params_.at(relpos);
    TORCH_CHECK(p.sizes() == value.sizes(), "import of ", relpos, ": shape ", value.sizes(),
                " for a parameter of shape ", p.sizes());
    p.copy_(value);
  }
  // weight and bias of a Linear or LayerNorm.
  void module(const std::string& relpos, const std::string& hf) {
    for (const char* part : {".weight", ".bias"})
      set(relpos + part, take_as(hf + part, relpos + part));
  }
  void mark(const std::string& relpos) { set_.insert(relpos); }
  std::vector<std::string> unset() const {
    std::vector<std::string> out;
    for (const auto& [name, p] : params_)
      if (!set_.count(name)) out.push_back(name);
    return out;
  }

 private:
  HfWeights& w_;
  std::string why_;
  std::map<std::string, torch::Tensor> params_;
  std::set<std::string> set_;
};

torch::Tensor rows(const torch::Tensor& t, const std::vector<int64_t>& order) {
  if (!t.defined() || order.empty()) return t;
  return t.index_select(0, torch::tensor(order, torch::kLong));  // (V,...)
}

// The output layer must be the input embeddings (relpos ties them); a stored copy is checked.
void check_tied(HfWeights& w, const std::string& decoder, const torch::Tensor& embeddings,
                const std::string& embeddings_name) {
  if (!w.has(decoder) || !embeddings.defined()) return;
  const auto d = w.take(decoder, embeddings.sizes().vec(), "tied to " + embeddings_name);
  if (d.defined() && !d.equal(embeddings))
    throw DataError(fmt::format("{}: {} differs from {}: relpos ties the output layer to the "
                                "input embeddings and cannot import an untied one",
                                w.file().path(), decoder, embeddings_name));
}

void map_encoder(const HfModelConfig& hf, HfWeights& w, Filler& f,
                 const std::vector<int64_t>& vocab_rows, bool head, MappedWeights& out) {
  const bool albert = hf.arch == HfArch::Albert;
  const auto emb = std::string("embeddings.");
  const auto word = f.take_as(emb + "word_embeddings.weight", "transformer.token_embedding.weight");
  f.set("transformer.token_embedding.weight", rows(word, vocab_rows));
  f.module("transformer.embedding_norm", emb + "LayerNorm");
  f.set("transformer.segment_embedding.weight",
        f.take_as(emb + "token_type_embeddings.weight", "transformer.segment_embedding.weight"));
  if (hf.position_type == "absolute") {
    const int64_t M = hf.max_positions, E = hf.embed_width, off = hf.position_offset;
    auto table = w.take(emb + "position_embeddings.weight", {M, E}, hf.config_path);
    if (table.defined() && off > 0) {
      table = table.narrow(0, off, M - off);  // (M-off,E)
      out.notes.push_back(fmt::format(
          "rows 0..{} of embeddings.position_embeddings.weight are left out: RoBERTa's first "
          "position is row pad_token_id + 1 = {}",
          off - 1, off));
    }
    f.set("transformer.position.learned.table", table);
  } else {
    // One table per layer in the checkpoint, one (L,2K+1,d) parameter in relpos.
    const std::string variant = hf.position_type == "relative_key" ? "shaw" : "huang_m4";
    const std::string name = "transformer.position." + variant +
                             (variant == "shaw" ? ".keys" : ".table");
    std::vector<torch::Tensor> tables;
    for (int64_t l = 0; l < hf.layers; ++l) {
      auto t = w.take(bert_distance_name(l), {2 * hf.max_positions - 1, hf.head_dim()},
                      hf.config_path);
      tables.push_back(t.defined() ? reverse_distance_rows(t) : t);
    }
    bool all = true;
    for (const auto& t : tables) all = all && t.defined();
    f.set(name, all ? torch::stack(tables) : torch::Tensor());  // (L,2K+1,d)
    out.notes.push_back(fmt::format(
        "encoder.layer.N.attention.self.distance_embedding.weight -> position.{} (clip {}, rows "
        "reversed: Hugging Face indexes by query - key, relpos by key - query); "
        "embeddings.position_embeddings.weight is not used by {}",
        variant, hf.max_positions - 1, hf.position_type));
  }
  if (albert) {
    f.module("transformer.embedding_projection", "encoder.embedding_hidden_mapping_in");
    for (const auto& [r, h] : albert_block())
      f.module("transformer.blocks.0." + r, "encoder.albert_layer_groups.0.albert_layers.0." + h);
  } else {
    for (int64_t l = 0; l < hf.layers; ++l)
      for (const auto& [r, h] : bert_block())
        f.module(fmt::format("transformer.blocks.{}.{}", l, r),
                 fmt::format("encoder.layer.{}.{}", l, h));
  }
  const HeadNames hn = head_names(hf.arch);
  if (!head) {
    for (const char* p : {"lm_head.dense.weight", "lm_head.dense.bias", "lm_head.norm.weight",
                          "lm_head.norm.bias", "lm_head.bias"}) {
      f.mark(p);
      out.initialised.push_back(p);
    }
    return;
  }
  f.module("lm_head.dense", hn.dense);
  f.module("lm_head.norm", hn.norm);
  const auto bias = f.take_as(hn.bias, "lm_head.bias");
  f.set("lm_head.bias", rows(bias, vocab_rows));
  check_tied(w, hn.decoder + ".weight", word, emb + "word_embeddings.weight");
  check_tied(w, hn.decoder + ".bias", bias, hn.bias);
}

void map_gpt2(const HfModelConfig& hf, HfWeights& w, Filler& f,
              const std::vector<int64_t>& vocab_rows, MappedWeights& out) {
  const int64_t D = hf.width, F = hf.ff_width;
  // (V,D) as stored; relpos's table has a row per relpos id (five copies of <|endoftext|>).
  const auto wte = w.take("wte.weight", {hf.vocab, D}, hf.config_path);
  f.set("transformer.token_embedding.weight", rows(wte, vocab_rows));
  f.set("transformer.position.learned.table",
        f.take_as("wpe.weight", "transformer.position.learned.table"));
  auto t = [](const torch::Tensor& x) { return x.defined() ? x.t().contiguous() : x; };
  for (int64_t l = 0; l < hf.layers; ++l) {
    const std::string h = fmt::format("h.{}.", l), b = fmt::format("transformer.blocks.{}.", l);
    f.module(b + "attention_norm", h + "ln_1");
    f.module(b + "ff_norm", h + "ln_2");
    // Conv1D: y = x W + b with W (in, out); c_attn's out holds q, k, v one after the other.
    const auto qkv = t(w.take(h + "attn.c_attn.weight", {D, 3 * D}, hf.config_path));  // (3D,D)
    const auto qkv_b = w.take(h + "attn.c_attn.bias", {3 * D}, hf.config_path);        // (3D)
    const char* parts[] = {"query", "key", "value"};
    for (int64_t i = 0; i < 3; ++i) {
      const std::string p = b + "attention." + parts[i];
      f.set(p + ".weight", qkv.defined() ? qkv.narrow(0, i * D, D).contiguous() : qkv);  // (D,D)
      f.set(p + ".bias", qkv_b.defined() ? qkv_b.narrow(0, i * D, D).contiguous() : qkv_b);  // (D)
    }
    f.set(b + "attention.output.weight", t(w.take(h + "attn.c_proj.weight", {D, D}, hf.config_path)));
    f.set(b + "attention.output.bias", w.take(h + "attn.c_proj.bias", {D}, hf.config_path));
    f.set(b + "ff_in.weight", t(w.take(h + "mlp.c_fc.weight", {D, F}, hf.config_path)));
    f.set(b + "ff_in.bias", w.take(h + "mlp.c_fc.bias", {F}, hf.config_path));
    f.set(b + "ff_out.weight", t(w.take(h + "mlp.c_proj.weight", {F, D}, hf.config_path)));
    f.set(b + "ff_out.bias", w.take(h + "mlp.c_proj.bias", {D}, hf.config_path));
  }
  f.module("transformer.final_norm", "ln_f");
  check_tied(w, "lm_head.weight", wte, "wte.weight");
  f.set("lm_head.bias", torch::zeros_like(f.param("lm_head.bias")));
  out.notes.push_back("lm_head.bias set to zero: GPT-2's output layer has no bias");
}

}  // namespace

std::vector<ModulePair> bert_modules(int64_t layers) {
  std::vector<ModulePair> out = {{"transformer.embedding_norm", "embeddings.LayerNorm"}};
  for (int64_t l = 0; l < layers; ++l)
    for (const auto& [r, h] : bert_block())
      out.push_back({fmt::format("transformer.blocks.{}.{}", l, r), fmt::format("encoder.layer.{}.{}", l, h)});
  const HeadNames hn = head_names(HfArch::Bert);
  out.push_back({"lm_head.dense", hn.dense});
  out.push_back({"lm_head.norm", hn.norm});
  return out;
}

std::string bert_distance_name(int64_t layer) {
  return fmt::format("encoder.layer.{}.attention.self.distance_embedding.weight", layer);
}

torch::Tensor reverse_distance_rows(const torch::Tensor& table) {
  return table.flip({0}).contiguous();  // (2K+1,d)
}

MappedWeights map_hf_weights(const HfModelConfig& hf, HfWeights& weights, Model& model,
                             const std::vector<int64_t>& vocab_rows, bool init_missing_head) {
  MappedWeights out;
  Filler f(model, weights, hf.config_path);
  if (hf.arch == HfArch::Gpt2) {
    map_gpt2(hf, weights, f, vocab_rows, out);
  } else {
    const HeadNames hn = head_names(hf.arch);
    const bool head = weights.has_prefix(hn.prefix);
    if (!head && !init_missing_head)
      throw DataError(
          fmt::format("{}: no MLM head (no {}* tensor): a checkpoint of the bare {} model",
                      weights.file().path(), hn.prefix, hf.model_type),
          "import it with --init-missing-head to start the head from a fresh initialisation "
          "(fine for analysis and fine-tuning; MLM predictions are then meaningless), or download "
          "the *ForMaskedLM / *ForPreTraining checkpoint");
    map_encoder(hf, weights, f, vocab_rows, head, out);
    if (!head)
      out.notes.push_back(fmt::format("no {}* tensors: the MLM head (lm_head.*) is freshly "
                                      "initialised (--init-missing-head)",
                                      hn.prefix));
  }
  weights.check_complete();
  const auto unset = f.unset();
  TORCH_CHECK(unset.empty(), "import left parameters unset: ", unset);
  return out;
}

}  // namespace relpos

#include "core/hf/hf_config.h"

#include <fmt/format.h>

#include <filesystem>

#include "core/util/json_util.h"
#include "core/util/text_util.h"
#include "core/util/errors.h"

namespace relpos {

namespace fs = std::filesystem;

namespace {

// Typed reads of config.json keys with Hugging Face's default when the key is absent (or null,
// which Hugging Face writes for "use the default", e.g. GPT-2's n_inner).
struct Keys {
  const nlohmann::json& j;
  const std::string& file;

  bool has(const char* key) const { return j.contains(key) && !j[key].is_null(); }

  [[noreturn]] void fail(const char* key, const std::string& expected) const {
    throw DataError(fmt::format("{}: {}: expected {} (got {})", file, key, expected,
                                describe_json_shallow(j[key])));
  }

  int64_t integer(const char* key, int64_t def, int64_t min = 1) const {
    if (!has(key)) return def;
    const auto& v = j[key];
    if (!v.is_number_integer() || v.get<int64_t>() < min)
      fail(key, fmt::format("an integer >= {}", min));
    return v.get<int64_t>();
  }
  double number(const char* key, double def, double min, double max) const {
    if (!has(key)) return def;
    const auto& v = j[key];
    if (!v.is_number() || v.get<double>() < min || v.get<double>() > max)
      fail(key, fmt::format("a number in [{}, {}]", min, max));
    return v.get<double>();
  }
  std::string text(const char* key, const std::string& def) const {
    if (!has(key)) return def;
    if (!j[key].is_string()) fail(key, "a string");
    return j[key].get<std::string>();
  }
  bool flag(const char* key, bool def) const {
    if (!has(key)) return def;
    if (!j[key].is_boolean()) fail(key, "true or false");
    return j[key].get<bool>();
  }
};

[[noreturn]] void unsupported(const std::string& file, const std::string& key,
                              const std::string& value, const std::string& why) {
  throw DataError(fmt::format("{}: {}: {} is not supported: {}", file, key, value, why),
                  "docs/pretrained.md lists what relpos imports");
}

// model_type, or the model class named in `architectures` for configs that predate model_type.
std::string model_type_of(const Keys& k) {
  if (k.has("model_type")) return k.text("model_type", "");
  if (k.has("architectures") && k.j["architectures"].is_array() && !k.j["architectures"].empty() &&
      k.j["architectures"][0].is_string()) {
    const std::string a = k.j["architectures"][0].get<std::string>();
    const std::pair<const char*, const char*> classes[] = {
        {"Bert", "bert"}, {"Albert", "albert"}, {"Roberta", "roberta"}, {"GPT2", "gpt2"}};
    for (const auto& [prefix, type] : classes)
      if (a.rfind(prefix, 0) == 0) return type;
  }
  return "";
}

// Hugging Face activation names -> relpos's model.activation.
std::string activation_of(const Keys& k, const char* key, const std::string& def) {
  const std::string a = k.text(key, def);
  if (a == "gelu") return "gelu";
  if (a == "gelu_new" || a == "gelu_pytorch_tanh") return "gelu_tanh";
  unsupported(k.file, key, "'" + a + "'",
              "relpos has gelu (exact: Hugging Face's gelu) and gelu_tanh (gelu_new, "
              "gelu_pytorch_tanh)");
}

void read_encoder(const Keys& k, HfModelConfig& c) {
  const bool albert = c.arch == HfArch::Albert;
  const bool roberta = c.arch == HfArch::Roberta;
  c.vocab = k.integer("vocab_size", albert ? 30000 : roberta ? 50265 : 30522);
  c.width = k.integer("hidden_size", albert ? 4096 : 768);
  c.embed_width = albert ? k.integer("embedding_size", 128) : c.width;
  c.layers = k.integer("num_hidden_layers", 12);
  c.heads = k.integer("num_attention_heads", albert ? 64 : 12);
  c.ff_width = k.integer("intermediate_size", albert ? 16384 : 3072);
  c.activation = activation_of(k, "hidden_act", albert ? "gelu_new" : "gelu");
  c.dropout = k.number("hidden_dropout_prob", albert ? 0.0 : 0.1, 0, 0.99);
  c.attention_dropout = k.number("attention_probs_dropout_prob", albert ? 0.0 : 0.1, 0, 0.99);
  c.max_positions = k.integer("max_position_embeddings", 512);
  c.type_vocab = k.integer("type_vocab_size", 2);
  c.init_std = k.number("initializer_range", 0.02, 0, 10);
  c.norm_eps = k.number("layer_norm_eps", 1e-12, 1e-30, 1);
  c.position_type = k.text("position_embedding_type", "absolute");
  if (c.position_type != "absolute" && c.position_type != "relative_key" &&
      c.position_type != "relative_key_query")
    unsupported(k.file, "position_embedding_type", "'" + c.position_type + "'",
                "expected absolute, relative_key or relative_key_query");
  // Only BERT's relative attention is the one relpos maps: ALBERT's adds the relative terms
  // after the 1/sqrt(d) scaling, and RoBERTa's is not covered by a test checkpoint.
  if (c.arch != HfArch::Bert && c.position_type != "absolute")
    unsupported(k.file, "position_embedding_type", "'" + c.position_type + "' for " + c.model_type,
                "relative position embeddings are imported for BERT only");
  if (k.flag("is_decoder", false) || k.flag("add_cross_attention", false))
    unsupported(k.file, "is_decoder", "a decoder " + c.model_type,
                "relpos imports the encoder models of these architectures");
  if (roberta) {
    const int64_t pad = k.integer("pad_token_id", 1, 0);
    c.position_offset = pad + 1;
    if (c.max_positions <= c.position_offset)
      throw DataError(fmt::format("{}: max_position_embeddings {} leaves no position after "
                                  "RoBERTa's offset pad_token_id + 1 = {}",
                                  k.file, c.max_positions, c.position_offset));
    if (c.activation != "gelu")
      unsupported(k.file, "hidden_act", "'" + k.text("hidden_act", "") + "' for roberta",
                  "RoBERTa's MLM head always applies exact GELU, so only hidden_act gelu "
                  "maps onto one model.activation");
  }
  if (albert) {
    if (k.integer("num_hidden_groups", 1) != 1 || k.integer("inner_group_num", 1) != 1)
      unsupported(k.file, "num_hidden_groups", "more than one ALBERT layer group or inner layer",
                  "relpos shares one block across all layers (num_hidden_groups 1, "
                  "inner_group_num 1, as in every released ALBERT)");
    if (c.embed_width >= c.width)
      unsupported(k.file, "embedding_size",
                  fmt::format("{} with hidden_size {}", c.embed_width, c.width),
                  "relpos's factorized embedding needs embedding_size < hidden_size");
  }
}

void read_gpt2(const Keys& k, HfModelConfig& c) {
  c.vocab = k.integer("vocab_size", 50257);
  c.width = k.integer("n_embd", 768);
  c.embed_width = c.width;
  c.layers = k.integer("n_layer", 12);
  c.heads = k.integer("n_head", 12);
  c.ff_width = k.integer("n_inner", 4 * c.width);
  c.activation = activation_of(k, "activation_function", "gelu_new");
  c.dropout = k.number("resid_pdrop", 0.1, 0, 0.99);
  c.attention_dropout = k.number("attn_pdrop", 0.1, 0, 0.99);
  c.max_positions = k.integer("n_positions", k.integer("n_ctx", 1024));
  c.type_vocab = 0;
  c.init_std = k.number("initializer_range", 0.02, 0, 10);
  c.norm_eps = k.number("layer_norm_epsilon", 1e-5, 1e-30, 1);
  c.position_type = "absolute";
  c.causal = true;
  c.pre_norm = true;
  if (!k.flag("scale_attn_weights", true))
    unsupported(k.file, "scale_attn_weights", "false", "relpos always scales scores by 1/sqrt(d)");
  if (k.flag("scale_attn_by_inverse_layer_idx", false))
    unsupported(k.file, "scale_attn_by_inverse_layer_idx", "true",
                "relpos has no per-layer score scaling");
  if (k.flag("add_cross_attention", false))
    unsupported(k.file, "add_cross_attention", "true", "relpos has no cross-attention");
}

}  // namespace

std::string hf_supported_architectures() { return "bert, albert, roberta, gpt2"; }

HfModelConfig read_hf_config(const std::string& dir) {
  HfModelConfig c;
  c.dir = dir;
  c.config_path = (fs::path(dir) / "config.json").string();
  if (!fs::is_directory(dir))
    throw DataError(fmt::format("{}: not a folder (expected a Hugging Face model folder with "
                                "config.json and model.safetensors)",
                                dir));
  if (!fs::is_regular_file(c.config_path))
    throw DataError(fmt::format("{}: missing (expected the model's config.json in the Hugging "
                                "Face folder {})",
                                c.config_path, dir),
                    "download the whole model folder (config.json, model.safetensors, the "
                    "tokenizer files)");
  c.json = parse_json(read_utf8_file(c.config_path, "model config"), c.config_path,
                      "a Hugging Face config.json");
  if (!c.json.is_object())
    throw DataError(fmt::format("{}: expected a JSON object (got {})", c.config_path,
                                describe_json_shallow(c.json)));
  const Keys k{c.json, c.config_path};
  c.model_type = model_type_of(k);
  if (c.model_type == "bert") c.arch = HfArch::Bert;
  else if (c.model_type == "albert") c.arch = HfArch::Albert;
  else if (c.model_type == "roberta") c.arch = HfArch::Roberta;
  else if (c.model_type == "gpt2") c.arch = HfArch::Gpt2;
  else
    throw DataError(
        fmt::format("{}: model_type: unknown architecture {} (relpos imports: {})", c.config_path,
                    c.model_type.empty() ? std::string("(no model_type or architectures key)")
                                         : "'" + printable_utf8(c.model_type) + "'",
                    hf_supported_architectures()),
        "docs/pretrained.md lists the Hugging Face folders relpos imports");
  if (c.arch == HfArch::Gpt2)
    read_gpt2(k, c);
  else
    read_encoder(k, c);
  if (c.width % c.heads != 0)
    throw DataError(fmt::format("{}: hidden size {} is not divisible by {} attention heads",
                                c.config_path, c.width, c.heads));
  return c;
}

}  // namespace relpos

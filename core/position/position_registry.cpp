#include "core/position/position_registry.h"
#include "core/position/eval_settings.h"

#include <fmt/format.h>

#include <algorithm>
#include <mutex>
#include <sstream>

#include "core/config/config.h"
#include "core/util/text_util.h"
#include "core/position/position_encoding.h"

namespace relpos {

// One registration function per variant file.
void register_none(Registry& r);
void register_sinusoidal(Registry& r);
void register_learned(Registry& r);
void register_shaw(Registry& r);
void register_transformer_xl(Registry& r);
void register_huang(Registry& r);
void register_huang_m1(Registry& r);
void register_huang_m2(Registry& r);
void register_huang_m3(Registry& r);
void register_huang_m4(Registry& r);
void register_tisa(Registry& r);
void register_t5_bias(Registry& r);
void register_alibi(Registry& r);
void register_rope(Registry& r);
void register_deberta(Registry& r);
void register_kerple_log(Registry& r);
void register_kerple_power(Registry& r);
void register_fire(Registry& r);
void register_xpos(Registry& r);
void register_cope(Registry& r);

namespace {

Registry build_position_registry() {
  Registry r;
  register_none(r);
  register_sinusoidal(r);
  register_learned(r);
  register_shaw(r);
  register_transformer_xl(r);
  register_huang(r);
  register_huang_m1(r);
  register_huang_m2(r);
  register_huang_m3(r);
  register_huang_m4(r);
  register_tisa(r);
  register_t5_bias(r);
  register_alibi(r);
  register_rope(r);
  register_deberta(r);
  register_kerple_log(r);
  register_kerple_power(r);
  register_fire(r);
  register_xpos(r);
  register_cope(r);
  return r;
}

}  // namespace

ModelDims model_dims(const ModelConfig& m) {
  ModelDims d;
  d.embed_dim = m.embed_dim();
  d.width = m.width;
  d.heads = m.heads;
  d.head_dim = m.head_dim();
  d.layers = m.layers;
  d.param_layers = m.share_layers ? 1 : m.layers;
  d.causal = m.causal();
  d.init_std = m.init_std;
  return d;
}

void validate_position(const Config& c, const SourceMap* src) {
  const Registry& reg = Registry::get();
  for (const auto& [name, params] : c.position.params) {
    const VariantInfo& info = reg.at(name, "position." + name, src);
    const std::string path = "position." + name;
    if (info.validate) info.validate(*params, c, ParamCheck{path, src});
  }
  if (c.position.types.size() > 1)
    for (const auto& t : c.position.types)
      if (reg.at(t).baseline)
        config_fail(src, "position.type",
                    fmt::format("'{}' cannot be stacked with other variants", t),
                    join_names(c.position.types, "+"), fmt::format("'{}' alone", t));
  if (const int64_t n = c.position.randomized_max; n != 0) {
    if (n < c.task.seq_len)
      config_fail(src, "position.randomized_max",
                  "randomized positions need at least as many positions as a training sequence",
                  std::to_string(n),
                  fmt::format("0 (off) or >= task.seq_len ({})", c.task.seq_len));
    std::vector<std::string> absolute;
    for (const auto& name : reg.names())
      if (reg.at(name).absolute_positions) absolute.push_back(name);
    const bool any = std::any_of(c.position.types.begin(), c.position.types.end(),
                                 [&](const std::string& t) { return reg.at(t).absolute_positions; });
    if (!any)
      config_fail(src, "position.randomized_max",
                  "no encoding in position.type reads absolute positions, so there is nothing "
                  "to randomize",
                  fmt::format("{} with position.type {}", n, join_names(c.position.types, "+")),
                  "0, or a stack with an absolute or rotary encoding", absolute);
  }
}

void ParamCheck::fail(const std::string& key, const std::string& problem, const std::string& got,
                      const std::string& expected) const {
  config_fail(sources, join_path(path, key), problem, got, expected);
}

std::map<std::string, std::string> encoder_notes() {
  std::map<std::string, std::string> out;
  const Registry& reg = Registry::get();
  for (const auto& name : reg.names())
    if (!reg.at(name).encoder_note.empty()) out[name] = reg.at(name).encoder_note;
  return out;
}

Registry& Registry::instance() {
  static Registry registry = build_position_registry();
  return registry;
}

const Registry& Registry::get() { return instance(); }

void Registry::add(VariantInfo info) {
  if (find(info.name))
    throw std::logic_error("position variant registered twice: " + info.name);
  variants_.push_back(std::move(info));
}

void Registry::remove(const std::string& name) {
  variants_.erase(std::remove_if(variants_.begin(), variants_.end(),
                                 [&](const VariantInfo& v) { return v.name == name; }),
                  variants_.end());
}

std::string Registry::baseline() const {
  for (const auto& v : variants_)
    if (v.baseline) return v.name;
  throw std::logic_error("no baseline position variant registered");
}

ScopedVariant::ScopedVariant(VariantInfo info) : name_(info.name) {
  Registry::instance().add(std::move(info));
}

ScopedVariant::~ScopedVariant() { Registry::instance().remove(name_); }

bool has_direct_path(const std::string& type) {
  std::stringstream parts(type);
  for (std::string v; std::getline(parts, v, '+');)
    if (const VariantInfo* info = Registry::get().find(v); info && info->direct_path) return true;
  return false;
}

std::vector<std::string> eval_settings() {
  // How the steps run, not what they compute: model.attention_impl too (a run trained with the
  // fused kernel on a GPU is evaluated eagerly where LibTorch has none).
  std::vector<std::string> keys = {"eval",      "device",  "threads", "cpu_allocator",
                                   "precision", "model.attention_impl"};
  for (const auto& name : Registry::get().names())
    for (const auto& [key, past] : Registry::get().at(name).eval_keys)
      keys.push_back("position." + name + "." + key);
  return keys;
}

bool is_eval_setting(const std::string& set) {
  const std::string key = set.substr(0, set.find('='));
  for (const auto& k : eval_settings())
    if (key == k || key.rfind(k + ".", 0) == 0) return true;
  return false;
}

const VariantInfo* Registry::find(const std::string& name) const {
  for (const auto& v : variants_)
    if (v.name == name) return &v;
  return nullptr;
}

const VariantInfo& Registry::at(const std::string& name, const std::string& path,
                                const SourceMap* sources) const {
  if (const VariantInfo* v = find(name)) return *v;
  const std::string near = closest_name(name, names());
  config_fail(sources, path, "unknown position variant", "'" + name + "'", "a registered name",
              names(), near.empty() ? "" : "'" + near + "'");
}

std::vector<std::string> Registry::names() const {
  std::vector<std::string> n;
  for (const auto& v : variants_) n.push_back(v.name);
  return n;
}

std::shared_ptr<PositionEncodingImpl> make_position_encoding(const std::string& type,
                                                             const ModelDims& dims,
                                                             const PositionConfig& cfg) {
  const VariantInfo& info = Registry::get().at(type);
  return info.make(dims, cfg.params_of(type), cfg);
}

int64_t PositionEncodingImpl::parameter_count() const {
  int64_t n = 0;
  for (const auto& p : parameters()) n += p.numel();
  return n;
}

}  // namespace relpos

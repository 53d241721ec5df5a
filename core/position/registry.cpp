#include "core/position/registry.h"
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

// ---- PositionConfig --------------------------------------------------------------------------

bool PositionConfig::has(const std::string& type) const {
  return std::find(types.begin(), types.end(), type) != types.end();
}

const VariantParams& PositionConfig::params_of(const std::string& type) const {
  auto it = params.find(type);
  if (it != params.end()) return *it->second;
  // Defaults for a variant the config did not describe.
  static std::mutex mutex;
  static std::map<std::string, std::shared_ptr<VariantParams>> defaults;
  std::lock_guard<std::mutex> lock(mutex);
  auto d = defaults.find(type);
  if (d == defaults.end())
    d = defaults.emplace(type, Registry::get().at(type).make_params()).first;
  return *d->second;
}

namespace {

std::vector<std::string> split_plus(const std::string& s) {
  std::vector<std::string> out;
  size_t start = 0;
  while (true) {
    size_t p = s.find('+', start);
    std::string item = s.substr(start, p == std::string::npos ? std::string::npos : p - start);
    auto b = item.find_first_not_of(" \t");
    auto e = item.find_last_not_of(" \t");
    out.push_back(b == std::string::npos ? "" : item.substr(b, e - b + 1));
    if (p == std::string::npos) break;
    start = p + 1;
  }
  return out;
}

}  // namespace

void read_value(const YAML::Node& n, const std::string& path, const SourceMap* src,
                PositionConfig& v) {
  if (n.IsNull()) return;
  if (!n.IsMap()) config_fail(src, path, "wrong type", describe_node(n), "a map of keys");
  const Registry& reg = Registry::get();
  std::vector<std::string> known = {"type", "relative_impl"};
  for (const auto& name : reg.names()) known.push_back(name);
  known.push_back("randomized_max");

  for (auto it = n.begin(); it != n.end(); ++it) {
    const std::string key = it->first.Scalar();
    const std::string kpath = join_path(path, key);
    // A copy of the handle: `it->second` lives in a temporary proxy that dies with the statement.
    const YAML::Node val = it->second;
    if (key == "type") {
      std::vector<std::string> names;
      if (val.IsSequence()) {
        for (const auto& item : val) {
          if (!item.IsScalar())
            config_fail(src, kpath, "wrong type", describe_node(item), "a variant name");
          for (const auto& s : split_plus(item.Scalar())) names.push_back(s);
        }
      } else if (val.IsScalar()) {
        names = split_plus(val.Scalar());
      } else {
        config_fail(src, kpath, "wrong type", describe_node(val),
                    "a variant name, a list of names, or names joined with '+'");
      }
      if (names.empty())
        config_fail(src, kpath, "no position variant given", "", "at least one name",
                    reg.names());
      for (const auto& name : names) {
        reg.at(name, kpath, src);
        if (std::count(names.begin(), names.end(), name) > 1)
          config_fail(src, kpath, "variant listed twice", "'" + name + "'",
                      "each variant at most once");
      }
      v.types = names;
    } else if (key == "relative_impl") {
      read_value(val, kpath, src, v.relative_impl);
      if (v.relative_impl != "fast" && v.relative_impl != "direct")
        config_fail(src, kpath, "unknown value", "'" + v.relative_impl + "'", "fast | direct");
    } else if (key == "randomized_max") {
      read_value(val, kpath, src, v.randomized_max);
    } else {
      const VariantInfo* info = reg.find(key);
      if (!info)
        config_fail(src, kpath, "unknown key (not a position variant or setting)", "", "",
                    known, suggested_key(kpath, known));
      auto params = info->make_params();
      params->read(val, kpath, src);
      v.params[key] = params;
    }
  }
  for (const auto& t : v.types)
    if (!v.params.count(t)) v.params[t] = reg.at(t).make_params();
}

void write_value(YAML::Emitter& out, const PositionConfig& v) {
  out << YAML::BeginMap;
  out << YAML::Key << "type" << YAML::Value;
  write_value(out, join_names(v.types, "+"));
  out << YAML::Key << "relative_impl" << YAML::Value << v.relative_impl;
  // Written only when on, so that the configs of runs without it read as before.
  if (v.randomized_max != 0)
    out << YAML::Key << "randomized_max" << YAML::Value << v.randomized_max;
  // Every variant with parameters given, plus the defaults of stacked types without a section
  // (a config built in code), so the written config always states what was used.
  std::map<std::string, const VariantParams*> all;
  for (const auto& [name, params] : v.params) all[name] = params.get();
  for (const auto& t : v.types)
    if (!all.count(t)) all[t] = &v.params_of(t);
  for (const auto& [name, params] : all) {
    out << YAML::Key << name << YAML::Value;
    params->write(out);
  }
  out << YAML::EndMap;
}

}  // namespace relpos

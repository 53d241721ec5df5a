#include "core/hf/hf_weights.h"

#include <fmt/format.h>
#include <fmt/ranges.h>  // fmt::join (in fmt/format.h only before fmt 11)
#include <torch/serialize.h>

#include <algorithm>
#include <filesystem>

#include "core/util/text_util.h"
#include "core/io/safetensors.h"
#include "core/util/errors.h"
#include "core/util/system.h"

namespace relpos {

namespace fs = std::filesystem;

namespace {

std::string shape_text(const std::vector<int64_t>& shape) {
  return "(" + fmt::format("{}", fmt::join(shape, ",")) + ")";
}

class SafetensorsWeights : public WeightFile {
 public:
  explicit SafetensorsWeights(const std::string& path) : file_(path) {
    for (const auto& e : file_.header().entries) list_.push_back({e.name, e.dtype, e.shape});
  }
  const std::string& path() const override { return file_.path(); }
  const std::vector<StoredTensor>& tensors() const override { return list_; }
  torch::Tensor to_float(const std::string& name) const override {
    return file_.to_float(*file_.header().find(name));
  }

 private:
  SafetensorsFile file_;
  std::vector<StoredTensor> list_;
};

std::string dtype_name(torch::ScalarType t) {
  switch (t) {
    case torch::kFloat32: return "F32";
    case torch::kFloat16: return "F16";
    case torch::kBFloat16: return "BF16";
    case torch::kFloat64: return "F64";
    case torch::kInt64: return "I64";
    case torch::kInt32: return "I32";
    case torch::kInt16: return "I16";
    case torch::kInt8: return "I8";
    case torch::kUInt8: return "U8";
    case torch::kBool: return "BOOL";
    default: return c10::toString(t);
  }
}

// A torch.save() file read through LibTorch's own unpickler, which knows the tensors' storage
// format. LibTorch 1.13's C++ unpickler turns a collections.OrderedDict into None (it expects one
// only inside a tensor's pickled hooks), so only a state dict saved as a plain dict reads; what
// Hugging Face saves (model.state_dict(), an OrderedDict) does not.
class TorchBinWeights : public WeightFile {
 public:
  explicit TorchBinWeights(const std::string& path) : path_(path) {
    const std::string bytes = read_file(path, "PyTorch checkpoint");
    const bool zip = bytes.size() >= 4 && bytes.compare(0, 4, "PK\x03\x04") == 0;
    torch::IValue v;
    std::string why;
    try {
      v = torch::pickle_load(std::vector<char>(bytes.begin(), bytes.end()));
      if (!v.isGenericDict())
        why = fmt::format("it holds a {} where a state dict was expected; Hugging Face saves an "
                          "OrderedDict, which LibTorch 1.13's unpickler reads as None",
                          v.tagKind());
    } catch (const c10::Error& e) {
      const std::string msg = first_line(e.what_without_backtrace());
      if (!zip)
        why = "it is in the legacy format of PyTorch before 1.6, which LibTorch does not read";
      else if (msg.find("GenericDict but got None") != std::string::npos)
        why = "its state dict is a collections.OrderedDict (what Hugging Face's save_pretrained "
              "and model.state_dict() write), which LibTorch 1.13's C++ unpickler reads as None";
      else
        why = "LibTorch's reader failed: " + msg;
    }
    if (!why.empty()) throw unreadable(why);
    for (const auto& kv : v.toGenericDict()) {
      if (!kv.key().isString() || !kv.value().isTensor())
        throw unreadable("an entry is not a (name, tensor) pair");
      const auto t = kv.value().toTensor();
      map_[kv.key().toStringRef()] = t;
      list_.push_back({kv.key().toStringRef(), dtype_name(t.scalar_type()), t.sizes().vec()});
    }
  }
  const std::string& path() const override { return path_; }
  const std::vector<StoredTensor>& tensors() const override { return list_; }
  torch::Tensor to_float(const std::string& name) const override {
    const auto& t = map_.at(name);
    if (!t.is_floating_point())
      throw DataError(fmt::format("{}: tensor '{}' has dtype {} (expected a floating-point one)",
                                  path_, name, dtype_name(t.scalar_type())));
    return t.to(torch::kCPU, torch::kFloat32).contiguous().clone();
  }

 private:
  static std::string first_line(const std::string& s) { return s.substr(0, s.find('\n')); }

  DataError unreadable(const std::string& why) const {
    const std::string dir = fs::path(path_).parent_path().string();
    return DataError(
        fmt::format("{}: LibTorch {} cannot read this PyTorch checkpoint: {}", path_,
                    torch_version(), why),
        fmt::format("convert it to safetensors once, on a machine with Python, PyTorch and the "
                    "safetensors package: python3 -c \"import torch; from safetensors.torch "
                    "import save_file; sd = torch.load('{0}/pytorch_model.bin', "
                    "map_location='cpu'); save_file({{k: v.contiguous().clone() for k, v in "
                    "sd.items()}}, '{0}/model.safetensors', metadata={{'format': 'pt'}})\", then "
                    "import again (model.safetensors is read first)",
                    dir.empty() ? "." : dir));
  }

  std::string path_;
  std::map<std::string, torch::Tensor> map_;
  std::vector<StoredTensor> list_;
};

// "gamma" / "beta", the LayerNorm names of BERT checkpoints converted from TensorFlow.
std::string modern_name(const std::string& name) {
  const size_t dot = name.rfind('.');
  const std::string last = dot == std::string::npos ? name : name.substr(dot + 1);
  const std::string stem = dot == std::string::npos ? "" : name.substr(0, dot + 1);
  if (last == "gamma") return stem + "weight";
  if (last == "beta") return stem + "bias";
  return name;
}

}  // namespace

std::unique_ptr<WeightFile> open_weight_file(const std::string& dir) {
  const fs::path d(dir);
  if (fs::exists(d / "model.safetensors"))
    return std::make_unique<SafetensorsWeights>((d / "model.safetensors").string());
  for (const char* index : {"model.safetensors.index.json", "pytorch_model.bin.index.json"})
    if (fs::exists(d / index))
      throw DataError(fmt::format("{}: a sharded checkpoint (several weight files), which relpos "
                                  "does not import",
                                  (d / index).string()),
                      "save the model as one file (save_pretrained(..., max_shard_size=\"100GB\", "
                      "safe_serialization=True)); the models of docs/pretrained.md are single files");
  if (fs::exists(d / "pytorch_model.bin"))
    return std::make_unique<TorchBinWeights>((d / "pytorch_model.bin").string());
  std::vector<std::string> found;
  if (fs::is_directory(d))
    for (const auto& e : fs::directory_iterator(d)) found.push_back(e.path().filename().string());
  std::sort(found.begin(), found.end());
  throw DataError(fmt::format("{}: no weights: expected model.safetensors or pytorch_model.bin "
                              "(the folder has: {})",
                              dir, found.empty() ? std::string("nothing") : fmt::format("{}", fmt::join(found, ", "))),
                  "download the PyTorch weights of the model (TensorFlow's tf_model.h5 and Flax's "
                  "flax_model.msgpack are not read)");
}

HfWeights::HfWeights(std::unique_ptr<WeightFile> file, const std::string& base_prefix)
    : file_(std::move(file)), prefix_(base_prefix) {
  for (const auto& t : file_->tensors()) {
    std::string name = modern_name(t.name);
    if (name.rfind(base_prefix, 0) == 0) {
      name = name.substr(base_prefix.size());
      prefixed_ = true;
    }
    const auto [it, fresh] = stored_.emplace(name, t.name);
    if (!fresh)
      throw DataError(fmt::format("{}: tensors '{}' and '{}' are both '{}' (with and without the "
                                  "prefix '{}', or gamma/beta beside weight/bias)",
                                  file_->path(), printable_utf8(it->second), printable_utf8(t.name),
                                  printable_utf8(name), base_prefix));
  }
}

std::string HfWeights::display(const std::string& name) const {
  // The heads sit beside the base model, never under its prefix.
  for (const char* head : {"cls.", "lm_head.", "predictions.", "sop_classifier."})
    if (name.rfind(head, 0) == 0) return name;
  return prefixed_ ? prefix_ + name : name;
}

bool HfWeights::has_prefix(const std::string& prefix) const {
  const auto it = stored_.lower_bound(prefix);
  return it != stored_.end() && it->first.rfind(prefix, 0) == 0;
}

torch::Tensor HfWeights::take(const std::string& name, const std::vector<int64_t>& shape,
                              const std::string& why) {
  taken_.insert(name);
  const auto it = stored_.find(name);
  if (it == stored_.end()) {
    missing_.push_back(fmt::format("{} {}", display(name), shape_text(shape)));
    return {};
  }
  const StoredTensor* st = nullptr;
  for (const auto& t : file_->tensors())
    if (t.name == it->second) st = &t;
  if (st->shape != shape) {
    mismatched_.push_back(fmt::format("{} has shape {}, expected {} ({})", it->second,
                                      shape_text(st->shape), shape_text(shape), why));
    return {};
  }
  return file_->to_float(it->second);
}

void HfWeights::check_complete() const {
  std::vector<std::string> problems;
  if (!missing_.empty())
    problems.push_back(fmt::format("missing tensor{} {}", missing_.size() > 1 ? "s" : "",
                                   fmt::join(missing_, ", ")));
  if (!mismatched_.empty())
    problems.push_back(fmt::format("shape not matching {}: {}", "config.json",
                                   fmt::join(mismatched_, "; ")));
  if (problems.empty()) return;
  throw DataError(fmt::format("{}: {}", file_->path(), fmt::join(problems, "; ")),
                  "the weight file and config.json must come from the same model");
}

std::vector<std::string> HfWeights::unused() const {
  std::set<std::string> used;
  for (const auto& name : taken_)
    if (auto it = stored_.find(name); it != stored_.end()) used.insert(it->second);
  std::vector<std::string> out;
  for (const auto& t : file_->tensors())
    if (!used.count(t.name)) out.push_back(t.name);
  return out;
}

}  // namespace relpos

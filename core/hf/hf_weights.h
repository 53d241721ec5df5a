// The weights of a Hugging Face model folder: model.safetensors (memory-mapped), or a
// pytorch_model.bin that LibTorch can read, looked up by the names the architecture uses.
// Names are taken as Hugging Face writes them with or without the base model's prefix
// ("bert.", "albert.", "roberta.", "transformer."), and with the old LayerNorm names
// gamma/beta for weight/bias.
#pragma once

#include <torch/types.h>

#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

namespace relpos {

struct StoredTensor {
  std::string name;  // as stored in the file
  std::string dtype; // safetensors dtype name ("F32", "BF16", "I64", ...)
  std::vector<int64_t> shape;
};

class WeightFile {
 public:
  virtual ~WeightFile() = default;
  virtual const std::string& path() const = 0;
  virtual const std::vector<StoredTensor>& tensors() const = 0;
  // The tensor as a float32 CPU copy. Throws DataError naming the file and the tensor when it is
  // not a floating-point tensor.
  virtual torch::Tensor to_float(const std::string& name) const = 0;
};

// DIR/model.safetensors, or else DIR/pytorch_model.bin. Throws DataError naming the file: none
// there (naming what is), a sharded checkpoint, a damaged safetensors file, or a .bin that
// LibTorch 1.13 cannot read (with the one-line conversion to safetensors a user can run).
std::unique_ptr<WeightFile> open_weight_file(const std::string& dir);

class HfWeights {
 public:
  // base_prefix: the base model's prefix, e.g. "bert.". Throws DataError when two stored names
  // mean the same tensor ("bert.x" and "x", or "...gamma" and "...weight").
  HfWeights(std::unique_ptr<WeightFile> file, const std::string& base_prefix);

  const WeightFile& file() const { return *file_; }
  // Whether the architecture's tensor `name` is stored (base-model names without the prefix).
  bool has(const std::string& name) const { return stored_.count(name) > 0; }
  // Whether any stored tensor's name (prefix removed) starts with `prefix`.
  bool has_prefix(const std::string& prefix) const;

  // The tensor `name` as float32, which must have `shape` (`why` says where the shape comes from,
  // e.g. "hidden_size 768"). A missing tensor or one of another shape is recorded for
  // check_complete() and an undefined tensor returned, so that one import names every problem.
  torch::Tensor take(const std::string& name, const std::vector<int64_t>& shape,
                     const std::string& why);
  // Marks `name` as accounted for without reading it (a buffer the architecture recomputes).
  void skip(const std::string& name) { taken_.insert(name); }
  // Throws DataError naming every missing tensor and every shape mismatch so far.
  void check_complete() const;
  // Stored names never taken, in file order.
  std::vector<std::string> unused() const;

 private:
  // `name` as this file would spell it (with the base prefix when its base tensors have one).
  std::string display(const std::string& name) const;

  std::unique_ptr<WeightFile> file_;
  std::string prefix_;
  bool prefixed_ = false;                      // the file's base-model names carry the prefix
  std::map<std::string, std::string> stored_;  // architecture name -> stored name
  std::set<std::string> taken_;
  std::vector<std::string> missing_, mismatched_;
};

}  // namespace relpos

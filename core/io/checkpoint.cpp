// Checkpoints as one LibTorch archive (a zip file, like torch.save):
//   relpos_checkpoint   int, the checkpoint format version (kCheckpointVersion)
//   parameters/<path>   every parameter by its LibTorch path, CPU
//   buffers/<path>      every buffer by its path, CPU
//   optimizer           the optimizer's own archive (AdamW: moments and step per parameter)
//   optimizer_lr        list of float, each parameter group's learning rate (LibTorch 1.13's
//                       Optimizer::load restores the state but not the group options)
//   train_state         step, best_metric, evals_without_improvement, has_best,
//                       cpu_rng_state, cuda_rng_state (when CUDA was available), and
//                       window_loss, window_steps, skipped_batches, pending_post_step (optional: older
//                       checkpoints lack them and read as zero)
// The file around the archive (checksum trailer, atomic replacement): checkpoint_file.cpp.
#include "core/io/checkpoint.h"

#include <ATen/Context.h>
#include <ATen/core/Generator.h>
#include <fmt/format.h>
#include <fmt/ranges.h>  // fmt::join (in fmt/format.h only before fmt 11)
#include <torch/cuda.h>
#include <torch/serialize/input-archive.h>
#include <torch/serialize/output-archive.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <set>

#include "core/io/checkpoint_file.h"
#include "core/util/errors.h"

namespace relpos {

namespace {

constexpr int64_t kCheckpointVersion = 1;
constexpr const char* kKeyVersion = "relpos_checkpoint";
constexpr const char* kKeyParameters = "parameters";
constexpr const char* kKeyBuffers = "buffers";
constexpr const char* kKeyOptimizer = "optimizer";
constexpr const char* kKeyOptimizerLr = "optimizer_lr";
constexpr const char* kKeyTrainState = "train_state";

using torch::serialize::InputArchive;
using torch::serialize::OutputArchive;

std::string shape_string(torch::IntArrayRef s) { return fmt::format("[{}]", fmt::join(s, ", ")); }

torch::Tensor generator_state(at::Generator gen) {
  std::lock_guard<std::mutex> lock(gen.mutex());
  return gen.get_state();  // (bytes) uint8, CPU
}

void set_generator_state(at::Generator gen, const torch::Tensor& state) {
  std::lock_guard<std::mutex> lock(gen.mutex());
  gen.set_state(state.to(torch::kCPU));
}

// The CUDA generator of the current device, through ATen's hooks (no CUDA headers needed).
at::Generator cuda_generator() {
  return at::globalContext().defaultGenerator(c10::Device(c10::DeviceType::CUDA));
}

}  // namespace

torch::Tensor current_cuda_rng_state() {
  if (!torch::cuda::is_available()) return {};
  return generator_state(cuda_generator());
}

namespace {

void write_tensors(OutputArchive& archive, const char* key,
                   const torch::OrderedDict<std::string, torch::Tensor>& tensors) {
  OutputArchive nested(archive.compilation_unit());
  for (const auto& item : tensors)
    if (item.value().defined()) nested.write(item.key(), item.value().detach().to(torch::kCPU));
  archive.write(key, nested);
}

// The tensors of a nested archive by name.
std::map<std::string, torch::Tensor> read_tensors(InputArchive& archive, const char* key) {
  InputArchive nested;
  archive.read(key, nested);
  std::map<std::string, torch::Tensor> out;
  for (const auto& name : nested.keys()) {
    torch::Tensor t;
    nested.read(name, t);
    out[name] = t;
  }
  return out;
}

InputArchive open_archive(const std::string& path, const torch::Device& device) {
  const std::vector<char> bytes = read_verified_archive(path);
  InputArchive archive;
  try {
    archive.load_from(bytes.data(), bytes.size(), device);
  } catch (const c10::Error& e) {
    throw SchemaError(
        fmt::format("checkpoint '{}' cannot be read: {}", path, e.what_without_backtrace()),
        "the file is corrupt, or not a relpos checkpoint");
  }
  c10::IValue version;
  if (!archive.try_read(kKeyVersion, version) || !version.isInt())
    throw SchemaError(
        fmt::format("'{}' is not a relpos checkpoint (no '{}' entry)", path, kKeyVersion));
  if (version.toInt() != kCheckpointVersion)
    throw SchemaError(
        fmt::format("checkpoint '{}' has format version {}; this relpos reads "
                    "version {}",
                    path, version.toInt(), kCheckpointVersion));
  return archive;
}

torch::Device model_device(torch::nn::Module& model) {
  for (const auto& p : model.parameters()) return p.device();
  for (const auto& b : model.buffers()) return b.device();
  return torch::kCPU;
}

// Every mismatch between the checkpoint's tensors and the model's, one line each.
void compare(const std::string& kind, const std::map<std::string, torch::Tensor>& saved,
             const torch::OrderedDict<std::string, torch::Tensor>& current,
             std::vector<std::string>& problems) {
  for (const auto& item : current) {
    auto it = saved.find(item.key());
    if (it == saved.end())
      problems.push_back(fmt::format("{} '{}' {} is missing from the checkpoint", kind, item.key(),
                                     shape_string(item.value().sizes())));
    else if (it->second.sizes() != item.value().sizes())
      problems.push_back(fmt::format("{} '{}' has shape {} in the checkpoint and {} in the model",
                                     kind, item.key(), shape_string(it->second.sizes()),
                                     shape_string(item.value().sizes())));
  }
  for (const auto& [name, t] : saved)
    if (!current.contains(name))
      problems.push_back(fmt::format("{} '{}' {} of the checkpoint is not in the model", kind, name,
                                     shape_string(t.sizes())));
}

// Throws SchemaError listing every mismatch between the checkpoint and the model.
void check_matches(const std::string& path, const std::map<std::string, torch::Tensor>& params,
                   const std::map<std::string, torch::Tensor>& buffers,
                   const torch::OrderedDict<std::string, torch::Tensor>& current_params,
                   const torch::OrderedDict<std::string, torch::Tensor>& current_buffers) {
  std::vector<std::string> problems;
  compare("parameter", params, current_params, problems);
  compare("buffer", buffers, current_buffers, problems);
  if (problems.empty()) return;
  std::string list;
  for (size_t i = 0; i < problems.size() && i < 8; ++i) list += "\n  " + problems[i];
  if (problems.size() > 8) list += fmt::format("\n  ... and {} more", problems.size() - 8);
  throw SchemaError(fmt::format("checkpoint '{}' does not match the model:{}", path, list),
                    "was it written by a run with another config? --init-from loads the "
                    "matching parameters only");
}

void copy_into(const std::map<std::string, torch::Tensor>& saved,
               torch::OrderedDict<std::string, torch::Tensor>& current) {
  torch::NoGradGuard guard;
  for (auto& item : current) item.value().copy_(saved.at(item.key()));
}

// Runs `body`, turning LibTorch errors into SchemaError naming the checkpoint.
template <class F>
auto reading(const std::string& path, F&& body) -> decltype(body()) {
  try {
    return body();
  } catch (const Error&) {
    throw;
  } catch (const c10::Error& e) {
    throw SchemaError(
        fmt::format("checkpoint '{}' cannot be loaded: {}", path, e.what_without_backtrace()),
        "the file is corrupt or was written for another model or optimizer");
  } catch (const std::exception& e) {
    throw SchemaError(fmt::format("checkpoint '{}' cannot be loaded: {}", path, e.what()),
                      "the file is corrupt or was written for another model or optimizer");
  }
}

}  // namespace

void save_checkpoint(const std::string& path, torch::nn::Module& model,
                     torch::optim::Optimizer& optimizer, const TrainState& state) {
  OutputArchive archive;
  try {
    archive.write(kKeyVersion, c10::IValue(kCheckpointVersion));
    write_tensors(archive, kKeyParameters, model.named_parameters());
    write_tensors(archive, kKeyBuffers, model.named_buffers());

    OutputArchive opt(archive.compilation_unit());
    optimizer.save(opt);
    archive.write(kKeyOptimizer, opt);
    c10::List<double> lrs;
    for (const auto& group : optimizer.param_groups()) lrs.push_back(group.options().get_lr());
    archive.write(kKeyOptimizerLr, c10::IValue(lrs));

    OutputArchive ts(archive.compilation_unit());
    ts.write("step", c10::IValue(state.step));
    ts.write("best_metric", c10::IValue(state.best_metric));
    ts.write("evals_without_improvement", c10::IValue(state.evals_without_improvement));
    ts.write("has_best", c10::IValue(state.has_best));
    ts.write("window_loss", c10::IValue(state.window_loss));
    ts.write("window_steps", c10::IValue(state.window_steps));
    ts.write("skipped_batches", c10::IValue(state.skipped_batches));
    ts.write("pending_post_step", c10::IValue(state.pending_post_step));
    ts.write("elapsed_seconds", c10::IValue(state.elapsed_seconds));
    ts.write("cpu_rng_state", state.cpu_rng_state.defined()
                                  ? state.cpu_rng_state.to(torch::kCPU)
                                  : generator_state(at::detail::getDefaultCPUGenerator()));
    // Only when given: a CPU run on a machine with a GPU must not initialize CUDA to save it.
    if (state.cuda_rng_state.defined())
      ts.write("cuda_rng_state", state.cuda_rng_state.to(torch::kCPU));
    archive.write(kKeyTrainState, ts);
  } catch (const c10::Error& e) {
    throw RunError(
        fmt::format("cannot write checkpoint '{}': {}", path, e.what_without_backtrace()));
  }
  write_archive_atomically(path, archive);
}

TrainState load_checkpoint(const std::string& path, torch::nn::Module& model,
                           torch::optim::Optimizer& optimizer) {
  const torch::Device device = model_device(model);
  InputArchive archive = open_archive(path, device);
  return reading(path, [&] {
    const auto params = read_tensors(archive, kKeyParameters);
    const auto buffers = read_tensors(archive, kKeyBuffers);
    auto current_params = model.named_parameters();
    auto current_buffers = model.named_buffers();
    check_matches(path, params, buffers, current_params, current_buffers);

    // The optimizer first: if its state does not fit, the model is left untouched.
    InputArchive opt;
    archive.read(kKeyOptimizer, opt);
    optimizer.load(opt);
    c10::IValue lrs;
    if (archive.try_read(kKeyOptimizerLr, lrs)) {
      const auto list = lrs.toDoubleList();
      if (list.size() != optimizer.param_groups().size())
        throw SchemaError(
            fmt::format("checkpoint '{}' has {} optimizer parameter groups, the "
                        "optimizer has {}",
                        path, list.size(), optimizer.param_groups().size()));
      for (size_t i = 0; i < list.size(); ++i)
        optimizer.param_groups()[i].options().set_lr(list[i]);
    }
    copy_into(params, current_params);
    copy_into(buffers, current_buffers);

    InputArchive ts;
    archive.read(kKeyTrainState, ts);
    TrainState state;
    c10::IValue v;
    ts.read("step", v);
    state.step = v.toInt();
    ts.read("best_metric", v);
    state.best_metric = v.toDouble();
    ts.read("evals_without_improvement", v);
    state.evals_without_improvement = v.toInt();
    ts.read("has_best", v);
    state.has_best = v.toBool();
    if (ts.try_read("window_loss", v)) state.window_loss = v.toDouble();
    if (ts.try_read("window_steps", v)) state.window_steps = v.toInt();
    if (ts.try_read("skipped_batches", v)) state.skipped_batches = v.toInt();
    if (ts.try_read("pending_post_step", v)) state.pending_post_step = v.toBool();
    if (ts.try_read("elapsed_seconds", v)) state.elapsed_seconds = v.toDouble();
    ts.read("cpu_rng_state", state.cpu_rng_state);
    state.cpu_rng_state = state.cpu_rng_state.to(torch::kCPU);
    set_generator_state(at::detail::getDefaultCPUGenerator(), state.cpu_rng_state);
    torch::Tensor cuda_state;
    if (ts.try_read("cuda_rng_state", cuda_state)) {
      state.cuda_rng_state = cuda_state.to(torch::kCPU);
      if (torch::cuda::is_available()) set_generator_state(cuda_generator(), state.cuda_rng_state);
    }
    return state;
  });
}

void load_model_parameters(const std::string& path, torch::nn::Module& model) {
  InputArchive archive = open_archive(path, model_device(model));
  reading(path, [&] {
    const auto params = read_tensors(archive, kKeyParameters);
    const auto buffers = read_tensors(archive, kKeyBuffers);
    auto current_params = model.named_parameters();
    auto current_buffers = model.named_buffers();
    check_matches(path, params, buffers, current_params, current_buffers);
    copy_into(params, current_params);
    copy_into(buffers, current_buffers);
  });
}

ParameterMatch load_matching_parameters(const std::string& path, torch::nn::Module& model) {
  InputArchive archive = open_archive(path, model_device(model));
  return reading(path, [&] {
    const auto params = read_tensors(archive, kKeyParameters);
    ParameterMatch m;
    std::set<std::string> in_model;
    torch::NoGradGuard guard;
    for (auto& item : model.named_parameters()) {
      in_model.insert(item.key());
      auto it = params.find(item.key());
      if (it == params.end() || it->second.sizes() != item.value().sizes()) {
        m.initialised.push_back(item.key());
        if (it != params.end()) m.shape_mismatched.push_back(item.key());
        continue;
      }
      item.value().copy_(it->second);
      m.loaded.push_back(item.key());
    }
    for (const auto& [name, t] : params)  // a std::map: sorted
      if (!in_model.count(name)) m.unused.push_back(name);
    return m;
  });
}

bool looks_like_checkpoint(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  char magic[4] = {};
  return in.read(magic, 4) && magic[0] == 'P' && magic[1] == 'K' && magic[2] == 3 && magic[3] == 4;
}

int64_t checkpoint_step(const std::string& path) {
  InputArchive archive = open_archive(path, torch::kCPU);
  return reading(path, [&] {
    InputArchive ts;
    archive.read(kKeyTrainState, ts);
    c10::IValue v;
    ts.read("step", v);
    return v.toInt();
  });
}

std::string describe_checkpoint(const std::string& path) {
  InputArchive archive = open_archive(path, torch::kCPU);
  return reading(path, [&] {
    std::error_code ec;
    const auto bytes = std::filesystem::file_size(path, ec);
    std::string out =
        fmt::format("{}: relpos checkpoint, format version {}, {} bytes, checksum ok\n", path,
                    kCheckpointVersion, ec ? 0 : bytes);

    InputArchive ts;
    archive.read(kKeyTrainState, ts);
    out += "train state:\n";
    for (const auto& key : ts.keys()) {
      c10::IValue v;
      ts.read(key, v);
      std::string value;
      if (v.isTensor()) {
        const auto& t = v.toTensor();
        value = fmt::format("{} {} (generator state)", std::string(t.dtype().name()),
                            shape_string(t.sizes()));
      } else if (v.isBool()) {
        value = v.toBool() ? "true" : "false";
      } else if (v.isInt()) {
        value = std::to_string(v.toInt());
      } else if (v.isDouble()) {
        value = fmt::format("{}", v.toDouble());
      } else {
        value = v.tagKind();
      }
      out += fmt::format("  {} = {}\n", key, value);
    }

    c10::IValue lrs;
    if (archive.try_read(kKeyOptimizerLr, lrs))
      out += fmt::format("optimizer: {} parameter group(s), lr {}\n", lrs.toDoubleList().size(),
                         fmt::join(lrs.toDoubleList().vec(), ", "));

    for (const char* kind : {kKeyParameters, kKeyBuffers}) {
      const auto tensors = read_tensors(archive, kind);  // a std::map: sorted by name
      int64_t values = 0;
      for (const auto& [name, t] : tensors) values += t.numel();
      out += fmt::format("{} ({} tensors, {} values):\n", kind, tensors.size(), values);
      for (const auto& [name, t] : tensors)
        out += fmt::format("  {}  {} {}\n", name, std::string(t.dtype().name()),
                           shape_string(t.sizes()));
    }
    return out;
  });
}

}  // namespace relpos

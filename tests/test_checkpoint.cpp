// Checkpoints: exact round trip of parameters and buffers, AdamW state (a step after loading
// equals the step without the save/load), train state and RNG state, atomic replacement under
// SIGKILL, and SchemaError for missing, truncated, corrupt and mismatched files.
#include <ATen/CPUGeneratorImpl.h>
#include <doctest/doctest.h>
#include <torch/cuda.h>
#include <torch/nn/module.h>
#include <torch/nn/modules/container/modulelist.h>
#include <torch/nn/modules/embedding.h>
#include <torch/nn/modules/linear.h>
#include <torch/optim/adamw.h>
#include <torch/serialize.h>

#include <chrono>
#include <thread>

#include "core/io/checkpoint.h"
#include "core/util/errors.h"
#include "tests/io_test_util.h"

using namespace relpos;
using namespace relpos::test;

namespace {

// A small model with nested, indexed submodules ("blocks.1.weight") and a buffer.
struct NetImpl : torch::nn::Module {
  explicit NetImpl(int64_t width = 4, int64_t classes = 3, bool extra = false) {
    emb = register_module("emb", torch::nn::Embedding(10, width));
    blocks = register_module("blocks", torch::nn::ModuleList());
    for (int i = 0; i < 2; ++i) blocks->push_back(torch::nn::Linear(width, width));
    head = register_module("head", torch::nn::Linear(width, classes));
    scale = register_buffer("scale", torch::rand({width}));
    if (extra) register_parameter("extra", torch::randn({2}));
  }
  torch::Tensor forward(const torch::Tensor& tokens) {
    auto x = emb(tokens) * scale;  // (B,T,D)
    for (const auto& b : *blocks)
      x = torch::tanh(b->as<torch::nn::Linear>()->forward(x));  // (B,T,D)
    return head(x);                                             // (B,T,C)
  }
  torch::nn::Embedding emb{nullptr};
  torch::nn::ModuleList blocks{nullptr};
  torch::nn::Linear head{nullptr};
  torch::Tensor scale;
};
TORCH_MODULE(Net);

torch::optim::AdamW make_adamw(Net& net, double lr = 1e-2) {
  return torch::optim::AdamW(net->parameters(),
                             torch::optim::AdamWOptions(lr).weight_decay(0.1).betas({0.9, 0.98}));
}

void train_step(Net& net, torch::optim::Optimizer& opt, int64_t k) {
  auto tokens = (torch::arange(12) * (k + 1)).remainder(10).reshape({3, 4});  // (B,T)
  opt.zero_grad();
  auto loss = (net->forward(tokens) - 0.5).pow(2).mean();
  loss.backward();
  opt.step();
}

std::map<std::string, torch::Tensor> state_of(torch::nn::Module& m) {
  std::map<std::string, torch::Tensor> out;
  for (const auto& p : m.named_parameters()) out[p.key()] = p.value().detach().clone();
  for (const auto& b : m.named_buffers()) out[b.key()] = b.value().detach().clone();
  return out;
}

bool same_state(const std::map<std::string, torch::Tensor>& a,
                const std::map<std::string, torch::Tensor>& b) {
  if (a.size() != b.size()) return false;
  for (const auto& [k, v] : a)
    if (!b.count(k) || !torch::equal(v, b.at(k))) return false;
  return true;
}

}  // namespace

TEST_CASE("checkpoint: a save/load round trip restores parameters, buffers and train state") {
  ScratchDir dir("ckpt_roundtrip");
  const std::string path = dir.file("checkpoint.pt");
  torch::manual_seed(1);
  Net a;
  auto opt_a = make_adamw(a);
  TrainState st;
  st.step = 42;
  st.best_metric = 0.8125;
  st.evals_without_improvement = 3;
  st.has_best = true;
  save_checkpoint(path, *a, opt_a, st);
  CHECK(std::vector<std::string>{"checkpoint.pt"} == [&] {
    std::vector<std::string> names;
    for (const auto& e : std::filesystem::directory_iterator(dir.path))
      names.push_back(e.path().filename().string());
    return names;
  }());  // no temporary left behind

  torch::manual_seed(2);
  Net b;
  auto opt_b = make_adamw(b);
  REQUIRE_FALSE(same_state(state_of(*a), state_of(*b)));
  const TrainState loaded = load_checkpoint(path, *b, opt_b);
  CHECK(same_state(state_of(*a), state_of(*b)));
  CHECK(loaded.step == 42);
  CHECK(loaded.best_metric == 0.8125);
  CHECK(loaded.evals_without_improvement == 3);
  CHECK(loaded.has_best);
  CHECK(loaded.cpu_rng_state.defined());
  // A state without a CUDA generator state (a CPU run) saves none, even where CUDA is available.
  CHECK_FALSE(loaded.cuda_rng_state.defined());
  {
    // One given (a CUDA run) is saved and read back as given.
    TrainState with_cuda = st;
    with_cuda.cuda_rng_state = torch::cuda::is_available() ? current_cuda_rng_state()
                                                           : torch::arange(16, torch::kUInt8);
    const std::string p2 = dir.file("with_cuda.pt");
    save_checkpoint(p2, *a, opt_a, with_cuda);
    const TrainState back = load_checkpoint(p2, *b, opt_b);
    REQUIRE(back.cuda_rng_state.defined());
    CHECK(torch::equal(back.cuda_rng_state, with_cuda.cuda_rng_state));
    std::filesystem::remove(p2);
  }

  // Saving again replaces the file.
  st.step = 43;
  torch::manual_seed(3);
  Net c;
  save_checkpoint(path, *c, opt_a, st);
  CHECK(load_checkpoint(path, *b, opt_b).step == 43);
  CHECK(same_state(state_of(*c), state_of(*b)));
}

TEST_CASE("checkpoint: an AdamW step after loading equals the step without the save/load") {
  ScratchDir dir("ckpt_adamw");
  const std::string path = dir.file("checkpoint.pt");
  torch::manual_seed(11);
  Net a;
  auto opt_a = make_adamw(a);
  for (int64_t k = 0; k < 3; ++k) train_step(a, opt_a, k);
  opt_a.param_groups()[0].options().set_lr(3e-3);  // as a scheduler would
  save_checkpoint(path, *a, opt_a, TrainState{});
  train_step(a, opt_a, 3);
  const auto reference = state_of(*a);

  torch::manual_seed(12);
  Net b;
  auto opt_b = make_adamw(b, /*lr=*/0.5);  // a fresh optimizer: no moments, another lr
  load_checkpoint(path, *b, opt_b);
  CHECK(opt_b.param_groups()[0].options().get_lr() == 3e-3);
  train_step(b, opt_b, 3);
  CHECK(same_state(reference, state_of(*b)));

  // Without the optimizer state (same parameters and lr, fresh moments) the step differs: the
  // equality above depends on the restored AdamW state.
  torch::manual_seed(13);
  Net c;
  auto opt_c = make_adamw(c, 3e-3);
  CHECK(load_matching_parameters(path, *c).initialised.empty());
  train_step(c, opt_c, 3);
  CHECK_FALSE(same_state(reference, state_of(*c)));
}

TEST_CASE("checkpoint: the RNG state is saved and restored") {
  ScratchDir dir("ckpt_rng");
  const std::string path = dir.file("checkpoint.pt");
  torch::manual_seed(21);
  Net net;
  auto opt = make_adamw(net);
  torch::rand({3});
  save_checkpoint(path, *net, opt, TrainState{});  // the generator's current state
  const auto expected = torch::rand({6});
  torch::manual_seed(999);
  torch::rand({17});
  load_checkpoint(path, *net, opt);
  CHECK(torch::equal(torch::rand({6}), expected));

  // A state given in TrainState is what is saved.
  torch::manual_seed(5);
  TrainState st;
  {
    auto gen = at::detail::getDefaultCPUGenerator();
    std::lock_guard<std::mutex> lock(gen.mutex());
    st.cpu_rng_state = gen.get_state();
  }
  const auto expected2 = torch::randn({4});
  torch::rand({100});
  save_checkpoint(path, *net, opt, st);
  torch::manual_seed(6);
  const TrainState loaded = load_checkpoint(path, *net, opt);
  CHECK(torch::equal(torch::randn({4}), expected2));
  CHECK(torch::equal(loaded.cpu_rng_state, st.cpu_rng_state));
}

TEST_CASE(
    "checkpoint: missing, foreign, truncated and corrupt files give SchemaError naming "
    "the file") {
  ScratchDir dir("ckpt_corrupt");
  torch::manual_seed(31);
  Net net;
  auto opt = make_adamw(net);
  train_step(net, opt, 0);  // so that the optimizer has state to save
  const auto before = state_of(*net);

  CHECK_THROWS_WITH_AS(load_checkpoint(dir.file("absent.pt"), *net, opt),
                       doctest::Contains("does not exist"), SchemaError);
  const std::string text = dir.file("text.pt");
  write_bytes(text, std::vector<char>(500, 'x'));
  CHECK_THROWS_WITH_AS(load_checkpoint(text, *net, opt), doctest::Contains(text.c_str()),
                       SchemaError);
  const std::string foreign = dir.file("foreign.pt");
  torch::save(net, foreign);  // a LibTorch archive, not a relpos checkpoint
  CHECK_THROWS_WITH_AS(load_checkpoint(foreign, *net, opt),
                       doctest::Contains("is not a relpos checkpoint"), SchemaError);

  const std::string good = dir.file("good.pt");
  save_checkpoint(good, *net, opt, TrainState{});
  const std::vector<char> bytes = read_bytes(good);
  REQUIRE(bytes.size() > 2000);
  const std::string bad = dir.file("bad.pt");
  for (size_t cut : {size_t{0}, size_t{1}, size_t{30}, size_t{100}, bytes.size() / 4,
                     bytes.size() / 2, bytes.size() - 200, bytes.size() - 22, bytes.size() - 1}) {
    CAPTURE(cut);
    write_bytes(bad, std::vector<char>(bytes.begin(), bytes.begin() + cut));
    CHECK_THROWS_WITH_AS(load_checkpoint(bad, *net, opt), doctest::Contains(bad.c_str()),
                         SchemaError);
    CHECK_THROWS_AS(load_matching_parameters(bad, *net), SchemaError);
  }
  // Overwritten bytes anywhere: the checkpoint carries a checksum.
  for (int part = 1; part < 8; ++part) {
    CAPTURE(part);
    std::vector<char> damaged = bytes;
    const size_t start = part * bytes.size() / 8;
    for (size_t i = start; i < std::min(bytes.size(), start + 64); ++i) damaged[i] ^= char(0x5A);
    write_bytes(bad, damaged);
    CHECK_THROWS_WITH_AS(load_checkpoint(bad, *net, opt), doctest::Contains(bad.c_str()),
                         SchemaError);
  }
  CHECK(same_state(before, state_of(*net)));  // failed loads changed nothing
}

TEST_CASE("checkpoint: describe_checkpoint lists the train state and every tensor of the model") {
  ScratchDir dir("ckpt_describe");
  torch::manual_seed(5);
  Net net;
  auto opt = make_adamw(net, 0.25);
  train_step(net, opt, 0);
  TrainState st;
  st.step = 17;
  st.has_best = true;
  st.skipped_batches = 2;
  const std::string path = dir.file("checkpoint.pt");
  save_checkpoint(path, *net, opt, st);
  CHECK(looks_like_checkpoint(path));

  const std::string text = describe_checkpoint(path);
  CAPTURE(text);
  CHECK(text.find(path + ": relpos checkpoint, format version 1, " +
                  std::to_string(std::filesystem::file_size(path)) + " bytes, checksum ok") == 0);
  for (const char* line : {"  step = 17\n", "  has_best = true\n", "  skipped_batches = 2\n",
                           "  pending_post_step = false\n", "optimizer: 1 parameter group(s), lr 0.25\n"})
    CHECK(text.find(line) != std::string::npos);
  // Every parameter and buffer of the module, by its own name, type and shape.
  auto listed = [&](const std::string& kind, const torch::OrderedDict<std::string, torch::Tensor>& d) {
    int64_t values = 0;
    std::string lines;
    std::map<std::string, std::string> sorted;
    for (const auto& item : d) {
      values += item.value().numel();
      std::string shape;
      for (auto n : item.value().sizes()) shape += (shape.empty() ? "" : ", ") + std::to_string(n);
      sorted[item.key()] = "  " + item.key() + "  float [" + shape + "]\n";
    }
    for (const auto& [k, l] : sorted) lines += l;
    return kind + " (" + std::to_string(d.size()) + " tensors, " + std::to_string(values) +
           " values):\n" + lines;
  };
  CHECK(text.find(listed("parameters", net->named_parameters())) != std::string::npos);
  CHECK(text.find(listed("buffers", net->named_buffers())) != std::string::npos);

  // Damaged: the same SchemaError as a load; an HDF5 file is not taken for a checkpoint.
  std::vector<char> bytes = read_bytes(path);
  bytes[bytes.size() / 2] ^= char(0x5A);
  write_bytes(dir.file("bad.pt"), bytes);
  CHECK_THROWS_WITH_AS(describe_checkpoint(dir.file("bad.pt")), doctest::Contains("is corrupt"),
                       SchemaError);
  write_bytes(dir.file("run.h5"), {'\x89', 'H', 'D', 'F', '\r', '\n', '\x1a', '\n'});
  CHECK_FALSE(looks_like_checkpoint(dir.file("run.h5")));
  CHECK_FALSE(looks_like_checkpoint(dir.file("absent.pt")));
}

TEST_CASE("checkpoint: a checkpoint of another model is refused, naming parameters and shapes") {
  ScratchDir dir("ckpt_mismatch");
  const std::string path = dir.file("checkpoint.pt");
  torch::manual_seed(41);
  Net small(4);
  auto opt_small = make_adamw(small);
  save_checkpoint(path, *small, opt_small, TrainState{});

  Net wide(5);
  auto opt_wide = make_adamw(wide);
  const auto before = state_of(*wide);
  CHECK_THROWS_WITH_AS(load_checkpoint(path, *wide, opt_wide),
                       doctest::Contains("parameter 'emb.weight' has shape [10, 4] in the "
                                         "checkpoint and [10, 5] in the model"),
                       SchemaError);
  CHECK_THROWS_WITH_AS(load_checkpoint(path, *wide, opt_wide),
                       doctest::Contains(("checkpoint '" + path + "' does not match").c_str()),
                       SchemaError);
  CHECK(same_state(before, state_of(*wide)));

  Net more(4, 3, /*extra=*/true);
  auto opt_more = make_adamw(more);
  CHECK_THROWS_WITH_AS(load_checkpoint(path, *more, opt_more),
                       doctest::Contains("parameter 'extra' [2] is missing from the checkpoint"),
                       SchemaError);
  const std::string path_more = dir.file("more.pt");
  save_checkpoint(path_more, *more, opt_more, TrainState{});
  CHECK_THROWS_WITH_AS(load_checkpoint(path_more, *small, opt_small),
                       doctest::Contains("parameter 'extra' [2] of the checkpoint is not in the "
                                         "model"),
                       SchemaError);
}

TEST_CASE("checkpoint: load_matching_parameters loads what fits by name and shape") {
  ScratchDir dir("ckpt_matching");
  const std::string path = dir.file("checkpoint.pt");
  torch::manual_seed(51);
  Net source(4, 3, /*extra=*/true);
  auto opt = make_adamw(source);
  save_checkpoint(path, *source, opt, TrainState{});

  torch::manual_seed(52);
  Net target(4, /*classes=*/5);  // another head, no `extra`
  const auto before = state_of(*target);
  const ParameterMatch m = load_matching_parameters(path, *target);
  CHECK(m.loaded == std::vector<std::string>{"emb.weight", "blocks.0.weight", "blocks.0.bias",
                                             "blocks.1.weight", "blocks.1.bias"});
  // The head has 5 classes here and 3 in the checkpoint: kept as initialised, and named as a
  // shape mismatch; `extra` is the checkpoint's only parameter the model lacks.
  CHECK(m.initialised == std::vector<std::string>{"head.weight", "head.bias"});
  CHECK(m.shape_mismatched == std::vector<std::string>{"head.weight", "head.bias"});
  CHECK(m.unused == std::vector<std::string>{"extra"});
  const auto src = state_of(*source);
  const auto now = state_of(*target);
  for (const char* name :
       {"emb.weight", "blocks.0.weight", "blocks.0.bias", "blocks.1.weight", "blocks.1.bias"}) {
    CAPTURE(name);
    CHECK(torch::equal(now.at(name), src.at(name)));
  }
  CHECK(torch::equal(now.at("head.weight"), before.at("head.weight")));
  CHECK(torch::equal(now.at("scale"), before.at("scale")));  // buffers are not parameters
}

TEST_CASE("checkpoint: an unwritable destination is a RunError") {
  torch::manual_seed(61);
  Net net;
  auto opt = make_adamw(net);
  ScratchDir dir("ckpt_unwritable");
  const std::string path = dir.file("missing/checkpoint.pt");
  CHECK_THROWS_WITH_AS(save_checkpoint(path, *net, opt, TrainState{}),
                       doctest::Contains(path.c_str()), RunError);
}

TEST_CASE("checkpoint: killed with SIGKILL while saving, the file holds a complete checkpoint") {
  ScratchDir dir("ckpt_kill");
  const std::string path = dir.file("checkpoint.pt");
  for (int delay_ms : {2, 9, 23}) {
    CAPTURE(delay_ms);
    const bool killed = run_and_kill(
        [&](const std::function<void()>& notify) {
          torch::manual_seed(71);
          Net net(16);
          auto opt = make_adamw(net);
          for (int64_t i = 0;; ++i) {
            torch::NoGradGuard guard;
            for (auto& p : net->parameters()) p.fill_(static_cast<double>(i));
            TrainState st;
            st.step = i;
            save_checkpoint(path, *net, opt, st);
            if (i == 1) notify();
          }
        },
        [&] { std::this_thread::sleep_for(std::chrono::milliseconds(delay_ms)); });
    CHECK(killed);
    Net net(16);
    auto opt = make_adamw(net);
    const TrainState st = load_checkpoint(path, *net, opt);
    CHECK(st.step >= 1);
    for (const auto& p : net->parameters())  // one checkpoint, not a mix of two
      CHECK(torch::all(p == static_cast<double>(st.step)).item<bool>());
  }
}

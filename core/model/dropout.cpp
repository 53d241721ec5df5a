#include "core/model/dropout.h"

#include <ATen/CPUGeneratorImpl.h>
#include <ATen/core/MT19937RNGEngine.h>

#include <algorithm>
#include <mutex>
#include <vector>

namespace relpos {
namespace {

// n successive outputs of the engine, as n calls of its operator() give them: the tempered
// words of the current state, and a call of the engine itself wherever it makes a new state.
void mt19937_draws(at::mt19937& engine, uint32_t* out, int64_t n) {
  at::mt19937_data_pod s = engine.data();
  while (n > 0) {
    // A call first decrements left_ and makes a new state when it reaches 0: left_ - 1 calls
    // read the current one.
    const int64_t take = std::min<int64_t>(s.left_ - 1, n);
    const uint32_t* words = s.state_.data() + s.next_;
    for (int64_t i = 0; i < take; ++i) {
      uint32_t y = words[i];  // MT19937's tempering
      y ^= (y >> 11);
      y ^= (y << 7) & 0x9d2c5680u;
      y ^= (y << 15) & 0xefc60000u;
      y ^= (y >> 18);
      out[i] = y;
    }
    s.next_ += static_cast<uint32_t>(take);
    s.left_ -= static_cast<int>(take);
    out += take;
    n -= take;
    if (n > 0) {
      engine.set_data(s);
      *out++ = engine();  // the call that makes the next state
      --n;
      s = engine.data();
    }
  }
  engine.set_data(s);
}

}  // namespace

void bernoulli_cpu(bool* out, int64_t n, double p) {
  TORCH_CHECK(p >= 0.0 && p <= 1.0, "bernoulli_cpu: p = ", p, " is not in [0, 1]");
  auto* gen = at::check_generator<at::CPUGeneratorImpl>(at::detail::getDefaultCPUGenerator());
  std::lock_guard<std::mutex> lock(gen->mutex_);
  at::mt19937 engine = gen->engine();
  // random64() = (first word << 32) | second word; the uniform is its low 53 bits over 2^53
  // (at::uniform_real_distribution<double>), exact in a double.
  constexpr uint64_t kMask = (uint64_t{1} << 53) - 1;
  constexpr double kScale = 1.0 / static_cast<double>(uint64_t{1} << 53);
  constexpr int64_t kBlock = 4096;
  std::vector<uint32_t> words(2 * kBlock);
  for (int64_t begin = 0; begin < n; begin += kBlock) {
    const int64_t m = std::min(kBlock, n - begin);
    mt19937_draws(engine, words.data(), 2 * m);
    for (int64_t i = 0; i < m; ++i) {
      const uint64_t bits = (static_cast<uint64_t>(words[2 * i]) << 32 | words[2 * i + 1]) & kMask;
      out[begin + i] = static_cast<double>(bits) * kScale < p;
    }
  }
  gen->set_engine(engine);
}

torch::Tensor bernoulli_mask(at::IntArrayRef sizes, double p, const torch::TensorOptions& options) {
  auto mask = torch::empty(sizes, options.dtype(torch::kBool));  // contiguous
  if (!mask.device().is_cpu()) return mask.bernoulli_(p);
  bernoulli_cpu(mask.data_ptr<bool>(), mask.numel(), p);
  return mask;
}

torch::Tensor dropout(const torch::Tensor& x, double p, bool training) {
  const auto dt = x.scalar_type();
  // at::dropout on the CPU: noise = bernoulli_(1 - p) in x's dtype, divided by 1 - p, times x.
  if (!training || p <= 0.0 || p >= 1.0 || x.numel() == 0 || !x.device().is_cpu() ||
      (dt != torch::kFloat && dt != torch::kDouble))
    return torch::dropout(x, p, training);
  const double keep = 1.0 - p;
  auto kept = bernoulli_mask(x.sizes(), keep, x.options());  // (x's shape)
  auto noise = torch::empty(x.sizes(), x.options());         // contiguous, as at::dropout's
  const bool* k = kept.data_ptr<bool>();
  AT_DISPATCH_FLOATING_TYPES(dt, "relpos_dropout", [&] {
    // 1/(1 - p) as noise.div_(1 - p) computes it: in x's dtype.
    const scalar_t one = 1, scale = one / static_cast<scalar_t>(keep);
    scalar_t* out = noise.data_ptr<scalar_t>();
    for (int64_t i = 0; i < noise.numel(); ++i) out[i] = k[i] ? scale : scalar_t(0);
  });
  return x * noise;
}

torch::Tensor dropout(const torch::Tensor& x, const torch::nn::Dropout& module) {
  return relpos::dropout(x, module->options.p(), module->is_training());
}

}  // namespace relpos

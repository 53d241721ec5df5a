#include "core/dist/distributed.h"

#include <fmt/format.h>
#include <torch/cuda.h>
#include <torch/utils.h>

#include <cmath>
#include <csignal>
#include <cstdlib>
#include <limits>
#include <map>
#include <thread>

#include "core/dist/collectives.h"
#include "core/io/run_file.h"
#include "core/util/errors.h"
#include "core/util/signals.h"
#include "core/util/threads.h"

namespace relpos {

namespace {

// Gradients travel in flat buckets of at most this many bytes (one all-reduce each).
constexpr int64_t kBucketBytes = 32 << 20;

int64_t env_int(const char* name, int64_t fallback, int64_t min_value) {
  const char* v = std::getenv(name);
  if (v == nullptr || *v == '\0') return fallback;
  char* end = nullptr;
  const long long x = std::strtoll(v, &end, 10);
  if (end == v || *end != '\0' || x < min_value)
    throw ConfigError(fmt::format("environment: {}='{}' (expected an integer >= {})", name, v, min_value),
                      "the launcher (relpos train --nproc, torchrun, srun) sets RANK, WORLD_SIZE, "
                      "LOCAL_RANK, LOCAL_WORLD_SIZE, MASTER_ADDR, MASTER_PORT");
  return x;
}

uint64_t splitmix64(uint64_t x) {
  x += 0x9E3779B97F4A7C15ULL;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ULL;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBULL;
  return x ^ (x >> 31);
}

torch::Tensor rows(const torch::Tensor& t, int64_t begin, int64_t n) {
  return t.defined() ? t.narrow(0, begin, n) : t;  // (n,...)
}

template <class T>
std::vector<T> rows(const std::vector<T>& v, int64_t begin, int64_t n) {
  if (v.empty()) return v;
  return std::vector<T>(v.begin() + begin, v.begin() + begin + n);
}

class DiscardingRunFile : public RunFileWriter {
 public:
  void append_metric(const std::string&, int64_t, double) override {}
  void truncate_metrics_after(int64_t) override {}
  void write_probe(const torch::Tensor&, const torch::Tensor&) override {}
  void write_snapshot(int64_t, const torch::Tensor&, const std::vector<NamedTensor>&,
                      const std::map<std::string, std::vector<NamedTensor>>&) override {}
  void write_weights(const std::vector<NamedTensor>&, int64_t) override {}
  void write_eval(const std::string&, const std::vector<NamedTensor>&,
                  const std::map<std::string, std::string>&) override {}
  void write_init_from(const InitFromRecord&) override {}
  void write_split(const SplitRecord&) override {}
  void set_config(const std::string&) override {}
  void flush() override {}
  void close() override {}
};

}  // namespace

DistEnv dist_env_from_environment() {
  DistEnv e;
  e.world_size = env_int("WORLD_SIZE", 1, 1);
  if (e.world_size == 1) return e;  // one process: RANK & co. mean nothing then
  e.rank = env_int("RANK", 0, 0);
  e.local_rank = env_int("LOCAL_RANK", e.rank, 0);
  e.local_world_size = env_int("LOCAL_WORLD_SIZE", e.world_size, 1);
  e.master_port = env_int("MASTER_PORT", e.master_port, 1);
  e.timeout = std::chrono::seconds(env_int("RELPOS_DIST_TIMEOUT", 600, 1));
  if (const char* a = std::getenv("MASTER_ADDR"); a != nullptr && *a != '\0') e.master_addr = a;
  if (const char* b = std::getenv("RELPOS_DIST_BACKEND"); b != nullptr) e.backend = b;
  if (!(e.backend.empty() || e.backend == "gloo" || e.backend == "nccl"))
    throw ConfigError(fmt::format("environment: RELPOS_DIST_BACKEND='{}' (expected gloo or nccl, or "
                                  "unset for NCCL on GPUs and Gloo on CPU)", e.backend));
  if (e.rank >= e.world_size)
    throw ConfigError(fmt::format("environment: RANK={} but WORLD_SIZE={} (expected RANK < WORLD_SIZE)",
                                  e.rank, e.world_size));
  if (e.local_rank >= e.local_world_size)
    throw ConfigError(fmt::format("environment: LOCAL_RANK={} but LOCAL_WORLD_SIZE={}", e.local_rank,
                                  e.local_world_size));
  if (e.master_port > 65535)
    throw ConfigError(fmt::format("environment: MASTER_PORT={} (expected 1..65535)", e.master_port));
  return e;
}

std::vector<std::string> available_backends() { return compiled_backends(); }

struct DataParallel::Impl {
  DistEnv env;
  torch::Device device = torch::kCPU;
  std::unique_ptr<Collectives> coll;  // null in one process
  std::vector<torch::Tensor> params;
  bool peer_interrupt = false;
  int64_t global_items = 0;  // of the last backward()

  // Runs a collective; a failure (dead peer, timeout) becomes a RunError naming rank and step.
  template <class F>
  void guarded(const std::string& what, F&& f) {
    try {
      f();
    } catch (const Error&) {
      throw;
    } catch (const c10::Error& e) {
      fail(what, e.what_without_backtrace());
    } catch (const std::exception& e) {
      fail(what, e.what());
    }
  }
  [[noreturn]] void fail(const std::string& what, std::string cause) {
    if (auto nl = cause.find('\n'); nl != std::string::npos) cause.resize(nl);
    throw PeerLost(
        fmt::format("rank {} of {}: {} failed ({} backend): {}", env.rank, env.world_size, what,
                    coll ? coll->name() : "no", cause),
        fmt::format("another rank has probably died or stopped: look for its own error (relpos train "
                    "--nproc prints every rank's); a rank that hangs is given up after "
                    "RELPOS_DIST_TIMEOUT={}s. Continue from the last checkpoint with --resume",
                    std::chrono::duration_cast<std::chrono::seconds>(env.timeout).count()));
  }
};

DataParallel::DataParallel(const DistEnv& env, torch::Device requested) : impl_(new Impl) {
  impl_->env = env;
  impl_->device = requested;
  if (!env.distributed()) return;
  // A peer that dies closes its sockets; writing to them must fail the collective (EPIPE, then
  // PeerLost naming this rank and step), not kill this rank with SIGPIPE and no message.
  std::signal(SIGPIPE, SIG_IGN);
  if (requested.is_cuda() && !requested.has_index()) {
    const int64_t n = std::max<int64_t>(1, static_cast<int64_t>(torch::cuda::device_count()));
    impl_->device = torch::Device(torch::kCUDA, static_cast<c10::DeviceIndex>(env.local_rank % n));
  }
  if (env.backend == "nccl" && !impl_->device.is_cuda())
    throw ConfigError(fmt::format("RELPOS_DIST_BACKEND=nccl, but this run's device is {} (NCCL "
                                  "needs CUDA devices)", impl_->device.str()),
                      "unset RELPOS_DIST_BACKEND to use Gloo on CPU, or train with --device cuda");
  impl_->guarded(fmt::format("joining the process group at {}:{}", env.master_addr, env.master_port),
                 [&] { impl_->coll = make_collectives(env, impl_->device); });
}

DataParallel::~DataParallel() = default;

int64_t DataParallel::rank() const { return impl_->env.rank; }
int64_t DataParallel::world_size() const { return impl_->env.world_size; }
torch::Device DataParallel::device() const { return impl_->device; }
std::string DataParallel::backend() const { return impl_->coll ? impl_->coll->name() : "none"; }

int64_t DataParallel::default_threads() const {
  if (impl_->env.local_world_size <= 1) return 0;
  return std::max<int64_t>(1, physical_cores() / impl_->env.local_world_size);
}

void DataParallel::attach(torch::nn::Module& model) {
  impl_->params = model.parameters();
  if (!impl_->coll) return;
  torch::NoGradGuard no_grad;
  // One broadcast per dtype: parameters and buffers flattened together.
  std::map<c10::ScalarType, std::vector<torch::Tensor>> by_type;
  for (const auto& t : model.parameters()) by_type[t.scalar_type()].push_back(t);
  for (const auto& t : model.buffers()) by_type[t.scalar_type()].push_back(t);
  for (auto& [type, tensors] : by_type) {
    std::vector<torch::Tensor> flat_parts;
    for (const auto& t : tensors) flat_parts.push_back(t.reshape({-1}));
    auto flat = torch::cat(flat_parts).to(impl_->device);  // (N)
    if (type == torch::kBool) flat = flat.to(torch::kUInt8);
    impl_->guarded("broadcasting the parameters from rank 0", [&] { impl_->coll->broadcast(flat); });
    int64_t offset = 0;
    for (auto& t : tensors) {
      const int64_t n = t.numel();
      t.copy_(flat.narrow(0, offset, n).view(t.sizes()).to(t.scalar_type()));
      offset += n;
    }
  }
}

Batch DataParallel::local_batch(const TaskData& data, int64_t step, int64_t global_batch, int64_t seed) {
  return local_rows(data.train_batch(step, global_batch), step, global_batch, seed);
}

Batch DataParallel::local_rows(const Batch& global, int64_t step, int64_t global_batch, int64_t seed) {
  const auto& env = impl_->env;
  maybe_inject_fault(env.rank, step);
  if (!env.distributed()) return global;
  if (global_batch % env.world_size != 0)
    throw ConfigError(fmt::format("train.batch_size: {} does not split over {} ranks", global_batch,
                                  env.world_size),
                      "train.batch_size is the global batch: use a multiple of the number of ranks");
  if (env.rank > 0)
    torch::manual_seed(splitmix64(splitmix64(static_cast<uint64_t>(seed) * 1000003u + env.rank) ^
                                  static_cast<uint64_t>(step)));
  const int64_t n = global_batch / env.world_size, begin = env.rank * n;
  Batch b;
  b.tokens = rows(global.tokens, begin, n);          // (n,T)
  b.key_mask = rows(global.key_mask, begin, n);      // (n,T)
  b.segments = rows(global.segments, begin, n);      // (n,T)
  b.targets = rows(global.targets, begin, n);        // (n,T) | (n) | (n,2)
  b.pool_index = rows(global.pool_index, begin, n);  // (n)
  b.example_ids = rows(global.example_ids, begin, n);
  b.context_range = rows(global.context_range, begin, n);
  b.lengths = rows(global.lengths, begin, n);
  b.positions = rows(global.positions, begin, n);    // (n,T)
  return b;
}

double DataParallel::backward(const torch::Tensor& loss, int64_t items, int64_t step) {
  const double local = loss.item<double>();
  if (std::isfinite(local) && items > 0) loss.backward();
  impl_->global_items = items;
  if (!impl_->coll) return local;

  torch::NoGradGuard no_grad;
  const auto& P = impl_->params;
  const double weight = static_cast<double>(items);
  // Scalars: Σ items·loss, Σ items, ranks interrupted, then per parameter: ranks with a gradient.
  std::vector<double> s{items > 0 ? weight * local : 0.0, weight, interrupt_requested() ? 1.0 : 0.0};
  for (const auto& p : P) s.push_back(p.grad().defined() ? 1.0 : 0.0);
  auto scalars = torch::tensor(s, torch::kFloat64).to(impl_->device);  // (3+P)

  // Buckets of consecutive parameters of one dtype, each flattened to one tensor holding
  // items·gradient (zeros where this rank has none).
  struct Bucket {
    size_t first, last;  // parameter range [first, last)
    torch::Tensor flat;  // (N)
  };
  std::vector<Bucket> buckets;
  for (size_t i = 0; i < P.size();) {
    size_t j = i;
    int64_t bytes = 0;
    std::vector<torch::Tensor> parts;
    while (j < P.size() && P[j].scalar_type() == P[i].scalar_type() &&
           (parts.empty() || bytes + P[j].numel() * P[j].element_size() <= kBucketBytes)) {
      const auto& g = P[j].grad();
      parts.push_back(g.defined() ? g.reshape({-1}) : torch::zeros({P[j].numel()}, P[j].options()));
      bytes += P[j].numel() * P[j].element_size();
      ++j;
    }
    buckets.push_back({i, j, torch::cat(parts).mul_(weight)});  // (N)
    i = j;
  }
  std::vector<torch::Tensor> tensors{scalars};
  for (auto& b : buckets) tensors.push_back(b.flat);
  impl_->guarded(fmt::format("the gradient all-reduce of step {}", step + 1),
                 [&] { impl_->coll->allreduce_sum(tensors); });

  const auto r = scalars.cpu();
  const double* v = r.data_ptr<double>();
  const double total_items = v[1];
  impl_->global_items = static_cast<int64_t>(total_items);
  impl_->peer_interrupt = v[2] > 0;
  for (auto& b : buckets) {
    if (total_items > 0) b.flat.div_(total_items);
    int64_t offset = 0;
    for (size_t k = b.first; k < b.last; ++k) {
      auto& p = impl_->params[k];
      const int64_t n = p.numel();
      if (v[3 + k] > 0) {
        if (!p.grad().defined()) p.mutable_grad() = torch::zeros_like(p);
        p.mutable_grad().copy_(b.flat.narrow(0, offset, n).view(p.sizes()));
      }
      offset += n;
    }
  }
  return total_items > 0 ? v[0] / total_items : std::numeric_limits<double>::quiet_NaN();
}

int64_t DataParallel::last_global_items() const { return impl_->global_items; }

bool DataParallel::stop_requested() const {
  return impl_->coll ? impl_->peer_interrupt : interrupt_requested();
}

int64_t DataParallel::broadcast_from_main(int64_t value, const std::string& what) {
  if (!impl_->coll) return value;
  auto t = torch::tensor({value}, torch::kInt64).to(impl_->device);  // (1)
  impl_->guarded(fmt::format("broadcasting {}", what), [&] { impl_->coll->broadcast(t); });
  return t.cpu().item<int64_t>();
}

void DataParallel::barrier(const std::string& what) {
  if (!impl_->coll) return;
  impl_->guarded(fmt::format("the barrier '{}'", what), [&] { impl_->coll->barrier(); });
}

std::unique_ptr<RunFileWriter> discarding_run_file() { return std::make_unique<DiscardingRunFile>(); }

void maybe_inject_fault(int64_t rank, int64_t step) {
  static const std::string spec = [] {
    const char* v = std::getenv("RELPOS_FAULT");
    return std::string(v ? v : "");
  }();
  if (spec.empty()) return;
  long long r = -1, s = -1;
  char mode[8] = {0};
  const int n = std::sscanf(spec.c_str(), "%lld:%lld:%7s", &r, &s, mode);
  if (n < 2 || r != rank || s != step) return;
  // The first attempt only, unless `always`: a job restarted by --max-restarts
  // (RELPOS_RESTART_COUNT >= 1) must be able to get past the step.
  const char* restart = std::getenv("RELPOS_RESTART_COUNT");
  if (restart != nullptr && std::string(restart) != "0" && std::string(mode) != "always") return;
  // A crash, not an error path: the point is that nothing in this process gets to clean up.
  std::raise(std::string(mode) == "hang" ? SIGSTOP : SIGKILL);
}

}  // namespace relpos

// c10d process groups: Gloo (CPU, and CUDA tensors through host copies) and NCCL (CUDA).
// Debian's LibTorch compiles Gloo in (its CMake targets define USE_C10D_GLOO); the header
// additionally needs the gloo headers (libgloo-dev). A CUDA LibTorch defines USE_C10D_NCCL;
// ProcessGroupNCCL.hpp then needs nccl.h (CMakeLists.txt looks for it).
#include "core/dist/collectives.h"

#include <fmt/format.h>

#include <cstdlib>

#include "core/util/errors.h"

#if defined(USE_DISTRIBUTED) && __has_include(<torch/csrc/distributed/c10d/TCPStore.hpp>)
#define RELPOS_HAVE_C10D 1
#include <torch/csrc/distributed/c10d/TCPStore.hpp>
#endif
#if defined(RELPOS_HAVE_C10D) && defined(USE_C10D_GLOO) && __has_include(<gloo/config.h>)
#define RELPOS_HAVE_GLOO 1
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#endif
#if defined(RELPOS_HAVE_C10D) && defined(USE_C10D_NCCL) && __has_include(<nccl.h>)
#define RELPOS_HAVE_NCCL 1
#include <c10/cuda/CUDAFunctions.h>
#include <torch/csrc/distributed/c10d/ProcessGroupNCCL.hpp>
#endif

namespace relpos {

std::vector<std::string> compiled_backends() {
  std::vector<std::string> out;
#ifdef RELPOS_HAVE_GLOO
  out.push_back("gloo");
#endif
#ifdef RELPOS_HAVE_NCCL
  out.push_back("nccl");
#endif
  return out;
}

#ifdef RELPOS_HAVE_C10D
namespace {

// Works for any process group class: their common base differs between LibTorch versions
// (ProcessGroup in 1.x, Backend in 2.x), their collective signatures do not.
template <class PG>
class ProcessGroupCollectives : public Collectives {
 public:
  ProcessGroupCollectives(std::string name, c10::intrusive_ptr<c10d::Store> store,
                          c10::intrusive_ptr<PG> pg, torch::Device device)
      : name_(std::move(name)), store_(std::move(store)), pg_(std::move(pg)), device_(device) {}

  std::string name() const override { return name_; }

  void allreduce_sum(std::vector<torch::Tensor>& tensors) override {
    std::vector<decltype(pg_->allreduce(std::declval<std::vector<at::Tensor>&>()))> works;
    for (auto& t : tensors) {
      std::vector<at::Tensor> one{t};
      works.push_back(pg_->allreduce(one));
    }
    for (auto& w : works) w->wait();
  }

  void broadcast(torch::Tensor& tensor) override {
    std::vector<at::Tensor> one{tensor};
    c10d::BroadcastOptions o;
    o.rootRank = 0;
    pg_->broadcast(one, o)->wait();
  }

  // An all-reduce of one number: works the same on every backend and device.
  void barrier() override {
    std::vector<torch::Tensor> one{torch::ones({1}, torch::TensorOptions().device(device_))};
    allreduce_sum(one);
    (void)one[0].cpu();
  }

 private:
  std::string name_;
  c10::intrusive_ptr<c10d::Store> store_;  // kept alive: rank 0 serves it
  c10::intrusive_ptr<PG> pg_;
  torch::Device device_;
};

bool is_loopback(const std::string& addr) {
  return addr == "localhost" || addr == "::1" || addr.rfind("127.", 0) == 0;
}

}  // namespace

std::unique_ptr<Collectives> make_collectives(const DistEnv& env, torch::Device device) {
  c10d::TCPStoreOptions so;
  so.port = static_cast<std::uint16_t>(env.master_port);
  so.isServer = env.rank == 0;
  so.numWorkers = static_cast<std::size_t>(env.world_size);
  so.waitWorkers = true;
  so.timeout = env.timeout;
  auto store = c10::make_intrusive<c10d::TCPStore>(env.master_addr, so);
  const int rank = static_cast<int>(env.rank), size = static_cast<int>(env.world_size);
#ifdef RELPOS_HAVE_NCCL
  if (device.is_cuda() && env.backend != "gloo") {
    c10::cuda::set_device(device.index());
    auto opts = c10d::ProcessGroupNCCL::Options::create();
    opts->timeout = env.timeout;
    auto pg = c10::make_intrusive<c10d::ProcessGroupNCCL>(store, rank, size, opts);
    return std::make_unique<ProcessGroupCollectives<c10d::ProcessGroupNCCL>>("nccl", store, pg, device);
  }
#endif
#ifndef RELPOS_HAVE_NCCL
  if (env.backend == "nccl")
    throw ConfigError("RELPOS_DIST_BACKEND=nccl, but this relpos was built without NCCL",
                      "build against a CUDA LibTorch with nccl.h found (docs/scaling.md), or unset "
                      "RELPOS_DIST_BACKEND");
#endif
#ifdef RELPOS_HAVE_GLOO
  auto opts = c10d::ProcessGroupGloo::Options::create(env.timeout);
  // GLOO_SOCKET_IFNAME names the network interface, as in PyTorch; one node uses loopback.
  if (const char* ifname = std::getenv("GLOO_SOCKET_IFNAME"); ifname != nullptr && *ifname != '\0')
    opts->devices.push_back(c10d::ProcessGroupGloo::createDeviceForInterface(ifname));
  else if (is_loopback(env.master_addr))
    opts->devices.push_back(c10d::ProcessGroupGloo::createDeviceForHostname("127.0.0.1"));
  else
    opts->devices.push_back(c10d::ProcessGroupGloo::createDefaultDevice());
  auto pg = c10::make_intrusive<c10d::ProcessGroupGloo>(store, rank, size, opts);
  return std::make_unique<ProcessGroupCollectives<c10d::ProcessGroupGloo>>("gloo", store, pg, device);
#else
  throw ConfigError(fmt::format("distributed training on {}: this relpos was built without a "
                                "c10d backend for it (built with: {})",
                                device.str(), compiled_backends().empty() ? "none" : "nccl"),
                    "install libgloo-dev and rebuild (scripts/setup.sh), or use a LibTorch with NCCL");
#endif
}

#else  // LibTorch without c10d

std::unique_ptr<Collectives> make_collectives(const DistEnv&, torch::Device) {
  throw ConfigError("distributed training: this LibTorch was built without c10d (USE_DISTRIBUTED)",
                    "use a LibTorch with distributed support, or run one process (unset WORLD_SIZE)");
}

#endif

}  // namespace relpos

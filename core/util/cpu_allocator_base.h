// A base for relpos's CPU allocators (the block cache, the bench's tensor counter) that compiles
// against every LibTorch we support: before 2.3 c10::Allocator::allocate() is const, from 2.3 on
// it is non-const and copy_data() is pure virtual. Both allocate() overloads are defined here, so
// whichever matches the base class overrides it; subclasses implement allocate_impl().
#pragma once

#include <c10/core/Allocator.h>

#include <cstring>

namespace relpos {

class CpuAllocatorBase : public c10::Allocator {
 public:
  c10::DataPtr allocate(size_t n) const { return allocate_impl(n); }
  c10::DataPtr allocate(size_t n) { return allocate_impl(n); }

  void copy_data(void* dest, const void* src, std::size_t count) const {
    std::memcpy(dest, src, count);
  }

 protected:
  virtual c10::DataPtr allocate_impl(size_t n) const = 0;

  // n bytes from `inner`, whose DataPtr context must be its data pointer (as LibTorch's CPU
  // allocator's is), handed back with `deleter` instead; the deleter must pass the pointer on to
  // inner's raw deleter. `who` names the caller in the error.
  static c10::DataPtr allocate_from(c10::Allocator* inner, size_t n, c10::DeleterFnPtr deleter,
                                    const char* who) {
    c10::DataPtr d = inner->allocate(n);
    void* data = d.get();
    const c10::Device device = d.device();
    TORCH_CHECK(data == d.get_context(), who, ": unexpected CPU allocator");
    d.release_context();
    return {data, data, deleter, device};
  }
};

}  // namespace relpos

// libFuzzer harness: the safetensors header parser (core/io/safetensors_header.cpp), the part of
// `relpos import` that reads untrusted bytes before any tensor. See fuzz/fuzz_safetensors_check.h.
#include <cstdio>
#include <cstdlib>

#include "fuzz/fuzz_safetensors_check.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    relpos::fuzz::check_safetensors(data, size);
  } catch (const relpos::fuzz::FuzzFinding& e) {
    std::fprintf(stderr, "FINDING: %s\n", e.what());
    std::abort();
  }
  return 0;  // any other exception escapes and libFuzzer reports it as a crash
}

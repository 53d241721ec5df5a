// libFuzzer harness: the config parser (YAML layers, --set overrides, validate(), the resolved
// config's round trip). See fuzz/fuzz_checks.h for the input layout and what counts as a finding.
#include <cstdio>
#include <cstdlib>

#include "fuzz/fuzz_checks.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    relpos::fuzz::check_config(data, size);
  } catch (const relpos::fuzz::FuzzFinding& e) {
    std::fprintf(stderr, "FINDING: %s\n", e.what());
    std::abort();
  }
  return 0;  // any other exception escapes and libFuzzer reports it as a crash
}

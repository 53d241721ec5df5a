// libFuzzer harness: the data loaders (text, GLUE TSV, SQuAD JSON, sentiment JSON, WordPiece
// vocab.txt and encoding, WordNet data files) on bytes written to a scratch file. See
// fuzz/fuzz_checks.h for the input layout and what counts as a finding.
#include <cstdio>
#include <cstdlib>

#include "fuzz/fuzz_checks.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    relpos::fuzz::check_data(data, size);
  } catch (const relpos::fuzz::FuzzFinding& e) {
    std::fprintf(stderr, "FINDING: %s\n", e.what());
    std::abort();
  }
  return 0;
}

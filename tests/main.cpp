#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>
#include <torch/utils.h>

int main(int argc, char** argv) {
  // Tests are small; one thread keeps them deterministic and avoids oversubscription under ctest -j.
  torch::set_num_threads(1);
  doctest::Context ctx;
  ctx.applyCommandLine(argc, argv);
  return ctx.run();
}

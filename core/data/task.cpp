// Names of the splits, and the split sizes of describe().
#include "core/data/task.h"

#include <fmt/format.h>

#include "core/data/tasks.h"

namespace relpos {

const char* split_name(Split s) {
  switch (s) {
    case Split::Train:
      return "train";
    case Split::Valid:
      return "valid";
    case Split::Test:
      return "test";
  }
  return "?";
}

std::string split_sizes(size_t train, size_t valid, size_t test) {
  return fmt::format("train {} / valid {} / test {}", train, valid, test);
}

}  // namespace relpos

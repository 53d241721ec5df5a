// The file that holds a checkpoint archive: written atomically with a checksum trailer, read
// back only when complete and intact. Internal to core/io (see checkpoint_file.cpp).
#pragma once

#include <torch/serialize/output-archive.h>

#include <string>
#include <vector>

namespace relpos {

// Writes `archive` and its trailer to `path` through a temporary file and a rename. Throws
// RunError naming the file when it cannot be written (the previous file is then unchanged).
void write_archive_atomically(const std::string& path, torch::serialize::OutputArchive& archive);

// The archive bytes of `path`, after checking the trailer's length and checksum. Throws
// SchemaError naming the file when it is missing, truncated, corrupt or has no trailer.
std::vector<char> read_verified_archive(const std::string& path);

}  // namespace relpos

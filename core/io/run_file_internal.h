// Opening a run file with its schema checks, shared by the reader, the appending writer and
// `inspect`. Internal to core/io.
#pragma once

#include <H5Cpp.h>

#include <cstdint>
#include <string>

namespace relpos {

struct OpenedRunFile {
  H5::H5File file;
  int64_t version = 0;
};

// Opens `path` (read-only, or read-write for appending). Throws SchemaError naming the file when
// it is missing, not HDF5, truncated or corrupt, has no integer schema_version, or has a schema
// version newer than schema::kSchemaVersion (naming both versions).
OpenedRunFile open_run_file(const std::string& path, bool writable);

}  // namespace relpos

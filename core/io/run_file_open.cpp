// Opening run files: schema checks, the walk that finds a file torn by a crash, and the
// fallback to the shadow copy (run_file_internal.h).
#include <H5Cpp.h>
#include <fmt/format.h>

#include <filesystem>
#include <fstream>

#include "core/io/h5_util.h"
#include "core/io/run_file_internal.h"
#include "core/io/schema.h"
#include "core/util/errors.h"

namespace relpos {

namespace sc = schema;

std::string shadow_path(const std::string& path) { return path + ".shadow"; }

std::string writing_marker_path(const std::string& path) { return path + ".writing"; }

void set_writing_marker(const std::string& path) {
  std::ofstream out(writing_marker_path(path));
  out << "run.h5 is being written; read " << shadow_path(path) << " until this file is gone\n";
  if (!out)
    throw RunError(fmt::format("cannot create '{}'", writing_marker_path(path)),
                   "check that the folder is writable and has free space");
}

void clear_writing_marker(const std::string& path) {
  std::error_code ec;
  std::filesystem::remove(writing_marker_path(path), ec);
}

bool has_writing_marker(const std::string& path) {
  std::error_code ec;
  return std::filesystem::exists(writing_marker_path(path), ec);
}

OpenedRunFile open_run_file(const std::string& path, bool writable) {
  h5::quiet();
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec))
    throw SchemaError(fmt::format("run file '{}' does not exist or is not a regular file", path));
  const std::string damaged_hint =
      "the file is truncated or corrupt, or not a relpos run file; a run killed before its first "
      "flush leaves no readable run.h5";
  OpenedRunFile out;
  out.path = path;
  const H5::FileAccPropList fapl = writable ? h5::writer_access() : h5::unlocked_access();
  try {
    out.file.openFile(path, writable ? H5F_ACC_RDWR : H5F_ACC_RDONLY, fapl);
  } catch (const H5::Exception& e) {
    throw DamagedRunFile(
        fmt::format("'{}' cannot be opened as an HDF5 file: {}", path, h5::error_detail(e)),
        damaged_hint);
  }
  try {
    const H5::Group root = out.file.openGroup(sc::kRoot);
    if (!h5::has_attr(root, sc::kAttrSchemaVersion))
      throw SchemaError(fmt::format("'{}' is not a relpos run file: its root has no '{}' attribute",
                                    path, sc::kAttrSchemaVersion),
                        "docs/hdf5-schema.md describes the run file");
    const auto version = h5::read_int_attr(root, sc::kAttrSchemaVersion);
    if (!version)
      throw SchemaError(
          fmt::format("'{}': root attribute '{}' is not an integer", path, sc::kAttrSchemaVersion));
    if (*version > sc::kSchemaVersion)
      throw SchemaError(fmt::format("run file '{}' has schema version {}, newer than the version "
                                    "this relpos reads ({})",
                                    path, *version, sc::kSchemaVersion),
                        "update relpos to read this file");
    if (*version < 1)
      throw SchemaError(
          fmt::format("run file '{}' has schema version {}; versions start at 1", path, *version));
    out.version = *version;
  } catch (const H5::Exception& e) {
    throw DamagedRunFile(fmt::format("'{}' cannot be read: {}", path, h5::error_detail(e)),
                         damaged_hint);
  }
  return out;
}

namespace {

// Opens every object and attribute below `group` once.
void walk(const H5::Group& group) {
  for (int i = 0, n = group.getNumAttrs(); i < n; ++i)
    group.openAttribute(static_cast<unsigned>(i)).getDataType();
  for (const auto& name : h5::child_names(group)) {
    const H5O_type_t type = group.childObjType(name);
    if (type == H5O_TYPE_GROUP) {
      walk(group.openGroup(name));
    } else if (type == H5O_TYPE_DATASET) {
      const H5::DataSet ds = group.openDataSet(name);
      ds.getSpace().getSimpleExtentNdims();
      ds.getDataType().getClass();
      for (int i = 0, n = ds.getNumAttrs(); i < n; ++i)
        ds.openAttribute(static_cast<unsigned>(i)).getDataType();
    }
  }
}

}  // namespace

OpenedRunFile open_intact_run_file(const std::string& path, bool writable) {
  OpenedRunFile out = open_run_file(path, writable);
  try {
    walk(out.file.openGroup(sc::kRoot));
  } catch (const H5::Exception& e) {
    throw DamagedRunFile(fmt::format("run file '{}' is damaged: {}", path, h5::error_detail(e)),
                         "the file was truncated, changed, or torn by a crash while written");
  }
  return out;
}

OpenedRunFile open_run_file_or_shadow(const std::string& path) {
  // run.h5 was being changed (now, or when its writer died): the shadow is the intact copy.
  if (has_writing_marker(path)) {
    try {
      return open_intact_run_file(shadow_path(path), /*writable=*/false);
    } catch (const SchemaError&) {
      // No usable shadow: try run.h5 itself below.
    }
  }
  try {
    return open_intact_run_file(path, /*writable=*/false);
  } catch (const DamagedRunFile&) {
    const std::string shadow = shadow_path(path);
    std::error_code ec;
    if (std::filesystem::is_regular_file(shadow, ec)) {
      try {
        return open_intact_run_file(shadow, /*writable=*/false);
      } catch (const SchemaError&) {
        // Both damaged: report the file that was asked for.
      }
    }
    throw;
  }
}

void copy_file_atomically(const std::string& from, const std::string& to) {
  const std::string tmp = to + ".tmp";
  std::error_code ec;
  std::filesystem::copy_file(from, tmp, std::filesystem::copy_options::overwrite_existing, ec);
  if (!ec) std::filesystem::rename(tmp, to, ec);
  if (ec) {
    std::filesystem::remove(tmp);
    throw RunError(fmt::format("cannot copy run file '{}' to '{}': {}", from, to, ec.message()),
                   "check that the folder is writable and has free space");
  }
}

}  // namespace relpos

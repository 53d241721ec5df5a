// Opening run files: schema checks, the walk that finds a file torn by a crash, and the
// fallback to the shadow copy (run_file_internal.h).
#include <H5Cpp.h>
#include <fmt/format.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "core/io/h5_util.h"
#include "core/io/run_file_internal.h"
#include "core/io/schema.h"
#include "core/util/errors.h"
#include "core/util/process.h"

namespace relpos {

namespace sc = schema;

std::string shadow_path(const std::string& path) { return path + ".shadow"; }

std::string writing_marker_path(const std::string& path) { return path + ".writing"; }

void set_writing_marker(const std::string& path) {
  std::ofstream out(writing_marker_path(path));
  out << "run.h5 is being written; read " << shadow_path(path) << " until this file is gone\n";
  if (!out)
    throw RunError(fmt::format("cannot create '{}': {}", writing_marker_path(path),
                               std::strerror(errno)),
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

// Opens every object and attribute below `group` once; with `values`, reads every attribute's
// value and every string dataset too (the variable-length strings live in a global heap that
// nothing else checks).
void walk(const H5::Group& group, bool values) {
  auto attributes = [values](const H5::H5Object& obj) {
    for (int i = 0, n = obj.getNumAttrs(); i < n; ++i) {
      const H5::Attribute attr = obj.openAttribute(static_cast<unsigned>(i));
      if (values)
        h5::describe_attr(attr);
      else
        attr.getDataType();
    }
  };
  attributes(group);
  for (const auto& name : h5::child_names(group)) {
    const H5O_type_t type = group.childObjType(name);
    if (type == H5O_TYPE_GROUP) {
      walk(group.openGroup(name), values);
    } else if (type == H5O_TYPE_DATASET) {
      const H5::DataSet ds = group.openDataSet(name);
      ds.getSpace().getSimpleExtentNdims();
      if (ds.getDataType().getClass() == H5T_STRING && values) h5::read_strings(ds, name);
      attributes(ds);
    }
  }
}

const char* const kDamagedHint = "the file was truncated, changed, or torn by a crash while written";

// HDF5 trusts the sizes stored in a file's global heap: a few damaged bytes there make it read
// out of bounds (a segmentation fault), and a heap torn mid-write can make it loop forever. So
// the first full read of a file's metadata, attribute values included, runs in a child process
// (fork, no exec: the child touches only HDF5 and leaves with _exit, so it never flushes or
// closes anything of the parent's). A child killed by a signal, or still reading after
// kWalkSeconds, means the file is damaged; an HDF5 error in the child is reported as is.
constexpr int kWalkSeconds = 120;

void walk_in_child(const std::string& path) {
  const auto r = call_in_child(
      [&]() -> std::string {
        try {
          H5::H5File file(path, H5F_ACC_RDONLY, H5::FileCreatPropList::DEFAULT,
                          h5::unlocked_access());
          walk(file.openGroup(sc::kRoot), /*values=*/true);
        } catch (const H5::Exception& e) {
          return h5::error_detail(e);
        }
        return {};
      },
      kWalkSeconds);
  if (!r) return;  // cannot isolate: the walk in this process still runs
  if (r->timed_out)
    throw DamagedRunFile(
        fmt::format("run file '{}' is damaged: reading its metadata did not finish in {} s "
                    "(HDF5 loops on some files torn while written)",
                    path, kWalkSeconds),
        kDamagedHint);
  if (r->signal != 0)
    throw DamagedRunFile(
        fmt::format("run file '{}' is damaged: reading its metadata crashed the HDF5 library "
                    "({}), so nothing in it can be trusted",
                    path, strsignal(r->signal)),
        kDamagedHint);
  if (!r->error.empty())
    throw DamagedRunFile(fmt::format("run file '{}' is damaged: {}", path, r->error), kDamagedHint);
}

}  // namespace

OpenedRunFile open_intact_run_file(const std::string& path, bool writable) {
  OpenedRunFile out = open_run_file(path, writable);
  try {
    if (!writable) walk_in_child(path);
    walk(out.file.openGroup(sc::kRoot), /*values=*/false);
  } catch (const H5::Exception& e) {
    throw DamagedRunFile(fmt::format("run file '{}' is damaged: {}", path, h5::error_detail(e)),
                         kDamagedHint);
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

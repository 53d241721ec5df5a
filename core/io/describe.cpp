// describe_run_file: what `relpos inspect FILE.h5` prints — every group and dataset with its
// element type, shape, axis names and attributes, children in natural order (step_2 before
// step_10).
#include <H5Cpp.h>
#include <fmt/format.h>
#include <fmt/ranges.h>  // fmt::join (in fmt/format.h only before fmt 11)

#include <algorithm>
#include <filesystem>

#include "core/io/h5_util.h"
#include "core/io/run_file.h"
#include "core/io/run_file_internal.h"
#include "core/io/schema.h"
#include "core/util/errors.h"

namespace relpos {

namespace {

std::string shape_of(const H5::DataSet& ds) {
  const H5::DataSpace space = ds.getSpace();
  const int rank = space.getSimpleExtentNdims();
  if (rank <= 0) return "scalar";
  std::vector<hsize_t> dims(static_cast<size_t>(rank));
  space.getSimpleExtentDims(dims.data());
  return fmt::format("[{}]", fmt::join(dims, ","));
}

// Attribute lines of an object, `skip` left out (shown elsewhere).
void describe_attributes(const H5::H5Object& obj, const std::string& indent,
                         const std::string& skip, std::string& out) {
  std::vector<std::pair<std::string, std::string>> lines;
  const int n = obj.getNumAttrs();
  for (int i = 0; i < n; ++i) {
    const H5::Attribute attr = obj.openAttribute(static_cast<unsigned>(i));
    const std::string name = attr.getName();
    if (name != skip) lines.emplace_back(name, h5::describe_attr(attr));
  }
  std::sort(lines.begin(), lines.end());
  for (const auto& [name, text] : lines) out += fmt::format("{}@{}: {}\n", indent, name, text);
}

void describe_group(const H5::Group& group, const std::string& indent, std::string& out) {
  describe_attributes(group, indent, "", out);
  std::vector<std::string> names = h5::child_names(group);
  std::sort(names.begin(), names.end(), h5::natural_less);
  for (const auto& name : names) {
    const H5O_type_t type = group.childObjType(name);
    if (type == H5O_TYPE_GROUP) {
      out += fmt::format("{}{}/\n", indent, name);
      describe_group(group.openGroup(name), indent + "  ", out);
    } else if (type == H5O_TYPE_DATASET) {
      const H5::DataSet ds = group.openDataSet(name);
      const auto dims = h5::read_string_attr(ds, schema::kAttrDims);
      out += fmt::format("{}{}  {} {}{}\n", indent, name, h5::type_name(ds.getDataType()),
                         shape_of(ds), dims ? fmt::format("  ({})", *dims) : std::string());
      describe_attributes(ds, indent + "  ", schema::kAttrDims, out);
    } else {
      out += fmt::format("{}{}  (not a group or dataset)\n", indent, name);
    }
  }
}

}  // namespace

std::string describe_run_file(const std::string& path) {
  OpenedRunFile opened = open_run_file_or_shadow(path);
  std::error_code ec;
  const auto bytes = std::filesystem::file_size(opened.path, ec);
  std::string out = fmt::format("{}: relpos run file, schema version {}, {} bytes\n", opened.path,
                                opened.version, ec ? 0 : bytes);
  if (opened.path != path)
    out += fmt::format(
        "note: '{}' is damaged (a crash while it was written); this is its shadow "
        "copy, complete up to the last finished write\n",
        path);
  try {
    out += std::string(schema::kRoot) + "\n";
    describe_group(opened.file.openGroup(schema::kRoot), "  ", out);
  } catch (const H5::Exception& e) {
    throw SchemaError(fmt::format("run file '{}' cannot be read: {}", path, h5::error_detail(e)),
                      "the file may be truncated or corrupt");
  }
  return out;
}

}  // namespace relpos

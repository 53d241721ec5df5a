// RunFileReader over the HDF5 C++ API. Every HDF5 failure (a corrupt or truncated file, a
// missing object) becomes a SchemaError that names the file and the path being read.
#include <H5Cpp.h>
#include <fmt/format.h>
#include <fmt/ranges.h>  // fmt::join (in fmt/format.h only before fmt 11)

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <optional>

#include "core/io/h5_util.h"
#include "core/io/run_file.h"
#include "core/io/run_file_internal.h"
#include "core/io/schema.h"
#include "core/util/errors.h"

namespace relpos {

namespace sc = schema;

namespace {

class H5RunFileReader : public RunFileReader {
 public:
  explicit H5RunFileReader(OpenedRunFile opened)
      : path_(opened.path), file_(opened.file), version_(opened.version) {}

  int64_t schema_version() const override { return version_; }

  std::string root_attribute(const std::string& name) const override {
    return attribute(sc::kRoot, name);
  }

  std::string attribute(const std::string& path, const std::string& name) const override {
    return guarded(fmt::format("attribute '{}' of '{}'", name, path), [&] {
      if (!h5::path_exists(file_, path))
        throw SchemaError(fmt::format("run file '{}' has no object '{}'", path_, path));
      std::optional<std::string> s;
      std::optional<int64_t> i;
      auto read = [&](const H5::H5Object& obj) {
        s = h5::read_string_attr(obj, name);
        if (!s) i = h5::read_int_attr(obj, name);
      };
      if (path == sc::kRoot || file_.childObjType(path) == H5O_TYPE_GROUP)
        read(file_.openGroup(path));
      else
        read(file_.openDataSet(path));
      if (s) return *s;
      if (i) return std::to_string(*i);
      throw SchemaError(fmt::format("run file '{}': '{}' has no string or integer attribute '{}'",
                                    path_, path, name));
    });
  }

  std::vector<std::string> metric_names() const override {
    return guarded("the metric names", [&] {
      if (!h5::path_exists(file_, sc::kMetrics)) return std::vector<std::string>{};
      return h5::child_names(file_.openGroup(sc::kMetrics));
    });
  }

  std::pair<std::vector<int64_t>, std::vector<double>> metric(
      const std::string& name) const override {
    const torch::Tensor steps = dataset(sc::metric_step_path(name)).value;
    const torch::Tensor values = dataset(sc::metric_value_path(name)).value;
    if (steps.dim() != 1 || values.dim() != 1)
      throw SchemaError(
          fmt::format("run file '{}': metric '{}' has steps of shape {} and values "
                      "of shape {}; expected two 1-D datasets",
                      path_, name, shape_string(steps), shape_string(values)));
    if (steps.is_floating_point() || !values.is_floating_point())
      throw SchemaError(
          fmt::format("run file '{}': metric '{}' must have integer steps and "
                      "floating-point values",
                      path_, name));
    // The writer extends `step` first: after a crash between the two, the extra step is not a
    // point.
    const int64_t n = std::min(steps.size(0), values.size(0));
    const torch::Tensor s = steps.slice(0, 0, n).to(torch::kInt64).contiguous();  // (N)
    const torch::Tensor v = values.slice(0, 0, n).to(torch::kFloat64).contiguous();  // (N)
    return {std::vector<int64_t>(s.data_ptr<int64_t>(), s.data_ptr<int64_t>() + s.numel()),
            std::vector<double>(v.data_ptr<double>(), v.data_ptr<double>() + v.numel())};
  }

  std::vector<int64_t> snapshot_steps() const override {
    std::vector<int64_t> steps;
    if (!exists(sc::kSnapshots)) return steps;
    const std::string prefix = sc::kSnapshotPrefix;
    for (const auto& name : children(sc::kSnapshots)) {
      const std::string digits = name.substr(std::min(prefix.size(), name.size()));
      if (name.compare(0, prefix.size(), prefix) != 0 || digits.empty() || digits.size() > 18 ||
          !std::all_of(digits.begin(), digits.end(),
                       [](unsigned char c) { return std::isdigit(c); }))
        throw SchemaError(
            fmt::format("run file '{}': unexpected group '{}/{}'; snapshot groups "
                        "are named {}<step>",
                        path_, sc::kSnapshots, name, prefix));
      // A snapshot gets its step attribute last: a group without it was not completed.
      if (!exists_attribute(sc::join(sc::kSnapshots, name), sc::kAttrStep)) continue;
      steps.push_back(std::stoll(digits));
    }
    std::sort(steps.begin(), steps.end());
    return steps;
  }

  bool exists(const std::string& path) const override {
    return guarded(fmt::format("'{}'", path), [&] { return h5::path_exists(file_, path); });
  }

  NamedTensor dataset(const std::string& path) const override {
    return guarded(fmt::format("dataset '{}'", path), [&] {
      if (!h5::path_exists(file_, path) || file_.childObjType(path) != H5O_TYPE_DATASET)
        throw SchemaError(fmt::format("run file '{}' has no dataset '{}'", path_, path),
                          "`relpos inspect FILE` lists what the file holds");
      const H5::DataSet ds = file_.openDataSet(path);
      NamedTensor out;
      out.name = path;
      out.value = h5::read_tensor(ds, fmt::format("run file '{}', dataset '{}'", path_, path));
      if (auto dims = h5::read_string_attr(ds, sc::kAttrDims)) out.dims = h5::split_dims(*dims);
      return out;
    });
  }

  std::vector<std::string> strings(const std::string& path) const override {
    return guarded(fmt::format("dataset '{}'", path), [&] {
      if (!h5::path_exists(file_, path) || file_.childObjType(path) != H5O_TYPE_DATASET)
        throw SchemaError(fmt::format("run file '{}' has no dataset '{}'", path_, path),
                          "`relpos inspect FILE` lists what the file holds");
      return h5::read_strings(file_.openDataSet(path),
                              fmt::format("run file '{}', dataset '{}'", path_, path));
    });
  }

  std::vector<std::string> children(const std::string& group) const override {
    return guarded(fmt::format("group '{}'", group), [&] {
      if (!h5::path_exists(file_, group) || file_.childObjType(group) != H5O_TYPE_GROUP)
        throw SchemaError(fmt::format("run file '{}' has no group '{}'", path_, group),
                          "`relpos inspect FILE` lists what the file holds");
      return h5::child_names(file_.openGroup(group));
    });
  }

 private:
  bool exists_attribute(const std::string& path, const std::string& name) const {
    return guarded(fmt::format("attribute '{}' of '{}'", name, path),
                   [&] { return h5::has_attr(file_.openGroup(path), name); });
  }

  template <class F>
  auto guarded(const std::string& what, F&& body) const -> decltype(body()) {
    try {
      return body();
    } catch (const H5::Exception& e) {
      throw SchemaError(
          fmt::format("run file '{}': cannot read {}: {}", path_, what, h5::error_detail(e)),
          "the file may be truncated or corrupt");
    }
  }

  static std::string shape_string(const torch::Tensor& t) {
    return fmt::format("[{}]", fmt::join(t.sizes(), ","));
  }

  std::string path_;
  H5::H5File file_;
  int64_t version_;
};

}  // namespace

std::unique_ptr<RunFileReader> RunFileReader::open(const std::string& path) {
  return std::make_unique<H5RunFileReader>(open_run_file_or_shadow(path));
}

}  // namespace relpos

#include "analysis/analysis_file.h"

#include <H5Cpp.h>
#include <fmt/format.h>

#include <cmath>
#include <limits>

#include "core/util/errors.h"

namespace relpos::analysis {
namespace {

const H5::StrType& string_type() {
  static const H5::StrType t(H5::PredType::C_S1, H5T_VARIABLE);
  return t;
}

void write_strings(H5::Group& g, const std::string& name, const std::vector<std::string>& v) {
  const hsize_t n = v.size();
  H5::DataSet ds = g.createDataSet(name, string_type(), H5::DataSpace(1, &n));
  std::vector<const char*> ptrs;
  for (const auto& s : v) ptrs.push_back(s.c_str());
  if (n) ds.write(ptrs.data(), string_type());
}

template <class T>
void write_numbers(H5::Group& g, const std::string& name, const std::vector<T>& v,
                   const std::vector<hsize_t>& shape = {}) {
  const auto& type =
      std::is_same_v<T, double> ? H5::PredType::NATIVE_DOUBLE : H5::PredType::NATIVE_INT64;
  std::vector<hsize_t> dims = shape.empty() ? std::vector<hsize_t>{v.size()} : shape;
  H5::DataSet ds =
      g.createDataSet(name, type, H5::DataSpace(static_cast<int>(dims.size()), dims.data()));
  if (!v.empty()) ds.write(v.data(), type);
}

void write_attr(H5::H5Object& o, const std::string& name, const std::string& value) {
  H5::Attribute a = o.createAttribute(name, string_type(), H5::DataSpace(H5S_SCALAR));
  a.write(string_type(), value);
}

}  // namespace

struct AnalysisFileWriter::Impl {
  std::string path;
  H5::H5File file;
  std::vector<MatrixRow> rows;  // profiles dropped once written
};

AnalysisFileWriter::AnalysisFileWriter(const std::string& path,
                                       const std::map<std::string, std::string>& attrs)
    : impl_(std::make_unique<Impl>()) {
  impl_->path = path;
  try {
    H5::Exception::dontPrint();
    impl_->file = H5::H5File(path, H5F_ACC_TRUNC);
    H5::Group root = impl_->file.openGroup("/");
    write_attr(root, "format", "relpos-analysis");
    write_attr(root, "version", "1");
    for (const auto& [k, v] : attrs) write_attr(root, k, v);
    impl_->file.createGroup("/profiles");
  } catch (const H5::Exception& e) {
    throw Error(fmt::format("cannot create {}: {}", path, e.getDetailMsg()));
  }
}

AnalysisFileWriter::~AnalysisFileWriter() = default;

void AnalysisFileWriter::add_snapshot(int64_t step, const std::vector<MatrixRow>& rows) {
  try {
    int64_t lo = 0, hi = 0;
    for (const auto& r : rows)
      if (!r.metrics.profile.offsets.empty()) {
        lo = std::min(lo, r.metrics.profile.offsets.front());
        hi = std::max(hi, r.metrics.profile.offsets.back());
      }
    const int64_t width = hi - lo + 1;
    std::vector<int64_t> index, offsets;
    std::vector<double> values(rows.size() * width, std::numeric_limits<double>::quiet_NaN());
    for (int64_t r = lo; r <= hi; ++r) offsets.push_back(r);
    for (size_t k = 0; k < rows.size(); ++k) {
      index.push_back(static_cast<int64_t>(impl_->rows.size() + k));
      const Profile& g = rows[k].metrics.profile;
      for (size_t m = 0; m < g.offsets.size(); ++m)
        values[k * width + (g.offsets[m] - lo)] = g.values[m];
    }
    H5::Group g = impl_->file.createGroup(fmt::format("/profiles/step_{}", step));
    write_numbers(g, "row", index);
    write_numbers(g, "offsets", offsets);
    write_numbers(g, "values", values, {rows.size(), static_cast<hsize_t>(width)});
    impl_->file.flush(H5F_SCOPE_GLOBAL);
  } catch (const H5::Exception& e) {
    throw Error(fmt::format("cannot write profiles of step {} to {}: {}", step, impl_->path,
                            e.getDetailMsg()));
  }
  for (const auto& r : rows) {
    impl_->rows.push_back(r);
    impl_->rows.back().metrics.profile = {};
  }
}

void AnalysisFileWriter::finish(const std::vector<int64_t>& steps,
                                const std::vector<double>& metric,
                                const std::map<std::string, std::vector<double>>& summary,
                                const std::vector<Correlation>& correlations) {
  try {
    H5::Group m = impl_->file.createGroup("/matrices");
    std::vector<int64_t> step, layer, head;
    std::vector<std::string> source, variant, region;
    std::vector<double> inv, sym, mono_l, mono_r;
    for (const auto& r : impl_->rows) {
      step.push_back(r.step);
      source.push_back(r.source);
      variant.push_back(r.variant);
      layer.push_back(r.layer);
      head.push_back(r.head);
      region.push_back(r.region == Region::lower ? "lower" : "full");
      inv.push_back(r.metrics.invariance);
      sym.push_back(r.metrics.symmetry);
      mono_l.push_back(r.metrics.monotonicity_left);
      mono_r.push_back(r.metrics.monotonicity_right);
    }
    write_numbers(m, "step", step);
    write_strings(m, "source", source);
    write_strings(m, "variant", variant);
    write_numbers(m, "layer", layer);
    write_numbers(m, "head", head);
    write_strings(m, "region", region);
    write_numbers(m, "invariance", inv);
    write_numbers(m, "symmetry", sym);
    write_numbers(m, "monotonicity_left", mono_l);
    write_numbers(m, "monotonicity_right", mono_r);

    H5::Group s = impl_->file.createGroup("/summary");
    write_numbers(s, "step", steps);
    write_numbers(s, "metric", metric);
    for (const auto& [q, v] : summary) write_numbers(s, q, v);

    H5::Group c = impl_->file.createGroup("/correlation");
    std::vector<std::string> q;
    std::vector<int64_t> n;
    std::vector<double> p, sp;
    for (const auto& x : correlations) {
      q.push_back(x.quantity);
      n.push_back(x.n);
      p.push_back(x.pearson);
      sp.push_back(x.spearman);
    }
    write_strings(c, "quantity", q);
    write_numbers(c, "n", n);
    write_numbers(c, "pearson", p);
    write_numbers(c, "spearman", sp);
    impl_->file.close();
  } catch (const H5::Exception& e) {
    throw Error(fmt::format("cannot write {}: {}", impl_->path, e.getDetailMsg()));
  }
}

}  // namespace relpos::analysis

// One line style per variant in every figure of a report (DESIGN §6, "One palette"). The style
// of a variant is its place in the report's whole list of variants, sorted by name, so that a
// figure showing only some of the variants (an extrapolation figure without the runs that have
// no length evaluation, a P·Pᵀ panel without the variants that have no absolute table) draws
// each in the colour it has everywhere else in the report. Style n is colour n mod 10 of
// gnuplot.h's line colours, marker n mod 7, dash pattern n / 10 (Curve::line).
#pragma once

#include <string>
#include <vector>

namespace relpos::analysis {

class VariantPalette {
 public:
  VariantPalette() = default;
  // `names`: every variant (group label) of the report, in any order, repeats allowed.
  explicit VariantPalette(std::vector<std::string> names);

  // The style number of `name`: its index in the sorted list. A name that is not in the list
  // gets a number after the list's, from a hash of the name, the same in every figure.
  int line(const std::string& name) const;
  // The line colour of `name` ("#1f77b4"), as gnuplot draws it.
  std::string colour(const std::string& name) const;
  const std::vector<std::string>& names() const { return names_; }
  bool empty() const { return names_.empty(); }

 private:
  std::vector<std::string> names_;  // sorted, unique
};

}  // namespace relpos::analysis

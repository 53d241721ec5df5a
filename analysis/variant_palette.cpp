#include "analysis/variant_palette.h"

#include <algorithm>
#include <cstdint>

#include "analysis/gnuplot.h"

namespace relpos::analysis {

VariantPalette::VariantPalette(std::vector<std::string> names) : names_(std::move(names)) {
  std::sort(names_.begin(), names_.end());
  names_.erase(std::unique(names_.begin(), names_.end()), names_.end());
}

int VariantPalette::line(const std::string& name) const {
  const auto it = std::lower_bound(names_.begin(), names_.end(), name);
  if (it != names_.end() && *it == name) return static_cast<int>(it - names_.begin());
  // FNV-1a: stable across runs and platforms (std::hash is not).
  uint32_t h = 2166136261u;
  for (unsigned char c : name) h = (h ^ c) * 16777619u;
  return static_cast<int>(names_.size() + h % 70);
}

std::string VariantPalette::colour(const std::string& name) const {
  return line_colour(line(name));
}

}  // namespace relpos::analysis

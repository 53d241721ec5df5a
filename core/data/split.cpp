#include "core/data/split.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>

#include "core/data/rng.h"
#include "core/util/errors.h"

namespace relpos {

namespace {

int64_t share(int64_t size, double fraction) {
  int64_t k = static_cast<int64_t>(std::llround(static_cast<double>(size) * fraction));
  if (fraction > 0 && k == 0 && size >= 3) k = 1;
  return k;
}

}  // namespace

DocumentSplit make_document_split(int64_t n, const std::vector<int64_t>* labels,
                                  double valid_fraction, double test_fraction, int64_t seed,
                                  const std::string& what) {
  std::map<int64_t, std::vector<int64_t>> groups;  // ordered by class: deterministic
  for (int64_t i = 0; i < n; ++i) groups[labels ? (*labels)[i] : 0].push_back(i);
  DocumentSplit s;
  for (auto& [label, ids] : groups) {
    Rng rng(derive_seed({static_cast<uint64_t>(seed), 0x5b1175ULL, static_cast<uint64_t>(label)}));
    rng.shuffle(ids);
    const int64_t size = static_cast<int64_t>(ids.size());
    const int64_t n_test = share(size, test_fraction);
    const int64_t n_valid = std::min(share(size, valid_fraction), size - n_test);
    s.test.insert(s.test.end(), ids.begin(), ids.begin() + n_test);
    s.valid.insert(s.valid.end(), ids.begin() + n_test, ids.begin() + n_test + n_valid);
    s.train.insert(s.train.end(), ids.begin() + n_test + n_valid, ids.end());
  }
  for (auto* v : {&s.train, &s.valid, &s.test}) std::sort(v->begin(), v->end());
  if (s.train.empty())
    throw DataError(fmt::format("{}: {} documents leave nothing for training after the split "
                                "(valid_fraction {}, test_fraction {})",
                                what, n, valid_fraction, test_fraction),
                    "use a larger corpus or lower data.valid_fraction / data.test_fraction");
  return s;
}

DocumentSplit split_corpus(const std::vector<Document>& docs, const std::vector<int64_t>* labels,
                           const DataConfig& d, const std::string& what) {
  std::vector<int64_t> own;  // documents split by seed, as indices into docs
  std::vector<int64_t> own_labels;
  DocumentSplit fixed;
  for (int64_t i = 0; i < static_cast<int64_t>(docs.size()); ++i) {
    switch (docs[i].fixed_split) {
      case 1:
        fixed.valid.push_back(i);
        break;
      case 2:
        fixed.test.push_back(i);
        break;
      default:
        own.push_back(i);
        if (labels) own_labels.push_back((*labels)[i]);
    }
  }
  const bool own_valid = d.valid_corpus.empty(), own_test = d.test_corpus.empty();
  const DocumentSplit s = make_document_split(
      static_cast<int64_t>(own.size()), labels ? &own_labels : nullptr,
      own_valid ? d.valid_fraction : 0.0, own_test ? d.test_fraction : 0.0, d.split_seed, what);
  auto map_into = [&](const std::vector<int64_t>& from, std::vector<int64_t>& to) {
    for (int64_t k : from) to.push_back(own[k]);
    std::sort(to.begin(), to.end());
  };
  map_into(s.train, fixed.train);
  map_into(s.valid, fixed.valid);
  map_into(s.test, fixed.test);
  return fixed;
}

}  // namespace relpos

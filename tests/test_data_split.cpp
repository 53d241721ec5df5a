// Document splits: deterministic in the seed, disjoint, covering, stratified by class.
#include <doctest/doctest.h>

#include <algorithm>
#include <set>

#include "core/data/split.h"
#include "data_helpers.h"

using namespace relpos;

namespace {

void check_partition(const DocumentSplit& s, int64_t n) {
  std::set<int64_t> all;
  for (const auto* v : {&s.train, &s.valid, &s.test}) {
    CHECK(std::is_sorted(v->begin(), v->end()));
    for (int64_t id : *v) {
      CHECK(id >= 0);
      CHECK(id < n);
      CHECK(all.insert(id).second);  // no document in two splits
    }
  }
  CHECK(static_cast<int64_t>(all.size()) == n);
}

}  // namespace

TEST_CASE("split: sizes, disjointness, determinism in the seed") {
  DocumentSplit a = make_document_split(100, nullptr, 0.1, 0.2, 7, "t");
  check_partition(a, 100);
  CHECK(a.test.size() == 20);
  CHECK(a.valid.size() == 10);
  CHECK(a.train.size() == 70);
  DocumentSplit again = make_document_split(100, nullptr, 0.1, 0.2, 7, "t");
  CHECK(again.train == a.train);
  CHECK(again.valid == a.valid);
  CHECK(again.test == a.test);
  DocumentSplit other = make_document_split(100, nullptr, 0.1, 0.2, 8, "t");
  CHECK(other.test != a.test);
  // Not simply the first or last documents.
  CHECK(a.test != std::vector<int64_t>{80, 81, 82, 83, 84, 85, 86, 87, 88, 89,
                                       90, 91, 92, 93, 94, 95, 96, 97, 98, 99});
  CHECK(a.test.front() < 80);
}

TEST_CASE("split: stratified by class") {
  std::vector<int64_t> labels;
  for (int i = 0; i < 100; ++i) labels.push_back(i % 5 < 3 ? 0 : 1);  // 60 zeros, 40 ones
  DocumentSplit s = make_document_split(100, &labels, 0.1, 0.1, 3, "t");
  check_partition(s, 100);
  auto ones = [&](const std::vector<int64_t>& ids) {
    return std::count_if(ids.begin(), ids.end(), [&](int64_t i) { return labels[i] == 1; });
  };
  CHECK(s.test.size() == 10);
  CHECK(ones(s.test) == 4);
  CHECK(s.valid.size() == 10);
  CHECK(ones(s.valid) == 4);
  CHECK(ones(s.train) == 32);
}

TEST_CASE("split: small corpora") {
  DocumentSplit two = make_document_split(2, nullptr, 0.05, 0.05, 1, "t");
  CHECK(two.train.size() == 2);
  DocumentSplit three = make_document_split(3, nullptr, 0.05, 0.05, 1, "t");
  CHECK(three.valid.size() == 1);
  CHECK(three.test.size() == 1);
  CHECK(three.train.size() == 1);
  std::string e =
      relpos::test::data_error([] { make_document_split(2, nullptr, 0.5, 0.5, 1, "corpus x"); });
  CHECK(e.find("corpus x: 2 documents leave nothing for training") != std::string::npos);
}

// Deterministic train/valid/test split by document.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/data/corpus.h"

namespace relpos {

struct DocumentSplit {
  std::vector<int64_t> train, valid, test;  // document ids, ascending (corpus order)
};

// Splits documents 0..n-1. Each group of documents (one group, or one per class when `labels`
// is given: a stratified split) is shuffled with a generator seeded by `seed`; the first
// round(size * test_fraction) go to test, the next round(size * valid_fraction) to valid, the
// rest to train. A non-zero fraction of a group of 3 or more documents gets at least one.
// Throws DataError when nothing is left for training. `what` names the corpus in the message.
DocumentSplit make_document_split(int64_t n, const std::vector<int64_t>* labels,
                                  double valid_fraction, double test_fraction, int64_t seed,
                                  const std::string& what);

// The split of a corpus's documents. Documents with a fixed_split (read from data.valid_corpus or
// data.test_corpus) go to that split; the others are split by make_document_split with
// data.valid_fraction / data.test_fraction, except that a split with its own file takes no share
// of them (data.valid_corpus set: every other document not drawn for test trains). `labels`, when
// given, has one class per document and stratifies the split.
DocumentSplit split_corpus(const std::vector<Document>& docs, const std::vector<int64_t>* labels,
                           const DataConfig& d, const std::string& what);

}  // namespace relpos

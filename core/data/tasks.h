// The task data implementations, which the task registry's entries build (core/task/).
#pragma once

#include <memory>
#include <string>

#include "core/data/corpus.h"
#include "core/data/task.h"

namespace relpos {

// Language modelling over the documents of a text (or labelled) corpus: `masked` rows for a
// masked LM ([CLS] first, task.mask_prob of the text chosen), else next-token rows.
std::unique_ptr<TaskData> make_lm_task(const Config& cfg, Corpus corpus, bool masked);
// Sentence (pair) classification over a labelled corpus.
std::unique_ptr<TaskData> make_classify_task(const Config& cfg, Corpus corpus);
// Extractive QA over a span-QA corpus.
std::unique_ptr<TaskData> make_span_qa_task(const Config& cfg, Corpus corpus);
// copy, reverse, sort, shift, recall, marker_distance.
std::unique_ptr<TaskData> make_synthetic_task(const Config& cfg);

// Splits sizes for describe(): "train 211 / valid 11 / test 11".
std::string split_sizes(size_t train, size_t valid, size_t test);

}  // namespace relpos

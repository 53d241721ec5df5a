// Synthetic sequence tasks for length generalization (docs/data.md). Symbols are the ids
// 5 .. 5+V-1 (V = task.synthetic_vocab), written s0 .. s{V-1}. The task length n is:
//   copy      input n symbols, output the same n symbols
//   reverse   output the input reversed
//   sort      output the input sorted ascending
//   shift     output the input rotated left by k = task.shift: y_i = x_{(i+k) mod n}
//   recall    input n key-value pairs k1 v1 ... kn vn (distinct keys); output m queries each
//             followed by its value, q1 a1 ... qm am, where the queries q are distinct keys in
//             random order and are given (only the values a are predicted and scored).
//             m = task.recall_queries capped at n (0 = every key: multi-query associative recall,
//             Arora et al. 2023); needs V >= n
//   marker_distance  input n symbols of which two are the marker [M], at distance d;
//             output the number token #d. d is drawn from 1 .. min(n-1, max_len-1), so test
//             sequences are longer but ask for distances seen in training.
// Sequence layout (one row): encoder (bidirectional) input [SEP] [MASK]*m with the targets at the
// m [MASK] positions (the whole output predicted at once); decoder (causal) input [SEP]
// output[0..m-2] with target output[j] at the position before it (teacher forcing). Targets are
// -100 everywhere else. Given output tokens (recall's queries) have no target, and the encoder
// shows them in place of [MASK].
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/data/rng.h"
#include "core/data/task.h"

namespace relpos {

struct SyntheticSpec {
  std::string type;      // copy | reverse | sort | shift | recall | marker_distance
  int64_t symbols = 16;  // V
  int64_t shift = 3;     // shift: k
  int64_t max_len = 16;  // marker_distance: distances < max_len, number tokens #0..#max_len
  int64_t recall_queries = 1;  // recall: queries per example, capped at n (0 = every key)
};

struct SyntheticExample {
  std::vector<int64_t> input, output;  // token ids
  std::vector<bool> given;  // per output token: part of the question, not predicted (empty = none)
};

SyntheticExample make_synthetic_example(const SyntheticSpec& spec, int64_t length, Rng& rng);

// Symbols, then for marker_distance the marker and the number tokens.
int64_t synthetic_vocab_size(const SyntheticSpec& spec);
int64_t synthetic_symbol(int64_t s);                             // id of symbol s
int64_t synthetic_marker(const SyntheticSpec& spec);             // id of [M]
int64_t synthetic_number(const SyntheticSpec& spec, int64_t d);  // id of #d

// Tokens and targets of one row (see the layout above).
void synthetic_layout(const SyntheticExample& ex, bool causal, std::vector<int64_t>& tokens,
                      std::vector<int64_t>& targets);

// A tokenizer over the synthetic vocabulary: text is the space-separated token names.
std::unique_ptr<Tokenizer> make_synthetic_tokenizer(const SyntheticSpec& spec);

// The default test lengths: max_len, 2 max_len, 4 max_len, ... and test_max_len.
std::vector<int64_t> synthetic_test_lengths(int64_t max_len, int64_t test_max_len);

}  // namespace relpos

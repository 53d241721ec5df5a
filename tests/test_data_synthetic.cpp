// Synthetic tasks: every target checked by logic written here from the task's definition.
#include <doctest/doctest.h>

#include <algorithm>
#include <map>

#include "core/data/synthetic_sequences.h"
#include "core/data/task.h"
#include "core/task/task_registry.h"
#include "data_helpers.h"

using namespace relpos;

namespace {

const int64_t kSep = 3, kMask = 4, kPad = 0;

Config synthetic_config(const std::string& type, bool causal) {
  Config c;
  c.task.type = type;
  c.model.mode = causal ? "decoder" : "encoder";
  c.task.min_len = 3;
  c.task.max_len = 12;
  c.task.test_max_len = 48;
  c.task.synthetic_vocab = type == "recall" ? 48 : 10;
  c.task.shift = 2;
  c.task.eval_examples = 20;
  return c;
}

// The expected output of `input` under the task, from its definition. For recall, `queries` are
// the tokens at the query slots of the row (only the first m are used).
std::vector<int64_t> expected_output(const Config& c, const std::vector<int64_t>& in,
                                     const std::vector<int64_t>& queries) {
  const int64_t n = static_cast<int64_t>(in.size());
  const std::string& type = c.task.type;
  std::vector<int64_t> out;
  if (type == "copy") return in;
  if (type == "reverse") return {in.rbegin(), in.rend()};
  if (type == "sort") {
    out = in;
    std::sort(out.begin(), out.end());
    return out;
  }
  if (type == "shift") {
    for (int64_t i = 0; i < n; ++i) out.push_back(in[(i + c.task.shift) % n]);
    return out;
  }
  if (type == "recall") {
    // The queries are read from the row (after [SEP], every other token); each is followed by
    // the value paired with it.
    REQUIRE(n % 2 == 0);
    std::map<int64_t, int64_t> kv;
    for (int64_t i = 0; i + 1 < n; i += 2) {
      CHECK(kv.count(in[i]) == 0);  // distinct keys
      kv[in[i]] = in[i + 1];
    }
    const int64_t pairs = n / 2, q = c.task.recall_queries;
    const int64_t m = q == 0 ? pairs : std::min(q, pairs);
    REQUIRE(static_cast<int64_t>(queries.size()) >= m);
    std::map<int64_t, int> asked;
    for (int64_t j = 0; j < m; ++j) {
      REQUIRE(kv.count(queries[j]) == 1);
      CHECK(asked[queries[j]]++ == 0);  // distinct queries
      out.push_back(queries[j]);
      out.push_back(kv[queries[j]]);
    }
    return out;
  }
  // marker_distance
  const int64_t marker = 5 + c.task.synthetic_vocab;
  std::vector<int64_t> at;
  for (int64_t i = 0; i < n; ++i)
    if (in[i] == marker) at.push_back(i);
  REQUIRE(at.size() == 2);
  const int64_t d = at[1] - at[0];
  CHECK(d >= 1);
  CHECK(d <= c.task.max_len - 1);
  return {marker + 1 + d};
}

// Checks every row of `b` against the definition; returns the task lengths seen.
std::vector<int64_t> check_batch(const Config& c, const Batch& b) {
  const bool causal = c.model.mode == "decoder";
  const int64_t B = b.tokens.size(0), T = b.tokens.size(1);
  REQUIRE(b.targets.sizes() == b.tokens.sizes());
  REQUIRE(static_cast<int64_t>(b.lengths.size()) == B);
  auto tok = b.tokens.accessor<int64_t, 2>();
  auto tgt = b.targets.accessor<int64_t, 2>();
  std::vector<int64_t> lengths;
  for (int64_t r = 0; r < B; ++r) {
    CAPTURE(r);
    int64_t sep = 0;
    while (tok[r][sep] != kSep) ++sep;
    const std::vector<int64_t> in(&tok[r][0], &tok[r][0] + sep);
    for (int64_t x : in) CHECK(x >= 5);
    const bool recall = c.task.type == "recall";
    std::vector<int64_t> queries;  // recall: the tokens at sep+1, sep+3, ...
    for (int64_t t = sep + 1; recall && t < T; t += 2) queries.push_back(tok[r][t]);
    const std::vector<int64_t> want = expected_output(c, in, queries);
    const int64_t m = static_cast<int64_t>(want.size());
    const int64_t n = recall ? sep / 2 : sep;
    CHECK(n == b.lengths[r]);
    lengths.push_back(n);
    // Targets: exactly the output positions that are not given (recall's queries, at even j).
    const int64_t first = causal ? sep : sep + 1;
    for (int64_t t = 0; t < T; ++t) {
      if (t >= first && t < first + m) {
        const int64_t j = t - first;
        const bool given = recall && j % 2 == 0;
        CHECK(tgt[r][t] == (given ? -100 : want[j]));
        if (causal && t > sep) CHECK(tok[r][t] == want[j - 1]);  // teacher forcing
        if (!causal) CHECK(tok[r][t] == (given ? want[j] : kMask));
      } else {
        CHECK(tgt[r][t] == -100);
      }
    }
    const int64_t used = causal ? sep + m : sep + 1 + m;
    for (int64_t t = used; t < T; ++t) CHECK(tok[r][t] == kPad);
    if (b.key_mask.defined())
      for (int64_t t = 0; t < T; ++t) CHECK(b.key_mask[r][t].item<bool>() == (t < used));
    else
      CHECK(used == T);
  }
  return lengths;
}

}  // namespace

TEST_CASE("synthetic tasks: targets follow each task's definition (encoder and decoder)") {
  // recall three times: one query, three queries (capped at n for the shortest rows), every key.
  for (auto [type, queries] : std::vector<std::pair<std::string, int64_t>>{
           {"copy", 1}, {"reverse", 1}, {"sort", 1}, {"shift", 1}, {"recall", 1}, {"recall", 5},
           {"recall", 0}, {"marker_distance", 1}}) {
    for (bool causal : {false, true}) {
      CAPTURE(type);
      CAPTURE(queries);
      CAPTURE(causal);
      Config c = synthetic_config(type, causal);
      c.task.recall_queries = queries;
      auto data = make_task_data(c);
      for (int64_t index : {0, 1, 17}) {
        for (int64_t n : check_batch(c, data->train_batch(index, 16))) {
          CHECK(n >= c.task.min_len);
          CHECK(n <= c.task.max_len);
        }
      }
      // Test lengths: max_len doubling to test_max_len; every row of a batch has one length.
      const auto eval = data->eval_batches(Split::Test, 8, 0);
      std::vector<int64_t> seen;
      for (const Batch& b : eval) {
        const auto ls = check_batch(c, b);
        CHECK(std::all_of(ls.begin(), ls.end(), [&](int64_t l) { return l == ls[0]; }));
        if (seen.empty() || seen.back() != ls[0]) seen.push_back(ls[0]);
      }
      CHECK(seen == std::vector<int64_t>{12, 24, 48});
      CHECK(eval.size() == 3 * 3);  // ceil(20 / 8) batches per length
      const auto at = data->eval_batches(Split::Valid, 8, 1, 30);
      REQUIRE(at.size() == 1);
      CHECK(check_batch(c, at[0]) == std::vector<int64_t>(8, 30));
    }
  }
}

TEST_CASE("synthetic tasks: deterministic in (seed, index), evaluation fixed by the data seed") {
  Config c = synthetic_config("reverse", false);
  auto a = make_task_data(c);
  auto b = make_task_data(c);
  CHECK(a->train_batch(5, 8).tokens.equal(b->train_batch(5, 8).tokens));
  CHECK(!a->train_batch(5, 8).tokens.equal(a->train_batch(6, 8).tokens));
  c.seed = 2;
  auto other = make_task_data(c);
  CHECK(!a->train_batch(5, 8).tokens.equal(other->train_batch(5, 8).tokens));
  const auto e1 = a->eval_batches(Split::Test, 4, 2);
  const auto e2 = other->eval_batches(Split::Test, 4, 2);  // another run seed, same data seed
  REQUIRE(e1.size() == e2.size());
  for (size_t i = 0; i < e1.size(); ++i) CHECK(e1[i].tokens.equal(e2[i].tokens));
  const auto v = a->eval_batches(Split::Valid, 4, 2);
  CHECK(!v[0].tokens.equal(e1[0].tokens));
  // An evaluation example does not depend on the batch size.
  const auto big = a->eval_batches(Split::Test, 8, 1);
  CHECK(big[0].tokens.narrow(0, 0, 4).equal(e1[0].tokens));
}

TEST_CASE("synthetic vocabulary and tokenizer") {
  SyntheticSpec spec{"marker_distance", 16, 3, 16};
  CHECK(synthetic_vocab_size(spec) == 5 + 16 + 1 + 17);
  auto tok = make_synthetic_tokenizer(spec);
  CHECK(tok->encode("s0 s15 [M] #3 [SEP] bogus") ==
        std::vector<int64_t>{5, 20, 21, 21 + 1 + 3, 3, 1});
  CHECK(tok->decode({5, 21, 25, 0}) == "s0 [M] #3");
  Config c = synthetic_config("copy", false);
  CHECK(make_task_data(c)->vocab_size() == 5 + 10);
}

#include "core/data/synthetic_sequences.h"

#include <fmt/format.h>

#include <algorithm>

#include "core/data/task_util.h"
#include "core/data/tokenizer.h"
#include "core/util/errors.h"

namespace relpos {

int64_t synthetic_symbol(int64_t s) { return kNumSpecial + s; }
int64_t synthetic_marker(const SyntheticSpec& spec) { return kNumSpecial + spec.symbols; }
int64_t synthetic_number(const SyntheticSpec& spec, int64_t d) {
  return kNumSpecial + spec.symbols + 1 + d;
}
int64_t synthetic_vocab_size(const SyntheticSpec& spec) {
  return spec.type == "marker_distance" ? synthetic_number(spec, spec.max_len) + 1
                                        : kNumSpecial + spec.symbols;
}

SyntheticExample make_synthetic_example(const SyntheticSpec& spec, int64_t n, Rng& rng) {
  SyntheticExample ex;
  const int64_t V = spec.symbols;
  auto random_symbols = [&](int64_t k) {
    std::vector<int64_t> v(k);
    for (auto& x : v) x = synthetic_symbol(rng.below(V));
    return v;
  };
  if (spec.type == "copy") {
    ex.input = random_symbols(n);
    ex.output = ex.input;
  } else if (spec.type == "reverse") {
    ex.input = random_symbols(n);
    ex.output.assign(ex.input.rbegin(), ex.input.rend());
  } else if (spec.type == "sort") {
    ex.input = random_symbols(n);
    ex.output = ex.input;
    std::sort(ex.output.begin(), ex.output.end());
  } else if (spec.type == "shift") {
    ex.input = random_symbols(n);
    ex.output.resize(n);
    for (int64_t i = 0; i < n; ++i) ex.output[i] = ex.input[(i + spec.shift) % n];
  } else if (spec.type == "recall") {
    if (n > V)
      throw DataError(
          fmt::format("recall: {} key-value pairs need {} distinct keys, but "
                      "task.synthetic_vocab = {}",
                      n, n, V));
    std::vector<int64_t> keys(V);
    for (int64_t s = 0; s < V; ++s) keys[s] = synthetic_symbol(s);
    rng.shuffle(keys);
    std::vector<int64_t> values = random_symbols(n);
    for (int64_t i = 0; i < n; ++i) {
      ex.input.push_back(keys[i]);
      ex.input.push_back(values[i]);
    }
    // Distinct queries in random order: the first m of a shuffle of the pair indices.
    std::vector<int64_t> order(n);
    for (int64_t i = 0; i < n; ++i) order[i] = i;
    rng.shuffle(order);
    const int64_t m = spec.recall_queries == 0 ? n : std::min(spec.recall_queries, n);
    for (int64_t j = 0; j < m; ++j) {
      ex.output.push_back(keys[order[j]]);
      ex.given.push_back(true);
      ex.output.push_back(values[order[j]]);
      ex.given.push_back(false);
    }
  } else if (spec.type == "marker_distance") {
    if (n < 2) throw DataError("marker_distance: length " + std::to_string(n) + " (expected >= 2)");
    ex.input = random_symbols(n);
    const int64_t d = rng.between(1, std::max<int64_t>(1, std::min(n - 1, spec.max_len - 1)));
    const int64_t i = rng.below(n - d);
    ex.input[i] = ex.input[i + d] = synthetic_marker(spec);
    ex.output = {synthetic_number(spec, d)};
  } else {
    throw DataError("unknown synthetic task '" + spec.type + "'");
  }
  return ex;
}

void synthetic_layout(const SyntheticExample& ex, bool causal, std::vector<int64_t>& tokens,
                      std::vector<int64_t>& targets) {
  const SpecialTokens sp;
  const size_t n = ex.input.size(), m = ex.output.size();
  auto given = [&](size_t j) { return j < ex.given.size() && ex.given[j]; };
  tokens = ex.input;
  tokens.push_back(sp.sep);
  if (causal) {
    tokens.insert(tokens.end(), ex.output.begin(), ex.output.end() - 1);
    targets.assign(tokens.size(), kIgnoreIndex);
    for (size_t j = 0; j < m; ++j)
      if (!given(j)) targets[n + j] = ex.output[j];
  } else {
    for (size_t j = 0; j < m; ++j) tokens.push_back(given(j) ? ex.output[j] : sp.mask);
    targets.assign(tokens.size(), kIgnoreIndex);
    for (size_t j = 0; j < m; ++j)
      if (!given(j)) targets[n + 1 + j] = ex.output[j];
  }
}

std::vector<int64_t> synthetic_test_lengths(int64_t max_len, int64_t test_max_len) {
  std::vector<int64_t> out;
  for (int64_t L = max_len; L < test_max_len; L *= 2) out.push_back(L);
  out.push_back(test_max_len);
  return out;
}

namespace {

class SyntheticTokenizer : public Tokenizer {
 public:
  explicit SyntheticTokenizer(const SyntheticSpec& spec) : spec_(spec) {
    for (int64_t id = 0; id < kNumSpecial; ++id) names_.push_back(special_token_name(id));
    for (int64_t s = 0; s < spec.symbols; ++s) names_.push_back(fmt::format("s{}", s));
    if (spec.type == "marker_distance") {
      names_.push_back("[M]");
      for (int64_t d = 0; d <= spec.max_len; ++d) names_.push_back(fmt::format("#{}", d));
    }
  }
  std::string name() const override { return "synthetic"; }
  int64_t vocab_size() const override { return static_cast<int64_t>(names_.size()); }
  std::vector<int64_t> encode_with_offsets(
      const std::string& text, std::vector<std::pair<int64_t, int64_t>>* offsets) const override {
    std::vector<int64_t> ids;
    offsets->clear();
    size_t pos = 0;
    while (pos < text.size()) {
      while (pos < text.size() && text[pos] == ' ') ++pos;
      if (pos >= text.size()) break;
      size_t end = text.find(' ', pos);
      if (end == std::string::npos) end = text.size();
      const std::string word = text.substr(pos, end - pos);
      const auto it = std::find(names_.begin(), names_.end(), word);
      ids.push_back(it == names_.end() ? special_.unk : it - names_.begin());
      offsets->push_back({static_cast<int64_t>(pos), static_cast<int64_t>(end)});
      pos = end;
    }
    return ids;
  }
  std::string decode(const std::vector<int64_t>& ids) const override {
    std::string out;
    for (int64_t id : ids) {
      if (id == special_.pad || id < 0 || id >= vocab_size()) continue;
      if (!out.empty()) out += ' ';
      out += names_[id];
    }
    return out;
  }

 private:
  SyntheticSpec spec_;
  std::vector<std::string> names_;
};

}  // namespace

std::unique_ptr<Tokenizer> make_synthetic_tokenizer(const SyntheticSpec& spec) {
  return std::make_unique<SyntheticTokenizer>(spec);
}

}  // namespace relpos

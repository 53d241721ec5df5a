// WordPiece vocabulary training (wordpiece_trainer.h) and the cached trained tokenizer.
#include "core/data/wordpiece_trainer.h"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <unordered_map>

#include "core/data/tokenizer.h"
#include "core/util/errors.h"
#include "core/util/text_util.h"

namespace relpos {

namespace {

constexpr size_t kWordPieceMaxChars = 100;  // longer words are [UNK] in the tokenizer

using PairKey = uint64_t;
PairKey pair_key(int32_t a, int32_t b) {
  return (static_cast<uint64_t>(static_cast<uint32_t>(a)) << 32) | static_cast<uint32_t>(b);
}
int32_t pair_first(PairKey k) { return static_cast<int32_t>(k >> 32); }
int32_t pair_second(PairKey k) { return static_cast<int32_t>(k & 0xffffffffULL); }

// The words under training: symbol ids, the counts of adjacent pairs (each word weighted by its
// count), and which words hold each pair.
class MergeState {
 public:
  int32_t intern(const std::string& s) {
    auto [it, added] = ids_.emplace(s, static_cast<int32_t>(symbols_.size()));
    if (added) symbols_.push_back(s);
    return it->second;
  }
  const std::string& symbol(int32_t id) const { return symbols_[static_cast<size_t>(id)]; }

  void add_word(std::vector<int32_t> s, int64_t count) {
    words_.push_back({std::move(s), count});
    count_word(words_.size() - 1, +1);
  }

  // The most frequent pair, the merged text first in byte order among equals; false when none
  // occurs min_frequency times.
  bool best_pair(int64_t min_frequency, PairKey& best) const {
    bool found = false;
    int64_t bc = 0;
    for (const auto& [k, c] : pair_count_) {
      if (c < min_frequency) continue;
      if (!found || c > bc || (c == bc && merged(k) < merged(best))) {
        found = true;
        best = k;
        bc = c;
      }
    }
    return found;
  }

  std::string merged(PairKey k) const {
    return symbol(pair_first(k)) + symbol(pair_second(k)).substr(2);  // drop b's "##"
  }

  // Replaces every occurrence of the pair (left to right in each word) with `to`.
  void merge(PairKey k, int32_t to) {
    const int32_t a = pair_first(k), b = pair_second(k);
    std::vector<size_t> holders = where_[k];
    std::sort(holders.begin(), holders.end());
    holders.erase(std::unique(holders.begin(), holders.end()), holders.end());
    for (size_t w : holders) {
      count_word(w, -1);
      std::vector<int32_t>& s = words_[w].symbols;
      std::vector<int32_t> out;
      for (size_t j = 0; j < s.size(); ++j) {
        if (j + 1 < s.size() && s[j] == a && s[j + 1] == b) {
          out.push_back(to);
          ++j;
        } else {
          out.push_back(s[j]);
        }
      }
      s = std::move(out);
      count_word(w, +1);
    }
    where_.erase(k);
    pair_count_.erase(k);
  }

 private:
  struct Word {
    std::vector<int32_t> symbols;
    int64_t count;
  };

  void count_word(size_t w, int sign) {
    const Word& word = words_[w];
    const int64_t c = sign * word.count;
    for (size_t j = 0; j + 1 < word.symbols.size(); ++j) {
      const PairKey k = pair_key(word.symbols[j], word.symbols[j + 1]);
      auto it = pair_count_.emplace(k, 0).first;
      it->second += c;
      if (it->second == 0) pair_count_.erase(it);
      if (sign > 0) where_[k].push_back(w);
    }
  }

  std::vector<std::string> symbols_;
  std::unordered_map<std::string, int32_t> ids_;
  std::vector<Word> words_;
  std::unordered_map<PairKey, int64_t> pair_count_;
  std::unordered_map<PairKey, std::vector<size_t>> where_;
};

}  // namespace

std::vector<std::string> train_wordpiece_vocab(const std::vector<std::string>& texts,
                                               const WordPieceTrainOptions& opt) {
  std::map<std::string, int64_t> words;  // sorted: the symbol ids do not depend on hashing
  for (const auto& t : texts)
    for (auto& w : wordpiece_basic_words(t, opt.lower_case)) ++words[w];
  MergeState state;
  std::set<std::string> alphabet;
  for (const auto& [w, count] : words) {
    std::vector<int32_t> s;
    size_t pos = 0;
    std::vector<std::string> chars;
    while (pos < w.size()) {
      std::string c;
      append_utf8(c, next_codepoint(w, pos));
      chars.push_back((chars.empty() ? "" : "##") + c);
    }
    if (chars.size() > kWordPieceMaxChars) continue;
    for (const auto& c : chars) {
      alphabet.insert(c);
      s.push_back(state.intern(c));
    }
    state.add_word(std::move(s), count);
  }
  if (alphabet.empty())
    throw DataError("cannot train a WordPiece vocabulary: the training text has no word");
  const auto needed = static_cast<int64_t>(kNumSpecial + alphabet.size());
  if (opt.vocab_size < needed)
    throw DataError(
        fmt::format("WordPiece vocabulary size {} is below the {} special tokens plus the {} "
                    "characters of the training text (word-initial and ## forms)",
                    opt.vocab_size, kNumSpecial, alphabet.size()),
        fmt::format("a vocabulary size of at least {} (data.vocab_size, or --vocab-size)", needed));
  std::vector<std::string> vocab;
  for (int64_t s = 0; s < kNumSpecial; ++s) vocab.push_back(special_token_name(s));
  vocab.insert(vocab.end(), alphabet.begin(), alphabet.end());
  std::set<std::string> listed(vocab.begin(), vocab.end());
  PairKey best = 0;
  while (static_cast<int64_t>(vocab.size()) < opt.vocab_size &&
         state.best_pair(opt.min_frequency, best)) {
    const std::string m = state.merged(best);
    state.merge(best, state.intern(m));
    if (listed.insert(m).second) vocab.push_back(m);
  }
  return vocab;
}

std::unique_ptr<Tokenizer> make_trained_wordpiece_tokenizer(
    const std::vector<std::string>& train_texts, const WordPieceTrainOptions& opt,
    const std::string& cache_dir) {
  uint64_t h = fnv1a64("relpos-wordpiece-v1\n");
  h = fnv1a64(fmt::format("vocab_size={}\nlower_case={}\nmin_frequency={}\n", opt.vocab_size,
                          opt.lower_case, opt.min_frequency),
              h);
  for (const auto& t : train_texts) h = fnv1a64(std::to_string(t.size()) + "\n" + t, h);
  namespace fs = std::filesystem;
  const std::string dir = cache_dir + "/tokenizers";
  const std::string path = dir + "/wordpiece-" + hex64(h) + ".txt";
  if (!fs::exists(path)) {
    std::string text;
    for (const auto& line : train_wordpiece_vocab(train_texts, opt)) text += line + "\n";
    std::error_code ec;
    fs::create_directories(dir, ec);
    // A temporary name, then a rename: parallel runs never read half a vocabulary.
    const std::string tmp = fmt::format("{}.tmp{}", path, static_cast<long>(getpid()));
    {
      std::ofstream out(tmp, std::ios::binary);
      out << text;
      if (!out) throw DataError(fmt::format("cannot write the WordPiece vocabulary '{}'", tmp));
    }
    fs::rename(tmp, path, ec);
    if (ec) throw DataError(fmt::format("cannot move '{}' to '{}': {}", tmp, path, ec.message()));
  }
  return make_wordpiece_tokenizer(path, opt.lower_case, /*run_keeps_copy=*/true);
}

}  // namespace relpos

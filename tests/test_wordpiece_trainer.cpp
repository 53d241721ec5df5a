// WordPiece vocabulary training (core/data/wordpiece_trainer.h) and `relpos tokenizer train`.
// The merges of a small corpus are checked against the order worked out by hand (the most
// frequent pair first, ties by the merged text); a vocabulary trained on the fixture corpus is checked by
// tokenizing text with relpos's WordPiece and with a greedy longest-match loop written here from
// the algorithm's description (Wu et al. 2016, BERT's WordpieceTokenizer): for each word, take
// the longest prefix in the vocabulary, then the longest "##"-prefixed piece of the rest, and so
// on; a word with a part no piece covers is one [UNK].
#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>

#include "core/data/tokenizer.h"
#include "core/data/wordpiece_trainer.h"
#include "core/util/errors.h"
#include "tests/hf_test_util.h"

using namespace relpos;
using namespace relpos::test;
namespace fs = std::filesystem;

namespace {

std::vector<std::string> file_lines(const std::string& path) {
  std::ifstream in(path);
  std::vector<std::string> lines;
  for (std::string l; std::getline(in, l);) lines.push_back(l);
  return lines;
}

// Greedy longest-match-first over one word of lower-case ASCII letters (no basic tokenization
// needed), from the description; the ids are the vocabulary's line numbers.
std::vector<int64_t> greedy_longest_match(const std::string& word,
                                          const std::map<std::string, int64_t>& vocab) {
  std::vector<int64_t> ids;
  size_t start = 0;
  while (start < word.size()) {
    int64_t found = -1;
    size_t len = word.size() - start;
    for (; len > 0; --len) {
      const std::string piece = (start > 0 ? "##" : "") + word.substr(start, len);
      const auto it = vocab.find(piece);
      if (it != vocab.end()) {
        found = it->second;
        break;
      }
    }
    if (found < 0) return {vocab.at("[UNK]")};
    ids.push_back(found);
    start += len;
  }
  return ids;
}

}  // namespace

TEST_CASE("wordpiece trainer: merges the most frequent pair, ties by merged text, counts updated") {
  // Words (lower-cased, punctuation split off): ab x4, ac x4, xy x3, abc x3, "," and ".".
  // Pairs: (a,##b) 4+3 = 7, (a,##c) 4, (x,##y) 3, (##b,##c) 3. Merged first: ab (7). The abc
  // words are then [ab, ##c]: (ab,##c) 3, and (##b,##c) is gone. Next ac (4), then a tie at 3
  // between "abc" and "xy": "abc" first in byte order.
  const std::vector<std::string> texts = {"ab ab xy ac", "AB, ab. ac ac xy", "ac xy",
                                          "abc abc abc"};
  WordPieceTrainOptions o;
  std::vector<std::string> expected = {"[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"};
  // The alphabet in byte order ('#' < ',' < '.' < 'a').
  for (const char* s : {"##b", "##c", "##y", ",", ".", "a", "x"}) expected.push_back(s);
  o.vocab_size = static_cast<int64_t>(expected.size()) + 4;
  for (const char* s : {"ab", "ac", "abc", "xy"}) expected.push_back(s);
  CHECK(train_wordpiece_vocab(texts, o) == expected);
  // A smaller vocabulary stops after the first merges.
  o.vocab_size -= 1;
  expected.pop_back();
  CHECK(train_wordpiece_vocab(texts, o) == expected);
  // Continuation pieces merge too, and come first in byte order at a tie: in "abc" alone,
  // (a,##b) and (##b,##c) both occur 3 times; "##bc" < "ab".
  o.vocab_size = 100;
  const auto cont = train_wordpiece_vocab({"abc abc abc"}, o);
  CHECK(std::vector<std::string>(cont.begin() + 8, cont.end()) ==
        std::vector<std::string>{"##bc", "abc"});
  // A pair below min_frequency is never merged: "zq" occurs once.
  o.vocab_size = 100;
  const auto once = train_wordpiece_vocab({"zq"}, o);
  CHECK(once == std::vector<std::string>{"[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "##q", "z"});
  // Cased: upper-case letters are characters of their own.
  o.lower_case = false;
  const auto cased = train_wordpiece_vocab({"Ab ab"}, o);
  CHECK(std::count(cased.begin(), cased.end(), "A") == 1);
  CHECK(std::count(cased.begin(), cased.end(), "a") == 1);
}

TEST_CASE("wordpiece trainer: a vocabulary size below the alphabet, and no text, are errors") {
  WordPieceTrainOptions o;
  o.vocab_size = 7;  // 5 specials + 2, but "abc" needs a, ##b, ##c
  CHECK_THROWS_WITH_AS(train_wordpiece_vocab({"abc"}, o),
                       doctest::Contains("WordPiece vocabulary size 7 is below the 5 special "
                                         "tokens plus the 3 characters"),
                       DataError);
  CHECK_THROWS_WITH_AS(train_wordpiece_vocab({" \n "}, o), doctest::Contains("has no word"),
                       DataError);
}

TEST_CASE("relpos tokenizer train: the trained vocabulary tokenizes as greedy longest-match") {
  TempFolder tmp("wordpiece_train");
  const std::string out = tmp.str("vocab.txt");
  const ChildResult r = relpos_cli({"tokenizer", "train", "--corpus",
                                    fixture_path("trainer/corpus.txt"), "--set",
                                    "data.cache_dir=" + tmp.str("cache"), "--set",
                                    "data.valid_fraction=0.2", "--set", "data.test_fraction=0.2",
                                    "--set", "task.seq_len=16", "--vocab-size", "120", "--out", out});
  INFO(r.out << r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(r.out.find("wrote 120 tokens to " + out) != std::string::npos);
  const auto lines = file_lines(out);
  REQUIRE(lines.size() == 120);
  CHECK(std::vector<std::string>(lines.begin(), lines.begin() + 5) ==
        std::vector<std::string>{"[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"});
  CHECK(std::set<std::string>(lines.begin(), lines.end()).size() == lines.size());
  std::map<std::string, int64_t> vocab;
  for (size_t i = 0; i < lines.size(); ++i) vocab[lines[i]] = static_cast<int64_t>(i);
  // Some word pieces of several characters, continuation pieces among them.
  CHECK(std::any_of(lines.begin(), lines.end(),
                    [](const std::string& l) { return l.size() > 3 && l.rfind("##", 0) == 0; }));
  const auto tok = make_wordpiece_tokenizer(out, true);
  const std::vector<std::string> words = {"the",      "river",     "rose",  "farmers",
                                          "lighthouse", "committee", "quixotic", "zzz",
                                          "watched",  "boards",    "winter", "qqqqqqqq"};
  std::vector<int64_t> expected;
  std::string text;
  for (const auto& w : words) {
    const auto ids = greedy_longest_match(w, vocab);
    expected.insert(expected.end(), ids.begin(), ids.end());
    text += w + " ";
  }
  CHECK(tok->encode(text) == expected);
  // Training words need no [UNK]; a word with a character the corpus lacks is one [UNK].
  CHECK(std::count(expected.begin(), expected.end(), int64_t{1}) >= 1);
  CHECK(greedy_longest_match("river", vocab) != std::vector<int64_t>{1});
  // --overwrite is needed to replace the file.
  const ChildResult again = relpos_cli({"tokenizer", "train", "--corpus",
                                        fixture_path("trainer/corpus.txt"), "--out", out});
  CHECK(again.exit_code == 2);
  CHECK(again.err.find(out + ": exists") != std::string::npos);
}

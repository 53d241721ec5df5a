// BERT WordPiece from a user-given vocab.txt: basic tokenization, then greedy
// longest-match-first over each word (Wu et al. 2016; Devlin et al. 2019).
#include <fmt/format.h>

#include <unordered_map>

#include "core/util/text_util.h"
#include "core/data/tokenizer.h"
#include "core/data/unicode_basic.h"
#include "core/util/errors.h"

namespace relpos {

namespace {

constexpr size_t kMaxWordChars = 100;

struct Char {
  uint32_t cp;   // after folding
  int64_t b, e;  // source byte span
};
using Word = std::vector<Char>;

// BERT's basic tokenization: words of folded characters with their source byte spans.
std::vector<Word> wordpiece_basic_split(const std::string& text, bool lower_case) {
  std::vector<Word> words;
  Word cur;
  auto flush = [&] {
    if (!cur.empty()) words.push_back(std::move(cur));
    cur.clear();
  };
  size_t pos = 0;
  while (pos < text.size()) {
    const int64_t b = static_cast<int64_t>(pos);
    uint32_t cp = next_codepoint(text, pos);
    const int64_t e = static_cast<int64_t>(std::min(pos, text.size()));
    if (cp == 0 || unicode::is_control(cp)) continue;
    if (unicode::is_whitespace(cp)) {
      flush();
      continue;
    }
    if (lower_case) {
      cp = unicode::fold(cp);
      if (cp == 0) {  // a combining accent: its bytes belong to the previous character
        if (!cur.empty()) cur.back().e = e;
        continue;
      }
    }
    if (unicode::is_punctuation(cp) || unicode::is_cjk(cp)) {
      flush();
      words.push_back({Char{cp, b, e}});
      continue;
    }
    cur.push_back({cp, b, e});
  }
  flush();
  return words;
}

class WordPieceTokenizer : public Tokenizer {
 public:
  WordPieceTokenizer(const std::string& path, bool lower_case, bool kept)
      : path_(path), lower_(lower_case), kept_(kept) {
    const std::string text = read_utf8_file(path, "WordPiece vocabulary");
    if (trim(text).empty())
      throw DataError(fmt::format("{}: empty vocabulary (expected one token per line: BERT's "
                                  "special tokens [PAD] [UNK] [CLS] [SEP] [MASK] and word pieces)",
                                  path));
    const std::vector<std::string> lines = split_on(text, '\n');
    std::vector<std::string> ordinary;
    int64_t specials_found = 0;
    for (size_t i = 0; i < lines.size(); ++i) {
      std::string tok = lines[i];
      if (!tok.empty() && tok.back() == '\r') tok.pop_back();
      if (tok.empty()) {
        if (i + 1 == lines.size()) break;  // final newline
        throw DataError(
            fmt::format("{}:{}: empty token (expected one token per line)", path, i + 1));
      }
      if (seen_.count(tok))
        throw DataError(fmt::format("{}:{}: duplicate token '{}' (first on line {})", path, i + 1,
                                    printable_utf8(tok), seen_[tok]));
      seen_[tok] = static_cast<int64_t>(i) + 1;
      int64_t special = -1;
      for (int64_t s = 0; s < kNumSpecial; ++s)
        if (tok == special_token_name(s)) special = s;
      if (special >= 0)
        ++specials_found;
      else
        ordinary.push_back(tok);
    }
    if (specials_found != kNumSpecial) {
      std::vector<std::string> missing;
      for (int64_t s = 0; s < kNumSpecial; ++s)
        if (!seen_.count(special_token_name(s))) missing.push_back(special_token_name(s));
      // " [MASK]" is not "[MASK]": say so when a missing special is there with white space.
      std::string near;
      int64_t near_line = 0;
      for (const auto& [tok, line] : seen_)
        for (const auto& m : missing)
          if (trim(tok) == m && (near_line == 0 || line < near_line)) {
            near_line = line;
            near = fmt::format("; line {} has '{}', with white space", line, tok);
          }
      throw DataError(
          fmt::format("{}: no {} token (expected BERT's special tokens [PAD] [UNK] "
                      "[CLS] [SEP] [MASK] in the vocabulary{})",
                      path, join_names(missing), near));
    }
    // Without a single word piece every word is [UNK]: mlm has nothing to predict (its loss is
    // the mean over no targets, NaN) and every other task sees only [UNK].
    if (ordinary.empty())
      throw DataError(fmt::format("{}: no word pieces, only the special tokens [PAD] [UNK] [CLS] "
                                  "[SEP] [MASK] (expected word pieces after them, one per line; "
                                  "every word would be [UNK])",
                                  path));
    pieces_.resize(kNumSpecial);
    for (int64_t s = 0; s < kNumSpecial; ++s) pieces_[s] = special_token_name(s);
    for (auto& tok : ordinary) {
      ids_[tok] = static_cast<int64_t>(pieces_.size());
      pieces_.push_back(std::move(tok));
    }
  }

  std::string name() const override { return "wordpiece:" + path_; }
  int64_t vocab_size() const override { return static_cast<int64_t>(pieces_.size()); }
  std::string model_file() const override { return kept_ ? path_ : std::string(); }

  std::vector<int64_t> encode_with_offsets(
      const std::string& text, std::vector<std::pair<int64_t, int64_t>>* offsets) const override {
    std::vector<int64_t> ids;
    offsets->clear();
    for (const Word& w : wordpiece_basic_split(text, lower_)) wordpieces(w, ids, *offsets);
    return ids;
  }

  std::string decode(const std::vector<int64_t>& ids) const override {
    std::string out;
    for (int64_t id : ids) {
      if (id == special_.pad || id < 0 || id >= vocab_size()) continue;
      const std::string& p = pieces_[id];
      if (id >= kNumSpecial && p.rfind("##", 0) == 0 && !out.empty()) {
        out += p.substr(2);
      } else {
        if (!out.empty()) out += ' ';
        out += p;
      }
    }
    return out;
  }

 private:
  void wordpieces(const Word& w, std::vector<int64_t>& ids,
                  std::vector<std::pair<int64_t, int64_t>>& offsets) const {
    if (w.size() > kMaxWordChars) {
      ids.push_back(special_.unk);
      offsets.push_back({w.front().b, w.back().e});
      return;
    }
    // The folded word as UTF-8 and the byte position of each character in it.
    std::string s;
    std::vector<size_t> at;
    for (const Char& c : w) {
      at.push_back(s.size());
      append_utf8(s, c.cp);
    }
    at.push_back(s.size());
    std::vector<int64_t> word_ids;
    std::vector<std::pair<int64_t, int64_t>> word_offsets;
    size_t start = 0;
    while (start < w.size()) {
      int64_t found = -1;
      size_t end = w.size();
      for (; end > start; --end) {
        std::string piece = s.substr(at[start], at[end] - at[start]);
        if (start > 0) piece = "##" + piece;
        auto it = ids_.find(piece);
        if (it != ids_.end()) {
          found = it->second;
          break;
        }
      }
      if (found < 0) {  // no piece covers this part: the whole word is unknown
        ids.push_back(special_.unk);
        offsets.push_back({w.front().b, w.back().e});
        return;
      }
      word_ids.push_back(found);
      word_offsets.push_back({w[start].b, w[end - 1].e});
      start = end;
    }
    ids.insert(ids.end(), word_ids.begin(), word_ids.end());
    offsets.insert(offsets.end(), word_offsets.begin(), word_offsets.end());
  }

  std::string path_;
  bool lower_;
  bool kept_;  // a vocabulary relpos trained: the run keeps a copy
  std::unordered_map<std::string, int64_t> seen_;  // token -> line (loading only)
  std::unordered_map<std::string, int64_t> ids_;
  std::vector<std::string> pieces_;
};

}  // namespace

std::unique_ptr<Tokenizer> make_wordpiece_tokenizer(const std::string& vocab_path,
                                                    bool lower_case, bool run_keeps_copy) {
  return std::make_unique<WordPieceTokenizer>(vocab_path, lower_case, run_keeps_copy);
}

std::vector<std::string> wordpiece_basic_words(const std::string& text, bool lower_case) {
  std::vector<std::string> out;
  for (const Word& w : wordpiece_basic_split(text, lower_case)) {
    std::string s;
    for (const Char& c : w) append_utf8(s, c.cp);
    out.push_back(std::move(s));
  }
  return out;
}

}  // namespace relpos

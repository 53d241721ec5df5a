// GPT-2 / RoBERTa byte-level BPE from a Hugging Face vocab.json and merges.txt (Radford et al.
// 2019, section 2.2): bytes as printable characters, a pre-split into words, numbers,
// punctuation runs and white space, then merges in merges.txt order within each piece.
// tests/reference/byte_bpe.py is the independent reference the tests compare against.
#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <limits>
#include <mutex>
#include <unordered_map>

#include "core/data/python_unicode.h"
#include "core/data/tokenizer.h"
#include "core/util/errors.h"
#include "core/util/json_util.h"
#include "core/util/text_util.h"

namespace relpos {

namespace {

// The vocab.json tokens that stand for relpos's [PAD] [UNK] [CLS] [SEP] [MASK], in order of
// preference: RoBERTa's own, else GPT-2's only special token.
constexpr const char* kEndOfText = "<|endoftext|>";
constexpr std::array<const char*, kNumSpecial> kSpecialToken = {"<pad>", "<unk>", "<s>", "</s>",
                                                                "<mask>"};

// vocab.json: token -> id, the ids 0..N-1 each once. Returns the token of each id.
std::vector<std::string> read_vocab_json(const std::string& path) {
  const auto j = parse_json(read_utf8_file(path, "byte-level BPE vocabulary (vocab.json)"), path,
                            "a JSON object mapping each token to its id");
  if (!j.is_object() || j.empty())
    throw DataError(
        fmt::format("{}: expected a non-empty JSON object mapping each token to its id "
                    "(a GPT-2 / RoBERTa vocab.json)",
                    path));
  std::vector<std::string> by_id(j.size());
  std::vector<bool> seen(j.size(), false);
  for (const auto& [tok, id] : j.items()) {
    if (!id.is_number_integer() || id.get<int64_t>() < 0 ||
        id.get<int64_t>() >= static_cast<int64_t>(j.size()))
      throw DataError(
          fmt::format("{}: token '{}' has id {}; expected an integer 0..{} (the file "
                      "has {} tokens, each id once)",
                      path, printable_utf8(tok), id.dump(), j.size() - 1, j.size()));
    const auto i = static_cast<size_t>(id.get<int64_t>());
    if (seen[i])
      throw DataError(
          fmt::format("{}: id {} is given to both '{}' and '{}' (expected each id once)", path, i,
                      printable_utf8(by_id[i]), printable_utf8(tok)));
    seen[i] = true;
    by_id[i] = tok;
  }
  return by_id;
}

// The checkpoint id of each relpos special token.
std::array<int64_t, kNumSpecial> special_ids(const std::vector<std::string>& by_id,
                                             const std::string& path) {
  std::unordered_map<std::string, int64_t> id_of;
  for (size_t i = 0; i < by_id.size(); ++i) id_of[by_id[i]] = static_cast<int64_t>(i);
  std::array<int64_t, kNumSpecial> out{};
  for (int64_t s = 0; s < kNumSpecial; ++s) {
    auto it = id_of.find(kSpecialToken[s]);
    if (it == id_of.end()) it = id_of.find(kEndOfText);
    if (it == id_of.end())
      throw DataError(
          fmt::format("{}: no token for {} (expected {} as RoBERTa has, or GPT-2's "
                      "{}, which then stands for every special token)",
                      path, special_token_name(s), kSpecialToken[s], kEndOfText));
    out[s] = it->second;
  }
  return out;
}

std::vector<int64_t> rows_of(const std::vector<std::string>& by_id, const std::string& path) {
  const auto specials = special_ids(by_id, path);
  std::vector<int64_t> rows(specials.begin(), specials.end());
  for (int64_t i = 0; i < static_cast<int64_t>(by_id.size()); ++i)
    if (std::find(specials.begin(), specials.end(), i) == specials.end()) rows.push_back(i);
  return rows;
}

// The printable character (UTF-8) standing for each byte: the printable Latin-1 bytes for
// themselves, the other 68 for U+0100, U+0101, ... in byte order (the space byte is U+0120).
std::array<std::string, 256> byte_alphabet() {
  std::array<std::string, 256> out;
  uint32_t extra = 0;
  for (uint32_t b = 0; b < 256; ++b) {
    const bool printable = (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || b >= 0xAE;
    append_utf8(out[b], printable ? b : 256 + extra++);
  }
  return out;
}

enum class CharClass { letter, number, white, other };

struct CodePoint {
  CharClass cls;
  uint32_t cp;
  size_t b, e;  // byte span
};

// White space as the pattern's \s (the `regex` module: the White_Space property) sees it:
// str.isspace() without U+001C..U+001F.
bool is_white(uint32_t cp) { return python_unicode::is_space(cp) && !(cp >= 0x1C && cp <= 0x1F); }

// Code points with their byte spans; a byte that breaks UTF-8 is one code point of class other.
std::vector<CodePoint> code_points(const std::string& text) {
  std::vector<CodePoint> out;
  const size_t bad = utf8_error_offset(text);
  size_t pos = 0;
  while (pos < text.size()) {
    const size_t b = pos;
    if (bad != std::string::npos && utf8_error_offset(text.substr(pos, 4)) == 0) {
      out.push_back({CharClass::other, 0xFFFD, b, ++pos});
      continue;
    }
    const uint32_t cp = next_codepoint(text, pos);  // valid here
    const CharClass cls = python_unicode::is_letter(cp)   ? CharClass::letter
                          : python_unicode::is_number(cp) ? CharClass::number
                          : is_white(cp)                  ? CharClass::white
                                                          : CharClass::other;
    out.push_back({cls, cp, b, pos});
  }
  return out;
}

// The pre-split: at each position the first that matches of 's 't 're 've 'm 'll 'd; an
// optional space and letters; an optional space and numbers; an optional space and other
// characters; white space not followed by a non-space (a run before a word leaves its last
// character to the word); any white space. Returns byte spans.
std::vector<std::pair<size_t, size_t>> pre_split(const std::string& text) {
  static const char* const kContractions[] = {"'s", "'t", "'re", "'ve", "'m", "'ll", "'d"};
  const std::vector<CodePoint> cps = code_points(text);
  const size_t n = cps.size();
  auto run_end = [&](size_t i, CharClass c) {
    while (i < n && cps[i].cls == c) ++i;
    return i;
  };
  std::vector<std::pair<size_t, size_t>> out;
  size_t i = 0;
  while (i < n) {
    const size_t at = cps[i].b;
    const char* hit = nullptr;
    for (const char* c : kContractions)
      if (text.compare(at, std::char_traits<char>::length(c), c) == 0) hit = c;
    if (hit) {
      const size_t len = std::char_traits<char>::length(hit);  // ASCII: one code point a byte
      out.push_back({at, at + len});
      i += len;
      continue;
    }
    const size_t j = cps[i].cp == ' ' ? i + 1 : i;
    if (j < n && cps[j].cls != CharClass::white) {
      const size_t end = run_end(j, cps[j].cls);
      out.push_back({at, cps[end - 1].e});
      i = end;
      continue;
    }
    size_t end = run_end(i, CharClass::white);
    if (end < n && end - i >= 2) --end;
    out.push_back({at, cps[end - 1].e});
    i = end;
  }
  return out;
}

class ByteBpeTokenizer : public Tokenizer {
 public:
  ByteBpeTokenizer(const std::string& vocab_path, const std::string& merges_path)
      : path_(vocab_path), alphabet_(byte_alphabet()) {
    const std::vector<std::string> by_id = read_vocab_json(vocab_path);
    const std::vector<int64_t> rows = rows_of(by_id, vocab_path);
    tokens_.reserve(rows.size());
    for (size_t id = 0; id < rows.size(); ++id) {
      const std::string& tok = by_id[static_cast<size_t>(rows[id])];
      tokens_.push_back(tok);
      if (id >= static_cast<size_t>(kNumSpecial)) id_of_.emplace(tok, static_cast<int64_t>(id));
    }
    for (uint32_t b = 0; b < 256; ++b) byte_of_[alphabet_[b]] = static_cast<unsigned char>(b);
    read_merges(merges_path);
  }

  std::string name() const override { return "byte_bpe:" + path_; }
  int64_t vocab_size() const override { return static_cast<int64_t>(tokens_.size()); }

  std::vector<int64_t> encode_with_offsets(
      const std::string& text, std::vector<std::pair<int64_t, int64_t>>* offsets) const override {
    std::vector<int64_t> ids;
    offsets->clear();
    for (const auto& [b, e] : pre_split(text)) {
      size_t at = b;
      for (const auto& [id, len] : piece(text.substr(b, e - b))) {
        ids.push_back(id);
        offsets->push_back({static_cast<int64_t>(at), static_cast<int64_t>(at + len)});
        at += len;
      }
    }
    return ids;
  }

  std::string decode(const std::vector<int64_t>& ids) const override {
    std::string out;
    for (int64_t id : ids) {
      if (id == special_.pad || id < 0 || id >= vocab_size()) continue;
      if (id < kNumSpecial) {
        out += special_token_name(id);
        continue;
      }
      const std::string& tok = tokens_[static_cast<size_t>(id)];
      size_t pos = 0;
      while (pos < tok.size()) {
        const size_t b = pos;
        next_codepoint(tok, pos);
        const auto it = byte_of_.find(tok.substr(b, pos - b));
        if (it != byte_of_.end()) out += static_cast<char>(it->second);
      }
    }
    return out;
  }

 private:
  void read_merges(const std::string& path) {
    const std::vector<std::string> lines =
        split_on(read_utf8_file(path, "byte-level BPE merges (merges.txt)"), '\n');
    for (size_t i = 0; i < lines.size(); ++i) {
      std::string line = lines[i];
      if (!line.empty() && line.back() == '\r') line.pop_back();
      if (line.empty() || (i == 0 && line.rfind("#version", 0) == 0)) continue;
      const size_t sp = line.find(' ');
      if (sp == 0 || sp == std::string::npos || sp + 1 == line.size() ||
          line.find(' ', sp + 1) != std::string::npos)
        throw DataError(
            fmt::format("{}:{}: '{}' is not a merge (expected two symbols separated by "
                        "one space, as in 'Ġ t')",
                        path, i + 1, printable_utf8(line)));
      rank_.emplace(line, static_cast<int64_t>(rank_.size()));  // the first listing counts
    }
  }

  // (id, bytes covered) of each token of one pre-split piece.
  std::vector<std::pair<int64_t, size_t>> piece(const std::string& bytes) const {
    {
      std::lock_guard<std::mutex> lock(cache_mutex_);
      const auto it = cache_.find(bytes);
      if (it != cache_.end()) return it->second;
    }
    std::vector<std::string> sym;
    std::vector<size_t> len;
    for (unsigned char c : bytes) {
      sym.push_back(alphabet_[c]);
      len.push_back(1);
    }
    while (sym.size() > 1) {
      int64_t best = std::numeric_limits<int64_t>::max();
      size_t at = 0;
      for (size_t k = 0; k + 1 < sym.size(); ++k) {
        const auto it = rank_.find(sym[k] + ' ' + sym[k + 1]);
        if (it != rank_.end() && it->second < best) {
          best = it->second;
          at = k;
        }
      }
      if (best == std::numeric_limits<int64_t>::max()) break;
      const std::string a = sym[at], b = sym[at + 1];
      std::vector<std::string> s2;
      std::vector<size_t> l2;
      for (size_t k = 0; k < sym.size(); ++k) {
        if (k + 1 < sym.size() && sym[k] == a && sym[k + 1] == b) {
          s2.push_back(a + b);
          l2.push_back(len[k] + len[k + 1]);
          ++k;
        } else {
          s2.push_back(sym[k]);
          l2.push_back(len[k]);
        }
      }
      sym.swap(s2);
      len.swap(l2);
    }
    std::vector<std::pair<int64_t, size_t>> out;
    for (size_t k = 0; k < sym.size(); ++k) {
      const auto it = id_of_.find(sym[k]);
      out.push_back({it == id_of_.end() ? special_.unk : it->second, len[k]});
    }
    std::lock_guard<std::mutex> lock(cache_mutex_);
    if (cache_.size() < kCacheSize) cache_.emplace(bytes, out);
    return out;
  }

  static constexpr size_t kCacheSize = 1 << 17;
  std::string path_;
  std::array<std::string, 256> alphabet_;
  std::unordered_map<std::string, unsigned char> byte_of_;
  std::vector<std::string> tokens_;                 // by relpos id
  std::unordered_map<std::string, int64_t> id_of_;  // relpos id of each ordinary token
  std::unordered_map<std::string, int64_t> rank_;   // "a b" -> line order
  mutable std::mutex cache_mutex_;
  mutable std::unordered_map<std::string, std::vector<std::pair<int64_t, size_t>>> cache_;
};

}  // namespace

std::vector<int64_t> byte_bpe_rows(const std::string& vocab_path) {
  return rows_of(read_vocab_json(vocab_path), vocab_path);
}

std::unique_ptr<Tokenizer> make_byte_bpe_tokenizer(const std::string& vocab_path,
                                                   const std::string& merges_path) {
  return std::make_unique<ByteBpeTokenizer>(vocab_path, merges_path);
}

}  // namespace relpos

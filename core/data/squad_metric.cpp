#include "core/data/squad_metric.h"

#include <algorithm>
#include <map>

#include "core/data/python_unicode.h"
#include "core/util/text_util.h"

namespace relpos {

namespace {

// Python's string.punctuation.
bool ascii_punct(uint32_t cp) {
  return (cp >= 33 && cp <= 47) || (cp >= 58 && cp <= 64) || (cp >= 91 && cp <= 96) ||
         (cp >= 123 && cp <= 126);
}

// A byte that is not part of valid UTF-8 (a span cut inside a character by the bytes tokenizer)
// stands for itself, one byte, as kRawByte + the byte: neither a word character nor space.
constexpr uint32_t kRawByte = 0x110000;

bool is_space(uint32_t cp) { return cp < kRawByte && python_unicode::is_space(cp); }
bool is_word(uint32_t cp) { return cp < kRawByte && python_unicode::is_word(cp); }

// The code point at `pos`, or kRawByte + the byte when no valid UTF-8 sequence starts there
// (then one byte is consumed, so a stray byte never swallows the characters after it).
uint32_t decode(const std::string& s, size_t& pos) {
  const auto c = static_cast<unsigned char>(s[pos]);
  if (c < 0x80) {
    ++pos;
    return c;
  }
  const size_t len = (c & 0xE0) == 0xC0 ? 2 : (c & 0xF0) == 0xE0 ? 3 : (c & 0xF8) == 0xF0 ? 4 : 0;
  bool ok = len > 0 && pos + len <= s.size();
  uint32_t cp = c & (len == 2 ? 0x1F : len == 3 ? 0x0F : 0x07);
  for (size_t k = 1; ok && k < len; ++k) {
    const auto b = static_cast<unsigned char>(s[pos + k]);
    ok = (b & 0xC0) == 0x80;
    cp = (cp << 6) | (b & 0x3F);
  }
  const uint32_t min_cp = len == 2 ? 0x80 : len == 3 ? 0x800 : 0x10000;  // shorter: overlong
  if (!ok || cp < min_cp || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) {
    ++pos;
    return kRawByte + c;
  }
  pos += len;
  return cp;
}

void append(std::string& out, uint32_t cp) {
  if (cp >= kRawByte)
    out += static_cast<char>(cp - kRawByte);
  else
    append_utf8(out, cp);
}

std::vector<uint32_t> codepoints(const std::string& s) {
  std::vector<uint32_t> out;
  size_t pos = 0;
  while (pos < s.size()) out.push_back(decode(s, pos));
  return out;
}

std::vector<std::string> tokens(const std::string& normalized) {
  std::vector<std::string> out;
  std::string cur;
  for (uint32_t cp : codepoints(normalized)) {
    if (is_space(cp)) {
      if (!cur.empty()) out.push_back(cur);
      cur.clear();
    } else {
      append(cur, cp);
    }
  }
  if (!cur.empty()) out.push_back(cur);
  return out;
}

}  // namespace

std::string squad_normalize(const std::string& text) {
  // lower(), then remove_punc(). A raw byte (kRawByte + b) is no letter: lower() keeps it.
  std::vector<uint32_t> cps;
  for (uint32_t cp : python_unicode::lower(codepoints(text)))
    if (!ascii_punct(cp)) cps.push_back(cp);
  // remove_articles(): re.sub(r'\b(a|an|the)\b', ' ', text), \b between Python's \w and \W
  std::vector<uint32_t> kept;
  const size_t n = cps.size();
  for (size_t i = 0; i < n;) {
    bool removed = false;
    if (i == 0 || !is_word(cps[i - 1])) {
      for (const char* art : {"the", "an", "a"}) {
        const size_t len = std::char_traits<char>::length(art);
        if (i + len > n) continue;
        bool match = true;
        for (size_t k = 0; k < len && match; ++k)
          match = cps[i + k] == static_cast<uint32_t>(art[k]);
        if (match && (i + len == n || !is_word(cps[i + len]))) {
          kept.push_back(' ');
          i += len;
          removed = true;
          break;
        }
      }
    }
    if (!removed) kept.push_back(cps[i++]);
  }
  // white_space_fix(): ' '.join(text.split())
  std::string joined;
  std::string s;
  for (uint32_t cp : kept) append(s, cp);
  for (const auto& t : tokens(s)) joined += (joined.empty() ? "" : " ") + t;
  return joined;
}

double squad_exact_match(const std::string& prediction, const std::vector<std::string>& gold) {
  const std::string p = squad_normalize(prediction);
  double best = 0;
  for (const auto& g : gold) best = std::max(best, p == squad_normalize(g) ? 1.0 : 0.0);
  return best;
}

double squad_f1(const std::string& prediction, const std::vector<std::string>& gold) {
  const std::vector<std::string> pred = tokens(squad_normalize(prediction));
  double best = 0;
  for (const auto& g : gold) {
    const std::vector<std::string> truth = tokens(squad_normalize(g));
    std::map<std::string, int64_t> count;
    for (const auto& t : truth) ++count[t];
    int64_t same = 0;
    for (const auto& t : pred)
      if (count[t] > 0) --count[t], ++same;
    if (same == 0) continue;
    const double precision = static_cast<double>(same) / pred.size();
    const double recall = static_cast<double>(same) / truth.size();
    best = std::max(best, 2 * precision * recall / (precision + recall));
  }
  return best;
}

}  // namespace relpos

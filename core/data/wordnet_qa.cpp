// The WordNet span-QA set: a GENERATED data set, built by relpos from the WordNet 3.0 database
// (Debian wordnet-base, /usr/share/wordnet/data.{noun,verb,adj,adv}); it is not a published
// benchmark. For each synset that has example sentences and a member word occurring in them:
//   question = the synset's definition (its gloss without the examples),
//   context  = the synset's example sentences joined by "; ",
//   answer   = the first occurrence in the context of the synset's first member word that
//              occurs there, as written there (case-insensitive, at word boundaries, also as a
//              regular inflection -s/-es/-ed/-ing/... or an irregular form from WordNet's
//              *.exc lists).
// Each synset is its own document for the train/valid/test split.
#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <map>
#include <sstream>

#include "core/data/corpus.h"
#include "core/util/text_util.h"
#include "core/util/errors.h"

namespace relpos {

namespace {

std::string lower_ascii(std::string s) {
  for (char& ch : s) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  return s;
}

bool is_word_char(char ch) {
  const auto u = static_cast<unsigned char>(ch);
  return std::isalnum(u) || u >= 0x80;
}

bool is_consonant(char ch) {
  return std::isalpha(static_cast<unsigned char>(ch)) && !std::strchr("aeiou", ch);
}

// Regular inflections of a (lower-case) word or phrase; the last word is inflected.
std::vector<std::string> regular_forms(const std::string& w) {
  std::vector<std::string> f = {w};
  for (const char* s : {"s", "es", "ed", "d", "ing", "er", "est"}) f.push_back(w + s);
  const char last = w.back();
  if (last == 'e' && w.size() > 2) {
    const std::string stem = w.substr(0, w.size() - 1);
    f.push_back(stem + "ing");
  }
  if (last == 'y' && w.size() > 2) {
    const std::string stem = w.substr(0, w.size() - 1);
    for (const char* s : {"ies", "ied", "ier", "iest"}) f.push_back(stem + s);
  }
  if (w.size() > 2 && is_consonant(last) && !is_consonant(w[w.size() - 2]))
    for (const char* s : {"ed", "ing", "er", "est"}) f.push_back(w + last + s);
  return f;
}

// The earliest match of any form in `lower_ctx` at word boundaries (longest at that position).
bool find_form(const std::string& lower_ctx, const std::vector<std::string>& forms, size_t& begin,
               size_t& end) {
  bool found = false;
  for (const auto& form : forms) {
    for (size_t p = lower_ctx.find(form); p != std::string::npos; p = lower_ctx.find(form, p + 1)) {
      const size_t e = p + form.size();
      if ((p > 0 && is_word_char(lower_ctx[p - 1])) ||
          (e < lower_ctx.size() && is_word_char(lower_ctx[e])))
        continue;
      if (!found || p < begin || (p == begin && e > end)) begin = p, end = e, found = true;
      break;
    }
  }
  return found;
}

// Splits a gloss at ';' outside double quotes: quoted parts are examples, the rest the definition.
void split_gloss(const std::string& gloss, std::string& definition,
                 std::vector<std::string>& examples) {
  std::vector<std::string> parts;
  std::string cur;
  bool quoted = false;
  for (char ch : gloss) {
    if (ch == '"') quoted = !quoted;
    if (ch == ';' && !quoted) {
      parts.push_back(trim(cur));
      cur.clear();
    } else {
      cur += ch;
    }
  }
  parts.push_back(trim(cur));
  for (const auto& p : parts) {
    if (p.empty()) continue;
    if (p[0] == '"') {
      const size_t close = p.find('"', 1);
      const std::string ex =
          trim(p.substr(1, close == std::string::npos ? std::string::npos : close - 1));
      if (!ex.empty()) examples.push_back(ex);
    } else {
      definition += definition.empty() ? p : "; " + p;
    }
  }
}

// WordNet's irregular forms: "<inflected> <base>" per line of noun.exc, verb.exc, adj.exc.
std::map<std::string, std::vector<std::string>> load_exceptions(const std::string& dir) {
  std::map<std::string, std::vector<std::string>> out;
  for (const char* f : {"noun.exc", "verb.exc", "adj.exc", "adv.exc"}) {
    const std::string path = dir + "/" + f;
    if (!std::filesystem::exists(path)) continue;
    std::istringstream in(read_file(path, "WordNet exception list"));
    std::string inflected, base;
    std::string line;
    while (std::getline(in, line)) {
      std::istringstream ls(line);
      if (!(ls >> inflected)) continue;
      while (ls >> base) {
        std::replace(inflected.begin(), inflected.end(), '_', ' ');
        std::replace(base.begin(), base.end(), '_', ' ');
        out[base].push_back(inflected);
      }
    }
  }
  return out;
}

}  // namespace

std::string wordnet_dir(const std::string& cache_dir) {
  if (const char* env = std::getenv("RELPOS_WORDNET_DIR")) return env;
  if (std::filesystem::exists(cache_dir + "/wordnet/data.noun")) return cache_dir + "/wordnet";
  return "/usr/share/wordnet";
}

Corpus load_wordnet_qa(const std::string& dir) {
  if (!std::filesystem::exists(dir + "/data.noun"))
    throw DataError(fmt::format("corpus 'wordnet_qa': no WordNet database in '{}' (expected "
                                "data.noun, data.verb, data.adj, data.adv of WordNet 3.0)",
                                dir),
                    "install Debian's wordnet-base (scripts/setup.sh does), run "
                    "scripts/fetch_data.sh, or set RELPOS_WORDNET_DIR");
  const auto exceptions = load_exceptions(dir);
  Corpus c;
  c.name = "wordnet_qa";
  c.source =
      "generated from WordNet 3.0 (Debian wordnet-base; question = gloss, context = "
      "examples, answer = the word's span)";
  c.kind = CorpusKind::Qa;
  for (const char* pos : {"noun", "verb", "adj", "adv"}) {
    const std::string path = dir + "/data." + pos;
    std::istringstream in(read_file(path, "WordNet data file"));
    std::string line;
    int64_t line_no = 0;
    while (std::getline(in, line)) {
      ++line_no;
      if (line.rfind("  ", 0) == 0) continue;  // the licence header
      const size_t bar = line.find(" | ");
      std::istringstream head(line.substr(0, bar));
      std::string offset, lex_file, ss_type, w_hex;
      if (bar == std::string::npos || !(head >> offset >> lex_file >> ss_type >> w_hex))
        throw DataError(
            fmt::format("{}:{}: malformed synset line (expected 'offset lex_filenum "
                        "ss_type w_cnt word lex_id ... | gloss')",
                        path, line_no));
      const long n_words = std::strtol(w_hex.c_str(), nullptr, 16);
      std::vector<std::string> words;
      for (long k = 0; k < n_words; ++k) {
        std::string w, lex_id;
        if (!(head >> w >> lex_id))
          throw DataError(
              fmt::format("{}:{}: {} words announced, {} found", path, line_no, n_words, k));
        const size_t paren = w.find('(');  // adjective markers: word(a), word(p), word(ip)
        if (paren != std::string::npos) w = w.substr(0, paren);
        std::replace(w.begin(), w.end(), '_', ' ');
        words.push_back(w);
      }
      std::string definition;
      std::vector<std::string> examples;
      split_gloss(line.substr(bar + 3), definition, examples);
      if (definition.empty() || examples.empty()) continue;
      std::string context;
      for (const auto& e : examples) context += context.empty() ? e : "; " + e;
      const std::string lower_ctx = lower_ascii(context);
      for (const auto& w : words) {
        const std::string lw = lower_ascii(w);
        std::vector<std::string> forms = regular_forms(lw);
        auto it = exceptions.find(lw);
        if (it != exceptions.end()) forms.insert(forms.end(), it->second.begin(), it->second.end());
        size_t b = 0, e = 0;
        if (!find_form(lower_ctx, forms, b, e)) continue;
        QaExample ex;
        ex.id = fmt::format("wn:{}.{}:{}", ss_type, offset, w);
        ex.question = definition;
        ex.context = static_cast<int64_t>(c.contexts.size());
        ex.document = static_cast<int64_t>(c.documents.size());
        ex.answer_begin = static_cast<int64_t>(b);
        ex.answer_end = static_cast<int64_t>(e);
        ex.answers = {context.substr(b, e - b)};
        c.documents.push_back({fmt::format("{}.{} {}", ss_type, offset, w), "", "", -1});
        c.contexts.push_back(context);
        c.questions.push_back(std::move(ex));
        break;
      }
    }
  }
  if (c.questions.empty())
    throw DataError(
        fmt::format("corpus 'wordnet_qa': no question could be generated from '{}' "
                    "(expected WordNet 3.0 data files with example sentences)",
                    dir));
  return c;
}

}  // namespace relpos

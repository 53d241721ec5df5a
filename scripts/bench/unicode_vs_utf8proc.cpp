// Compares relpos's Python-derived Unicode tables (core/data/python_unicode.h) with utf8proc over
// every code point: the measurement behind keeping the generated tables (docs/architecture.md,
// "Hand-written where a library exists"). Build and run (needs libutf8proc-dev):
//   g++ -std=c++17 -O2 -I. scripts/bench/unicode_vs_utf8proc.cpp core/data/python_unicode.cpp
//   -lutf8proc -o /tmp/unicode_vs_utf8proc && /tmp/unicode_vs_utf8proc
#include <utf8proc.h>
#include <cstdio>
#include <cstdint>
#include <vector>
#include "core/data/python_unicode.h"
using namespace relpos;
static bool cat_in(int32_t cp, std::initializer_list<utf8proc_category_t> cats) {
  const auto c = utf8proc_category(cp);
  for (auto x : cats) if (c == x) return true;
  return false;
}
int main() {
  long letter = 0, number = 0, word = 0, space = 0, lower = 0;
  long first_letter = -1, first_lower = -1;
  for (int32_t cp = 0; cp <= 0x10FFFF; ++cp) {
    if (cp >= 0xD800 && cp <= 0xDFFF) continue;
    const bool L = cat_in(cp, {UTF8PROC_CATEGORY_LU, UTF8PROC_CATEGORY_LL, UTF8PROC_CATEGORY_LT,
                               UTF8PROC_CATEGORY_LM, UTF8PROC_CATEGORY_LO});
    const bool N = cat_in(cp, {UTF8PROC_CATEGORY_ND, UTF8PROC_CATEGORY_NL, UTF8PROC_CATEGORY_NO});
    const bool Z = cat_in(cp, {UTF8PROC_CATEGORY_ZS, UTF8PROC_CATEGORY_ZL, UTF8PROC_CATEGORY_ZP}) ||
                   (cp >= 9 && cp <= 13) || (cp >= 0x1c && cp <= 0x1f) || cp == 0x85;
    const bool W = L || N || cp == '_';
    if (L != python_unicode::is_letter(cp)) { ++letter; if (first_letter < 0) first_letter = cp; }
    if (N != python_unicode::is_number(cp)) ++number;
    if (W != python_unicode::is_word(cp)) ++word;
    if (Z != python_unicode::is_space(cp)) ++space;
    const auto lo = python_unicode::lower({static_cast<uint32_t>(cp)});
    const int32_t u = utf8proc_tolower(cp);
    if (lo.size() != 1 || static_cast<int32_t>(lo[0]) != u) { ++lower; if (first_lower < 0) first_lower = cp; }
  }
  std::printf("utf8proc %s (Unicode %s) vs relpos python_unicode (Unicode 14.0.0, Python 3.11)\n",
              utf8proc_version(), utf8proc_unicode_version());
  std::printf("code points that differ: letter (L) %ld (first U+%04lX), number (N) %ld, word (\\w) %ld, "
              "space %ld, lower() %ld (first U+%04lX)\n",
              letter, first_letter, number, word, space, lower, first_lower);
}

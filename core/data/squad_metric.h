// SQuAD v1.1 exact match and token F1, following the official evaluate-v1.1.py: answers are
// normalized (lower-cased, ASCII punctuation removed, the articles a/an/the removed, white space
// collapsed); F1 is over the normalized tokens (a multiset overlap); both take the maximum over
// the gold answers. Scores are in [0, 1] per question (the official script reports percent).
// Lower-casing is Python's str.lower() (all scripts, final sigma; core/data/python_unicode.h).
// Word characters (for the articles' \b) and white space (for split()) are Python 3's: \w is
// letters, numbers and '_' of any script, not symbols (€ ©) or combining marks; white space
// includes \x1c-\x1f, \x85, \xa0 and the Unicode space separators (core/data/python_unicode.h).
// A byte that is not valid UTF-8 (a span cut inside a character) counts as one character of
// its own, neither a word character nor space.
#pragma once

#include <string>
#include <vector>

namespace relpos {

std::string squad_normalize(const std::string& text);
double squad_exact_match(const std::string& prediction, const std::vector<std::string>& gold);
double squad_f1(const std::string& prediction, const std::vector<std::string>& gold);

}  // namespace relpos

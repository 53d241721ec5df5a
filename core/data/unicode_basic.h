// The few Unicode character classes BERT's basic tokenizer needs, without a Unicode library:
// white space, control/format characters, punctuation, CJK ideographs, and lower-casing with
// accent stripping for Latin-1, Latin Extended-A, Greek and Cyrillic (the result of NFD +
// removing combining marks + lower-casing for those blocks). Other scripts pass unchanged.
#pragma once

#include <cstdint>

namespace relpos::unicode {

bool is_whitespace(uint32_t cp);
bool is_control(uint32_t cp);  // removed by the basic tokenizer (Cc and Cf, but not \t \n \r)
bool is_punctuation(uint32_t cp);
bool is_cjk(uint32_t cp);
bool is_combining_mark(uint32_t cp);  // U+0300..U+036F
// Lower case without accents; 0 for a character that disappears (a combining mark).
uint32_t fold(uint32_t cp);

}  // namespace relpos::unicode

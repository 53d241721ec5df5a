#include "core/data/unicode_basic.h"

namespace relpos::unicode {

bool is_whitespace(uint32_t cp) {
  return cp == ' ' || cp == '\t' || cp == '\n' || cp == '\r' || cp == 0x00A0 || cp == 0x1680 ||
         (cp >= 0x2000 && cp <= 0x200A) || cp == 0x2028 || cp == 0x2029 || cp == 0x202F ||
         cp == 0x205F || cp == 0x3000;
}

bool is_control(uint32_t cp) {
  if (cp == '\t' || cp == '\n' || cp == '\r') return false;
  return cp < 0x20 || (cp >= 0x7F && cp <= 0x9F) || cp == 0x00AD ||
         (cp >= 0x200B && cp <= 0x200F) || (cp >= 0x202A && cp <= 0x202E) ||
         (cp >= 0x2060 && cp <= 0x2064) || cp == 0xFEFF || cp == 0xFFFD;
}

bool is_punctuation(uint32_t cp) {
  // BERT treats every non-alphanumeric ASCII character as punctuation.
  if ((cp >= 33 && cp <= 47) || (cp >= 58 && cp <= 64) || (cp >= 91 && cp <= 96) ||
      (cp >= 123 && cp <= 126))
    return true;
  return cp == 0xA1 || cp == 0xA7 || cp == 0xAB || cp == 0xB6 || cp == 0xB7 || cp == 0xBB ||
         cp == 0xBF || (cp >= 0x2010 && cp <= 0x2027) || (cp >= 0x2030 && cp <= 0x205E) ||
         (cp >= 0x3001 && cp <= 0x3003) || (cp >= 0x3008 && cp <= 0x3011) ||
         (cp >= 0x3014 && cp <= 0x301F) || (cp >= 0xFF01 && cp <= 0xFF0F);
}

bool is_cjk(uint32_t cp) {
  return (cp >= 0x4E00 && cp <= 0x9FFF) || (cp >= 0x3400 && cp <= 0x4DBF) ||
         (cp >= 0x20000 && cp <= 0x2CEAF) || (cp >= 0xF900 && cp <= 0xFAFF) ||
         (cp >= 0x2F800 && cp <= 0x2FA1F);
}

bool is_combining_mark(uint32_t cp) { return cp >= 0x0300 && cp <= 0x036F; }

namespace {

// Base letter of U+00C0..U+00FF after NFD ('-': no decomposition).
const char kLatin1[] = "aaaaaa-ceeeeiiii-nooooo--uuuuy--aaaaaa-ceeeeiiii-nooooo--uuuuy-y";
// Base letter of U+0100..U+017F after NFD ('-': no decomposition).
const char kLatinA[] =
    "aaaaaaccccccccdd--eeeeeeeeeegggggggghh--iiiiiiiii---jjkk-llllll----nnnnnn---oooooo--"
    "rrrrrrsssssssstttt--uuuuuuuuuuuuwwyyyzzzzzz-";

// Upper-case letters of Latin Extended-A pair with the next code point.
bool latin_a_upper(uint32_t cp) {
  if (cp <= 0x0137) return cp % 2 == 0 && cp != 0x0130;
  if (cp >= 0x0139 && cp <= 0x0148) return cp % 2 == 1;
  if (cp >= 0x014A && cp <= 0x0177) return cp % 2 == 0;
  if (cp >= 0x0179 && cp <= 0x017E) return cp % 2 == 1;
  return false;
}

}  // namespace

uint32_t fold(uint32_t cp) {
  if (cp < 0x80) return cp >= 'A' && cp <= 'Z' ? cp + 32 : cp;
  if (is_combining_mark(cp)) return 0;
  if (cp >= 0xC0 && cp <= 0xFF) {
    const char base = kLatin1[cp - 0xC0];
    if (base != '-') return static_cast<uint32_t>(base);
    return (cp <= 0xDE && cp != 0xD7) ? cp + 0x20 : cp;  // Æ Ð Ø Þ -> æ ð ø þ
  }
  if (cp >= 0x100 && cp <= 0x17F) {
    const char base = kLatinA[cp - 0x100];
    if (base != '-') return static_cast<uint32_t>(base);
    if (cp == 0x178) return 'y';
    return latin_a_upper(cp) ? cp + 1 : cp;
  }
  // Greek.
  switch (cp) {
    case 0x0386:
    case 0x03AC:
      return 0x03B1;
    case 0x0388:
    case 0x03AD:
      return 0x03B5;
    case 0x0389:
    case 0x03AE:
      return 0x03B7;
    case 0x038A:
    case 0x03AF:
    case 0x03AA:
    case 0x03CA:
    case 0x0390:
      return 0x03B9;
    case 0x038C:
    case 0x03CC:
      return 0x03BF;
    case 0x038E:
    case 0x03CD:
    case 0x03AB:
    case 0x03CB:
    case 0x03B0:
      return 0x03C5;
    case 0x038F:
    case 0x03CE:
      return 0x03C9;
    default:
      break;
  }
  if (cp >= 0x0391 && cp <= 0x03A9 && cp != 0x03A2) return cp + 0x20;
  // Cyrillic.
  if (cp >= 0x0400 && cp <= 0x040F)
    cp += 0x50;
  else if (cp >= 0x0410 && cp <= 0x042F)
    cp += 0x20;
  switch (cp) {
    case 0x0450:
    case 0x0451:
      return 0x0435;  // ѐ ё -> е
    case 0x0439:
    case 0x045D:
      return 0x0438;  // й ѝ -> и
    case 0x0457:
      return 0x0456;  // ї -> і
    case 0x045E:
      return 0x0443;  // ў -> у
    case 0x0453:
      return 0x0433;  // ѓ -> г
    case 0x045C:
      return 0x043A;  // ќ -> к
    default:
      return cp;
  }
}

}  // namespace relpos::unicode

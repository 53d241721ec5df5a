// SQuAD v1.1 EM/F1 on hand-made cases, the expected values worked out by hand from the
// official evaluate-v1.1.py rules.
#include <doctest/doctest.h>

#include <fstream>
#include <string>

#include "core/data/squad_metric.h"
#include "data_helpers.h"

using namespace relpos;

TEST_CASE("squad normalization: lower case, punctuation, articles, white space") {
  CHECK(squad_normalize("The  Quick, brown fox!") == "quick brown fox");
  CHECK(squad_normalize("an apple a day") == "apple day");
  CHECK(squad_normalize("theater Anna") == "theater anna");  // articles only as whole words
  CHECK(squad_normalize("A-team") == "ateam");  // punctuation is removed before articles
  CHECK(squad_normalize("the-a the") == "thea");
  CHECK(squad_normalize("  \tPeace\n") == "peace");
  CHECK(squad_normalize("\xC3\x89mile") == "\xC3\xA9mile");  // É -> é
  CHECK(squad_normalize("1,000.5") == "10005");
}

TEST_CASE("squad exact match and F1") {
  CHECK(squad_exact_match("the Eiffel Tower", {"Eiffel Tower"}) == 1.0);
  CHECK(squad_f1("the Eiffel Tower", {"Eiffel Tower"}) == 1.0);
  CHECK(squad_exact_match("Eiffel", {"Eiffel Tower"}) == 0.0);
  CHECK(squad_f1("Eiffel", {"Eiffel Tower"}) == doctest::Approx(2.0 / 3.0));  // P 1, R 1/2
  // Multiset overlap: pred x y y z, gold y y w -> 2 common; P 2/4, R 2/3, F1 4/7.
  CHECK(squad_f1("x y y z", {"y y w"}) == doctest::Approx(4.0 / 7.0));
  // The maximum over the gold answers.
  CHECK(squad_exact_match("1905", {"in 1905", "1905"}) == 1.0);
  CHECK(squad_f1("in the year 1905", {"1905", "year 1905"}) == doctest::Approx(0.8));  // P 2/3 R 1
  CHECK(squad_f1("Paris", {"London"}) == 0.0);
  CHECK(squad_f1("", {"London"}) == 0.0);
  // Both normalize to "": an exact match, but F1 counts no common token (as the official script).
  CHECK(squad_exact_match("The", {"a"}) == 1.0);
  CHECK(squad_f1("The", {"a"}) == 0.0);
  CHECK(squad_exact_match("x", {}) == 0.0);
}

// The expected values below follow the official script's rules in Python 3: remove_articles is
// re.sub(r'\b(a|an|the)\b', ' ', text), where \b lies between a \w and a \W character and \w is
// [0-9A-Za-z_] plus every character with str.isalnum() (letters and numbers of any script);
// white_space_fix is ' '.join(text.split()), which splits at every str.isspace() character.
TEST_CASE("squad normalization: Python's word characters decide where an article ends") {
  // Symbols are not \w: "the" before € © ° ✓ is a whole word, so it goes.
  CHECK(squad_normalize("the\xE2\x82\xAC") == "\xE2\x82\xAC");  // the€ -> €
  CHECK(squad_exact_match("the\xE2\x82\xAC", {"\xE2\x82\xAC"}) == 1.0);
  CHECK(squad_normalize("a\xC2\xA9"
                        "b") == "\xC2\xA9"
                                "b");                                    // a©b -> ©b
  CHECK(squad_normalize("the\xC2\xB0 north") == "\xC2\xB0 north");     // the° north -> ° north
  CHECK(squad_normalize("the\xE2\x9C\x93") == "\xE2\x9C\x93");         // the✓ -> ✓
  // A combining mark (U+0301, category Mn) is not \w either: "the" + U+0301 loses "the".
  CHECK(squad_normalize("the\xCC\x81") == "\xCC\x81");
  // U+200B ZERO WIDTH SPACE (Cf) is neither \w nor white space.
  CHECK(squad_normalize("the\xE2\x80\x8B"
                        "end") == "\xE2\x80\x8B"
                                  "end");
  // Letters and numbers of any script are \w: the article is part of a longer word and stays.
  CHECK(squad_normalize("the\xC2\xB2") == "the\xC2\xB2");  // ² (No)
  CHECK(squad_normalize("the\xC2\xBD") == "the\xC2\xBD");  // ½ (No)
  CHECK(squad_normalize("the\xC3\xA9") == "the\xC3\xA9");  // é (Ll)
  CHECK(squad_normalize("\xCE\xB1the") == "\xCE\xB1the");  // αthe (Ll before)
  CHECK(squad_normalize("the\xD9\xA3") == "the\xD9\xA3");  // ARABIC-INDIC DIGIT THREE (Nd)
  // '_' is \w, but string.punctuation removes it before the articles are looked for.
  CHECK(squad_normalize("the_x") == "thex");
}

TEST_CASE("squad normalization: white space is what Python's str.split() splits at") {
  // \x1c-\x1f (file/group/record/unit separators), \x85 (NEL), \xa0 (no-break space) and the
  // Unicode space separators are str.isspace(); they separate words and articles.
  CHECK(squad_normalize("north\x1f"
                        "east") == "north east");
  CHECK(squad_normalize("the\x1cwall") == "wall");
  CHECK(squad_normalize("a\xC2\x85"
                        "b") == "b");                                  // a NEL b
  CHECK(squad_normalize("x\xC2\xA0the\xC2\xA0y") == "x y");          // no-break spaces
  CHECK(squad_normalize("the\xE3\x80\x80"
                        "end") == "end");                              // U+3000
  CHECK(squad_normalize("the\xE2\x80\x83"
                        "a\xE2\x80\x83") == "");                       // U+2003 EM SPACE
  CHECK(squad_exact_match("north\x1e"
                          "east",
                          {"North East"}) == 1.0);
  CHECK(squad_f1("north\x1d"
                 "east",
                 {"east"}) == doctest::Approx(2.0 / 3.0));  // tokens north, east: P 1/2, R 1
}

TEST_CASE("squad normalization: a byte that is not valid UTF-8 is one character of its own") {
  // A predicted span can be cut inside a multi-byte character (the bytes tokenizer). Such a
  // byte has no Python equivalent; relpos keeps it as one character, neither \w nor space, and
  // never lets it swallow the characters after it (0xA9 was read as the lead of 4 bytes).
  CHECK(squad_normalize("\xA9"
                        "ABC Def") == "\xA9"
                                      "abc def");
  CHECK(squad_f1("\xA9"
                 "abc def",
                 {"abc def"}) == doctest::Approx(0.5));  // tokens "\xA9abc", "def": P 1/2, R 1/2
  CHECK(squad_normalize("caf\xC3") == "caf\xC3");               // a truncated 2-byte character
  CHECK(squad_normalize("\xC3\xA9t\xC3 the end") == "\xC3\xA9t\xC3 end");
  CHECK(squad_normalize("the\xE2\x82") == "\xE2\x82");  // two stray bytes, each not \w
  CHECK(squad_normalize("x\xC0\xAFy") == "x\xC0\xAFy");   // an overlong '/' is not punctuation
}

namespace {

std::string from_hex(const std::string& hex) {
  std::string out;
  for (size_t i = 0; i + 1 < hex.size(); i += 2)
    out += static_cast<char>(std::stoi(hex.substr(i, 2), nullptr, 16));
  return out;
}

}  // namespace

// Golden values from Python itself (tests/reference/make_squad_normalize_golden.py): str.lower()
// of any script, with final sigma, U+0130 -> i + U+0307, Kelvin/Ohm signs, Deseret, Cherokee.
TEST_CASE("squad normalization matches Python on the golden strings") {
  std::ifstream in(test::data_fixture("squad_normalize_golden.tsv"));
  REQUIRE(in);
  std::string line;
  int checked = 0;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    const size_t tab = line.find('\t');
    REQUIRE(tab != std::string::npos);
    const std::string input = from_hex(line.substr(0, tab));
    const std::string expected = from_hex(line.substr(tab + 1));
    CHECK_MESSAGE(squad_normalize(input) == expected, "input hex " << line.substr(0, tab));
    ++checked;
  }
  CHECK(checked == 420);
}

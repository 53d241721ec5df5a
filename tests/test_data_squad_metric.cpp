// SQuAD v1.1 EM/F1 on hand-made cases, the expected values worked out by hand from the
// official evaluate-v1.1.py rules.
#include <doctest/doctest.h>

#include "core/data/squad_metric.h"

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

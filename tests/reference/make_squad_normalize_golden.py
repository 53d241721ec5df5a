#!/usr/bin/env python3
"""Writes tests/fixtures/data/squad_normalize_golden.tsv: strings and their SQuAD v1.1 answer
normalization as Python 3 computes it, for tests/test_data_squad_metric.cpp.

The normalization follows the rules of the official evaluate-v1.1.py, restated here: lower-case
the whole string with str.lower(), drop every character of string.punctuation, replace each
whole-word article (regex \\b(a|an|the)\\b) by a space, then join str.split() with single spaces.

Each line: the input and the expected output as hex of their UTF-8 bytes, tab-separated.
The strings are hand-picked cases followed by seeded random strings drawn from characters whose
lower-casing or classes are easy to get wrong (final sigma, U+0130, Kelvin and Ohm signs,
Georgian, Cherokee, Deseret, case-ignorable marks).

Usage: python3 tests/reference/make_squad_normalize_golden.py > tests/fixtures/data/squad_normalize_golden.tsv
"""
import random
import re
import string
import sys
import unicodedata

PUNCT = set(string.punctuation)
ARTICLE = re.compile(r"\b(a|an|the)\b")


def normalize(s):
    s = s.lower()
    s = "".join(c for c in s if c not in PUNCT)
    s = ARTICLE.sub(" ", s)
    return " ".join(s.split())


HAND = [
    "The Quick, brown fox!",
    "\u039f\u0394\u03a5\u03a3\u03a3\u0395\u03a5\u03a3",  # ΟΔΥΣΣΕΥΣ: final sigma at the end only
    "\u03a3",  # a lone capital sigma is not final
    "A\u03a3 \u03a3A \u03a3\u03a3",
    "A\u03a3'",  # an apostrophe is case-ignorable: the sigma is still final
    "A\u03a3'B",  # ... and B after it is cased: not final
    "A'\u03a3",
    "1\u03a3",  # a digit is not cased: not final
    "\u0391\u0301\u03a3\u0301",  # combining acute accents are skipped
    "\u0130stanbul",  # U+0130 lowers to i + U+0307
    "the \u0130",
    "\u212a\u2126\u1e9e",  # Kelvin sign, Ohm sign, capital sharp s
    "\u01c4\u01c5\u01c6",  # DŽ Dž dž
    "\u10a0\u10a1 \u1c90",  # Georgian Asomtavruli and Mtavruli
    "\u13a0\u13a1",  # Cherokee
    "\U00010400\U00010401",  # Deseret
    "\u041c\u043e\u0441\u043a\u0432\u0430 THE \u0410",
    "\u00c9mile \u00d7 \u00de",
    "a\u00adb the\u00ad",  # soft hyphen: case-ignorable, not a word character
    "THE\u00a0END",
]


def random_strings(n, seed):
    pool = (list("aAnNtThHeE xX.'-_1,") + ["\u03a3", "\u03c3", "\u03c2", "\u0301", "\u00ad",
            "\u0130", "\u0131", "\u212a", "\u2126", "\u10a0", "\u13a0", "\U00010400", "\u00a0",
            "\u3000", "\u2019", "\u02b0", "\u0345", "\u1f88", "\u0399", "\u20ac", "\u00b2"])
    rng = random.Random(seed)
    return ["".join(rng.choice(pool) for _ in range(rng.randint(1, 10))) for _ in range(n)]


def main():
    print(f"# made by tests/reference/make_squad_normalize_golden.py, Python "
          f"{sys.version_info.major}.{sys.version_info.minor}, Unicode {unicodedata.unidata_version}")
    for s in HAND + random_strings(400, 2020):
        print(s.encode().hex() + "\t" + normalize(s).encode().hex())


if __name__ == "__main__":
    main()

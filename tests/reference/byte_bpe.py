#!/usr/bin/env python3
"""Independent reference for relpos's byte-level BPE tokenizer (GPT-2 / RoBERTa vocab.json +
merges.txt; core/data/tokenizer_byte_bpe.cpp).

Written from the description in Radford et al. 2019 ("Language Models are Unsupervised Multitask
Learners", section 2.2) and the published format of the two files, with the standard library
only; it shares no code with relpos and none with Hugging Face:

  * bytes are first mapped to printable characters: the 188 bytes that are printable Latin-1
    ('!'..'~', U+00A1..U+00AC, U+00AE..U+00FF) stand for themselves, the other 68 take the
    code points 256, 257, ... in byte order (so the space byte is U+0120 'Ġ');
  * text is pre-split, left to right, into the first of these that matches at each position:
    a contraction 's 't 're 've 'm 'll 'd; an optional space and a run of letters (Unicode
    category L*); an optional space and a run of numbers (N*); an optional space and a run of
    characters that are neither letters, numbers nor white space; a run of white space not
    followed by a non-space character (so the last space of a run goes with the next word);
    any run of white space. White space is the Unicode White_Space property (str.isspace()
    minus U+001C..U+001F, which the pattern's \\s of the `regex` module does not match);
  * each piece, as mapped characters, is merged pair by pair, always the adjacent pair that
    comes first in merges.txt, until no adjacent pair is listed; each resulting symbol is
    looked up in vocab.json.

  byte_bpe.py encode DIR TEXT         prints the ids (JSON) of TEXT with DIR's vocab.json and
                                      merges.txt
  byte_bpe.py encode-file DIR PATH    the same for the contents of PATH (UTF-8)
  byte_bpe.py unicode-text N SEED     N random characters from many scripts with spaces,
                                      contractions, digits and newlines between them (wrote
                                      tests/fixtures/data/bpe_unicode.txt: 6000 7)
"""
import json
import os
import sys
import unicodedata


def byte_alphabet():
    """The printable character standing for each byte value 0..255."""
    printable = [b for b in range(256)
                 if 0x21 <= b <= 0x7E or 0xA1 <= b <= 0xAC or 0xAE <= b <= 0xFF]
    out, extra = {}, 0
    for b in range(256):
        if b in printable:
            out[b] = chr(b)
        else:
            out[b] = chr(256 + extra)
            extra += 1
    return out


def byte_symbols_in_vocab_order():
    """GPT-2's vocab.json lists the printable bytes first, then the remapped ones."""
    alpha = byte_alphabet()
    first = [alpha[b] for b in range(256) if ord(alpha[b]) == b]
    rest = [alpha[b] for b in range(256) if ord(alpha[b]) != b]
    return first + rest


def is_letter(c):
    return unicodedata.category(c).startswith("L")


def is_number(c):
    return unicodedata.category(c).startswith("N")


def is_white(c):
    return c.isspace() and c not in "\x1c\x1d\x1e\x1f"


CONTRACTIONS = ("'s", "'t", "'re", "'ve", "'m", "'ll", "'d")


def run_of(text, i, pred):
    j = i
    while j < len(text) and pred(text[j]):
        j += 1
    return j


def pretokenize(text):
    pieces, i, n = [], 0, len(text)
    other = lambda c: not (is_letter(c) or is_number(c) or is_white(c))  # noqa: E731
    while i < n:
        hit = next((c for c in CONTRACTIONS if text.startswith(c, i)), None)
        if hit:
            pieces.append(hit)
            i += len(hit)
            continue
        j = i + 1 if text[i] == " " else i
        end = None
        for pred in (is_letter, is_number, other):
            if j < n and pred(text[j]):
                end = run_of(text, j, pred)
                break
        if end is not None:
            pieces.append(text[i:end])
            i = end
            continue
        # White space (text[i] is white here: a lone space before a letter was taken above).
        end = run_of(text, i, is_white)
        if end < n and end - i >= 2:
            end -= 1  # leave the last one for the word that follows
        pieces.append(text[i:end])
        i = end
    return pieces


def read_vocab(d):
    with open(os.path.join(d, "vocab.json"), encoding="utf-8") as f:
        return json.load(f)


def read_ranks(d):
    ranks = {}
    with open(os.path.join(d, "merges.txt"), encoding="utf-8") as f:
        for line in f.read().split("\n"):
            if not line or line.startswith("#version"):
                continue
            a, b = line.split(" ")
            ranks.setdefault((a, b), len(ranks))
    return ranks


def merge_word(symbols, ranks):
    symbols = list(symbols)
    while len(symbols) > 1:
        pairs = [(ranks.get((symbols[k], symbols[k + 1])), k) for k in range(len(symbols) - 1)]
        listed = [p for p in pairs if p[0] is not None]
        if not listed:
            break
        best = min(listed)[0]
        a, b = next((symbols[k], symbols[k + 1]) for r, k in pairs if r == best)
        merged, k = [], 0
        while k < len(symbols):
            if k + 1 < len(symbols) and symbols[k] == a and symbols[k + 1] == b:
                merged.append(a + b)
                k += 2
            else:
                merged.append(symbols[k])
                k += 1
        symbols = merged
    return symbols


def tokens(text, ranks):
    alpha = byte_alphabet()
    out = []
    for piece in pretokenize(text):
        out.extend(merge_word([alpha[b] for b in piece.encode("utf-8")], ranks))
    return out


def encode(text, vocab, ranks):
    return [vocab[t] for t in tokens(text, ranks)]


def learn_merges(corpus, n):
    """n merges learned on corpus by the usual greedy pair counting (ties: first seen)."""
    alpha = byte_alphabet()
    words = [[alpha[b] for b in p.encode("utf-8")] for p in pretokenize(corpus)]
    merges = []
    for _ in range(n):
        counts = {}
        for w in words:
            for k in range(len(w) - 1):
                counts[(w[k], w[k + 1])] = counts.get((w[k], w[k + 1]), 0) + 1
        if not counts:
            break
        best = max(counts.items(), key=lambda kv: kv[1])[0]  # dicts keep first-seen order
        merges.append(best)
        ranks = {best: 0}
        words = [merge_word(w, ranks) for w in words]
    return merges


# Blocks the random text draws from: ASCII, Latin-1 and Latin Extended, Greek, Cyrillic, Hebrew
# and Arabic, Devanagari, general punctuation, letterlike symbols and number forms, CJK
# punctuation and kana, CJK ideographs, Hangul, emoji, fullwidth forms. U+0085 and U+FEFF are
# not among them: JavaScript's \s (the oracle's) and the White_Space property disagree on them.
BLOCKS = [(0x20, 0x7E), (0xA0, 0x24F), (0x370, 0x3FF), (0x400, 0x4FF), (0x590, 0x6FF),
          (0x900, 0x97F), (0x2000, 0x206F), (0x2100, 0x218F), (0x3000, 0x30FF), (0x4E00, 0x4FFF),
          (0xAC00, 0xAC80), (0x1F300, 0x1F64F), (0xFF00, 0xFFEF)]


def unicode_text(n, seed):
    import random
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        a, b = rng.choice(BLOCKS)
        c = chr(rng.randint(a, b))
        if unicodedata.category(c) in ("Cs", "Cn"):
            continue  # surrogates and unassigned code points
        r = rng.random()
        if r < 0.15:
            out.append(" ")
        elif r < 0.18:
            out.append(rng.choice(["'s", "'ll", "'re", "  ", "\n", "\t", " 123", "'d", "'t"]))
        out.append(c)
    return "".join(out) + "\n"


def main():
    if len(sys.argv) == 4 and sys.argv[1] == "unicode-text":
        sys.stdout.write(unicode_text(int(sys.argv[2]), int(sys.argv[3])))
        return 0
    if len(sys.argv) != 4 or sys.argv[1] not in ("encode", "encode-file"):
        print(__doc__, file=sys.stderr)
        return 2
    d, text = sys.argv[2], sys.argv[3]
    if sys.argv[1] == "encode-file":
        with open(text, encoding="utf-8", newline="") as f:
            text = f.read()
    print(json.dumps(encode(text, read_vocab(d), read_ranks(d))))
    return 0


if __name__ == "__main__":
    sys.exit(main())

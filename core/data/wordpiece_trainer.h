// Training a WordPiece vocabulary (a BERT vocab.txt) on a corpus, so that a BERT-style run on
// one's own text needs no vocabulary made elsewhere (docs/data.md, "WordPiece vocabularies").
//
// The words are those of BERT's basic tokenization (wordpiece_basic_words: white space and
// punctuation split, lower-cased and accent-stripped with lower_case), counted over the texts;
// words over 100 characters are left out (the tokenizer makes them [UNK]). Every word starts as
// its characters, the first as itself and the others with the continuation prefix "##"
// ("hug" -> h ##u ##g); these characters are the alphabet. Then the most frequent adjacent pair
// (a, b) over the words (each weighted by its count) is merged into one symbol a + b without
// b's "##" (h ##u -> hu; ##u ##g -> ##ug), everywhere, until the vocabulary has vocab_size
// tokens or no pair occurs min_frequency times: byte-pair merges with WordPiece's "##"
// continuations, as Hugging Face's WordPiece trainer makes BERT vocabularies. (The likelihood
// score count(ab) / (count(a) count(b)) was tried first: on SOTU it spent an 8000-token
// vocabulary spelling out rare words letter by letter, "b bu bub ... bubonic", before "the" was
// a token.) Ties go to the merged text first in byte order, so the result is a function of the
// texts and the options alone.
//
// The vocabulary: [PAD] [UNK] [CLS] [SEP] [MASK], the alphabet in byte order, then the merged
// symbols in the order they were made (a symbol two merges spell alike is listed once).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace relpos {

struct WordPieceTrainOptions {
  int64_t vocab_size = 4000;  // tokens in all, the five special tokens included
  bool lower_case = true;     // as data.lower_case: the words the tokenizer will see
  int64_t min_frequency = 2;  // a pair is merged only when it occurs at least this often
};

// The vocabulary's lines. Throws DataError when the texts hold no word, or when vocab_size is
// below the five special tokens plus the alphabet (the message names both numbers). A corpus
// too small to fill vocab_size gives fewer tokens.
std::vector<std::string> train_wordpiece_vocab(const std::vector<std::string>& texts,
                                               const WordPieceTrainOptions& opt);

}  // namespace relpos

// The tokenizer files of a Hugging Face model folder, and how its token ids map onto relpos's.
// relpos's tokenizers give the special tokens [PAD] [UNK] [CLS] [SEP] [MASK] ids 0..4:
//   BERT vocab.txt     relpos's WordPiece numbers the five specials 0..4 and every other line
//                      from 5 in file order, so the embedding rows are reordered on import
//                      (BERT's own vocab.txt has [PAD] on line 0 and [UNK] [CLS] [SEP] [MASK]
//                      on lines 100..103);
//   ALBERT spiece.model  <pad> <unk> [CLS] [SEP] [MASK] are already ids 0..4: no reordering;
//   GPT-2 / RoBERTa    vocab.json + merges.txt through relpos's byte-level BPE, which numbers
//                      RoBERTa's <pad> <unk> <s> </s> <mask> (GPT-2: <|endoftext|> for each of
//                      the five) 0..4 and the other tokens 5.. in vocab.json id order, so the
//                      rows are reordered (and GPT-2's <|endoftext|> row copied to five ids).
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "core/hf/hf_config.h"

namespace relpos {

struct ImportedVocab {
  std::string tokenizer;  // data.tokenizer of the run: wordpiece | sentencepiece | byte_bpe
  // Files copied into the run folder: (source path, name in the run folder).
  std::vector<std::pair<std::string, std::string>> copies;
  std::vector<int64_t> rows;    // rows[i]: the checkpoint's embedding row of relpos id i; empty: same
  bool lower_case = true;       // wordpiece
  int64_t vocab_size = 0;       // tokens of the tokenizer
  std::vector<std::string> notes;
};

// Reads and checks the tokenizer files of `hf.dir` for its architecture. Throws DataError naming
// the file: missing (vocab.txt for BERT, spiece.model for ALBERT), unreadable by relpos's
// tokenizer, or with a token count other than config.json's vocab_size.
ImportedVocab import_vocab(const HfModelConfig& hf);

// relpos's id order for the lines of a BERT vocab.txt: the checkpoint row of each relpos id.
// Throws DataError naming the file when a special token is missing.
std::vector<int64_t> wordpiece_rows(const std::string& vocab_path);

}  // namespace relpos

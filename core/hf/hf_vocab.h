// The tokenizer files of a Hugging Face model folder, and how its token ids map onto relpos's.
// relpos's tokenizers give the special tokens [PAD] [UNK] [CLS] [SEP] [MASK] ids 0..4:
//   BERT vocab.txt     relpos's WordPiece numbers the five specials 0..4 and every other line
//                      from 5 in file order, so the embedding rows are reordered on import
//                      (BERT's own vocab.txt has [PAD] on line 0 and [UNK] [CLS] [SEP] [MASK]
//                      on lines 100..103);
//   byte vocab.txt     the five specials and exactly the 256 tokens <0x00> .. <0xFF> (what
//                      `relpos export` writes for a byte-level run): relpos's bytes tokenizer,
//                      id 5 + byte value, the rows reordered when the lines are in another order;
//   a BERT folder without vocab.txt: spiece.model (a SentencePiece run's export) or
//                      vocab.json + merges.txt (a byte-level BPE run's), read as below;
//   ALBERT spiece.model  <pad> <unk> [CLS] [SEP] [MASK] are already ids 0..4: no reordering;
//   GPT-2 / RoBERTa    vocab.json + merges.txt through relpos's byte-level BPE, which numbers
//                      RoBERTa's <pad> <unk> <s> </s> <mask> (GPT-2: <|endoftext|> for each of
//                      the five) 0..4 and the other tokens 5.. in vocab.json id order, so the
//                      rows are reordered (and GPT-2's <|endoftext|> row copied to five ids).
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "core/config/config.h"
#include "core/hf/hf_config.h"

namespace relpos {

struct ImportedVocab {
  std::string tokenizer;  // data.tokenizer of the run: wordpiece | bytes | sentencepiece | byte_bpe
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

// The vocab.txt of a byte-level run: [PAD] [UNK] [CLS] [SEP] [MASK], then <0x00> .. <0xFF> (two
// upper-case hex digits), in relpos's id order (token id = 5 + byte value).
std::vector<std::string> byte_vocab_lines();

// The tokenizer files `relpos export` writes for a run, in relpos's id order so that token ids
// are the same on both sides: (name in the folder, contents). `cfg` is the run's config after
// use_run_tokenizer, `vocab` the rows of its embeddings, `max_positions` the exported model's.
//   wordpiece      vocab.txt, tokenizer_config.json (BertTokenizer, do_lower_case)
//   bytes          vocab.txt of byte_vocab_lines()
//   sentencepiece  spiece.model (the run's tokenizer.model)
//   byte_bpe       vocab.json (token -> relpos id) and merges.txt
// Throws DataError when the run's tokenizer files are missing or do not give `vocab` tokens.
struct ExportedVocab {
  std::vector<std::pair<std::string, std::string>> files;
  std::vector<std::string> notes;
};
ExportedVocab export_vocab(const Config& cfg, int64_t vocab, int64_t max_positions);

}  // namespace relpos

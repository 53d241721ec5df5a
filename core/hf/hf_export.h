// `relpos export RUN --format hf --out DIR`: a BERT-shaped relpos run as a Hugging Face
// BertForMaskedLM folder (config.json, model.safetensors, and the tokenizer's files: vocab.txt
// + tokenizer_config.json for wordpiece, a byte vocab.txt for bytes, spiece.model for
// sentencepiece, vocab.json + merges.txt for byte_bpe; export_vocab in hf_vocab.h), which
// `BertForMaskedLM.from_pretrained(DIR)` loads without code. config.json also carries the
// run's data, task and evaluation settings under "relpos" (exported_run_settings), which
// `relpos import` restores.
// Exportable: a post-LN encoder with an MLM head, E = D, no layer sharing, and one position
// encoding Hugging Face's BERT expresses:
//   learned                      -> position_embedding_type absolute
//   huang_m4, clip K             -> relative_key_query, max_position_embeddings K + 1
//   shaw without values, clip K  -> relative_key, max_position_embeddings K + 1
// where the relative ones must never have clipped in the run (K >= task.seq_len - 1), since
// Hugging Face's table has one row per distance.
// The tokenizer files are written in relpos's id order, so token ids are the same on both sides.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/config/config.h"

namespace relpos {

struct HfExportOptions {
  std::string run;         // the relpos run folder
  std::string out;         // the Hugging Face folder to write
  bool overwrite = false;  // replace a folder with config.json at `out`
};

struct HfExportReport {
  std::string position_embedding_type;
  std::vector<std::string> files;  // written into `out`
  std::vector<std::string> notes;
};

// config.json's "relpos" object: {"format": 1, "about", "tokenizer", and the run's resolved
// sections kExportedSections, scalars as strings}. `relpos import` restores those sections
// (except what the tokenizer files and the model fix), so the imported run reads the documents
// and splits the run read (docs/pretrained.md).
inline constexpr const char* kExportedSections[] = {"data", "task", "eval"};
nlohmann::ordered_json exported_run_settings(const Config& cfg);

// The run's encodings that can be exported, with the Hugging Face type each becomes (for
// messages and `relpos export --help`).
std::string hf_exportable_variants();

// Throws ConfigError naming every reason when the run cannot be expressed as BertForMaskedLM,
// SchemaError/DataError for an unreadable run, RunError for writing; `out` is then not created.
HfExportReport export_hf_model(const HfExportOptions& opts);

}  // namespace relpos

// `relpos export RUN --format hf --out DIR`: a BERT-shaped relpos run as a Hugging Face
// BertForMaskedLM folder (config.json, model.safetensors, and vocab.txt + tokenizer_config.json
// for a wordpiece run), which `BertForMaskedLM.from_pretrained(DIR)` loads without code.
// Exportable: a post-LN encoder with an MLM head, E = D, no layer sharing, and one position
// encoding Hugging Face's BERT expresses:
//   learned                      -> position_embedding_type absolute
//   huang_m4, clip K             -> relative_key_query, max_position_embeddings K + 1
//   shaw without values, clip K  -> relative_key, max_position_embeddings K + 1
// where the relative ones must never have clipped in the run (K >= task.seq_len - 1), since
// Hugging Face's table has one row per distance.
// vocab.txt is written in relpos's id order, so token ids are the same on both sides.
#pragma once

#include <string>
#include <vector>

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

// The run's encodings that can be exported, with the Hugging Face type each becomes (for
// messages and `relpos export --help`).
std::string hf_exportable_variants();

// Throws ConfigError naming every reason when the run cannot be expressed as BertForMaskedLM,
// SchemaError/DataError for an unreadable run, RunError for writing; `out` is then not created.
HfExportReport export_hf_model(const HfExportOptions& opts);

}  // namespace relpos

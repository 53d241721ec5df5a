// Which tokenizer a run uses, and the copy of it a run folder keeps (trainer.h).
#include <fmt/format.h>

#include <filesystem>
#include <optional>

#include "core/data/task.h"
#include "core/task/task_registry.h"
#include "core/train/run_folder.h"
#include "core/train/trainer.h"
#include "core/util/errors.h"
#include "core/util/text_util.h"

namespace relpos {
namespace fs = std::filesystem;

namespace {

// Whether the task of `type` reads text through data.tokenizer (not the synthetic tasks, which
// make their own symbols); a task the registry does not know is taken to.
bool tokenized(const std::string& type) {
  const TaskInfo* t = TaskRegistry::get().find(type);
  return !t || t->tokenized;
}

}  // namespace

void use_run_tokenizer(const std::string& dir, Config& cfg) {
  if (!tokenized(cfg.task.type)) return;
  if (cfg.data.tokenizer == "sentencepiece" && fs::exists(run_tokenizer_path(dir)))
    cfg.data.tokenizer_file = run_tokenizer_path(dir);
  // A run imported from a BERT folder keeps its vocab.txt, one from GPT-2 or RoBERTa its
  // vocab.json and merges.txt (`relpos import`): the copies in the folder, wherever the folder
  // was moved since.
  // So does a run whose WordPiece vocabulary relpos trained (keep_run_tokenizer).
  const fs::path vocab = run_vocab_path(dir);
  if (cfg.data.tokenizer == "wordpiece" && fs::exists(vocab)) cfg.data.vocab_file = vocab.string();
  const fs::path json = fs::path(dir) / "vocab.json", merges = fs::path(dir) / "merges.txt";
  if (cfg.data.tokenizer == "byte_bpe" && fs::exists(json) && fs::exists(merges)) {
    cfg.data.vocab_file = json.string();
    cfg.data.merges_file = merges.string();
  }
}

namespace {

// Whether two files are the same path or hold the same bytes; false when either cannot be read.
bool same_contents(const std::string& x, const std::string& y) {
  if (x == y) return true;
  try {
    return read_file(x, "vocabulary") == read_file(y, "vocabulary");
  } catch (const DataError&) {
    return false;
  }
}

// Whether the user chose `key`: a config file other than base.yaml, or --set. A key that only
// base.yaml or the built-in defaults give is no choice, and a fine-tune takes the pre-trained
// run's value for it.
bool chosen(const SourceMap* sources, const std::string& key) {
  if (!sources) return true;
  const std::optional<SourceLocation> loc = sources->exact(key);
  return loc && !loc->file.empty() && fs::path(loc->file).filename() != "base.yaml";
}

[[noreturn]] void mismatch(const std::string& src_dir, const std::string& what) {
  throw ConfigError(
      fmt::format("--init-from {}: {}", src_dir, what),
      fmt::format("token embeddings only mean something with the tokenizer they were trained "
                  "with: set data.tokenizer and its options as in {}",
                  run_config_path(src_dir)));
}

}  // namespace

Config data_config_for_run(const Config& cfg, const TrainOptions& opts,
                           const SourceMap* sources) {
  Config c = cfg;
  if (!tokenized(cfg.task.type)) return c;
  if (opts.resume) {
    use_run_tokenizer(opts.out_dir, c);
    return c;
  }
  if (opts.init_from.empty()) return c;
  Config src = load_run_config(opts.init_from).config;
  use_run_tokenizer(opts.init_from, src);  // an imported run's vocab.txt, where it is now
  // A synthetic pre-training has its own vocabulary; nothing to match (its embeddings do not fit).
  if (!tokenized(src.task.type)) return c;
  const DataConfig& a = src.data;
  DataConfig& b = c.data;
  // The tokenizer settings the user did not choose are the pre-trained run's: its token
  // embeddings only mean something with the tokenizer they were trained with.
  // (A SentencePiece model comes with its settings below.)
  if (a.tokenizer != b.tokenizer && !chosen(sources, "data.tokenizer")) b.tokenizer = a.tokenizer;
  if (b.tokenizer == "wordpiece" && a.tokenizer == "wordpiece") {
    // No vocabulary given would train a new one, whose ids do not match the embeddings.
    if (!chosen(sources, "data.vocab_file") || b.vocab_file.empty()) b.vocab_file = a.vocab_file;
    if (!chosen(sources, "data.lower_case")) b.lower_case = a.lower_case;
  }
  if (b.tokenizer == "byte_bpe" && a.tokenizer == "byte_bpe") {
    if (!chosen(sources, "data.vocab_file")) b.vocab_file = a.vocab_file;
    if (!chosen(sources, "data.merges_file")) b.merges_file = a.merges_file;
  }
  if (a.tokenizer != b.tokenizer)
    mismatch(opts.init_from, fmt::format("the pre-trained run tokenizes with {}, this config with {}",
                                         a.tokenizer, b.tokenizer));
  if (b.tokenizer == "wordpiece") {
    const bool same_vocab = same_contents(a.vocab_file, b.vocab_file);
    if (!same_vocab || a.lower_case != b.lower_case)
      mismatch(opts.init_from,
               fmt::format("the pre-trained run's WordPiece vocabulary is {} (lower_case {}), "
                           "this config's {} (lower_case {})",
                           a.vocab_file, a.lower_case, b.vocab_file, b.lower_case));
  }
  if (b.tokenizer == "byte_bpe") {
    const bool same =
        same_contents(a.vocab_file, b.vocab_file) && same_contents(a.merges_file, b.merges_file);
    if (!same)
      mismatch(opts.init_from,
               fmt::format("the pre-trained run's byte-level BPE is {} + {}, this config's {} + {}",
                           a.vocab_file, a.merges_file, b.vocab_file, b.merges_file));
  }
  if (b.tokenizer == "sentencepiece" && b.tokenizer_file.empty()) {
    const std::string kept = run_tokenizer_path(opts.init_from);
    if (fs::exists(kept) || !a.tokenizer_file.empty()) {
      c.data.tokenizer_file = fs::exists(kept) ? kept : a.tokenizer_file;
      // The settings that describe that model: the pre-trained run's.
      c.data.vocab_size = a.vocab_size;
      c.data.sentencepiece_model = a.sentencepiece_model;
      c.data.sentencepiece_byte_fallback = a.sentencepiece_byte_fallback;
    } else {
      throw ConfigError(
          fmt::format("--init-from {}: the pre-trained run has no tokenizer.model, and this "
                      "run would train a new SentencePiece model on its own corpus, whose ids "
                      "do not match the pre-trained embeddings",
                      opts.init_from),
          "set data.tokenizer_file to the SentencePiece model the pre-trained run used: its "
          "`data:` line (train.log in a sweep) names it as sentencepiece:<hash>, the file is "
          "<data.cache_dir>/tokenizers/sentencepiece-<hash>.model");
    }
  }
  return c;
}

Config with_tokenizer_settings(const Config& cfg, const Config& data_cfg) {
  Config c = cfg;
  const DataConfig& d = data_cfg.data;
  // A tokenizer taken from the pre-trained run (the config chose none): its kind and vocabulary.
  if (d.tokenizer != c.data.tokenizer) {
    c.data.tokenizer = d.tokenizer;
    c.data.lower_case = d.lower_case;
  }
  if (c.data.vocab_file.empty()) c.data.vocab_file = d.vocab_file;
  if (c.data.merges_file.empty()) c.data.merges_file = d.merges_file;
  c.data.vocab_size = d.vocab_size;
  c.data.sentencepiece_model = d.sentencepiece_model;
  c.data.sentencepiece_byte_fallback = d.sentencepiece_byte_fallback;
  return c;
}

void keep_run_tokenizer(const Tokenizer& tok, const std::string& dir) {
  const std::string from = tok.model_file();
  if (from.empty()) return;
  // A trained WordPiece vocabulary is kept as BERT names it; a SentencePiece model as tokenizer.model.
  const std::string to =
      tok.name().rfind("wordpiece", 0) == 0 ? run_vocab_path(dir) : run_tokenizer_path(dir);
  std::error_code ec;
  if (fs::exists(to) && fs::equivalent(from, to, ec)) return;
  // Binary-safe: a temporary name, then a rename.
  write_text_atomic(to, read_file(from, "tokenizer model"));
}

}  // namespace relpos

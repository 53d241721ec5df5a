// The whole run configuration as plain structs. Each default is written once, here, in the
// member initializer; visit() lists the YAML keys. configs/base.yaml mirrors these defaults
// with comments. Cross-field rules live in validate() (config.cpp), nowhere else; the rules of
// a position variant or a task come from its registry (validate_position, validate_task).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/config/claims_config.h"
#include "core/config/fields.h"
#include "core/config/loader.h"
#include "core/config/position_config.h"

namespace relpos {

struct ModelConfig : ConfigSection {
  std::string mode = "encoder";  // encoder (bidirectional) | decoder (causal)
  int64_t layers = 2;
  int64_t width = 128;            // D
  int64_t heads = 4;              // H; head width d = D / H
  int64_t ff_width = 512;         // feed-forward hidden width
  int64_t embedding_width = 0;    // E; 0 = D. E < D: ALBERT factorized embedding (E, then E->D)
  bool share_layers = false;      // ALBERT cross-layer parameter sharing
  std::string norm = "pre";       // pre | post (LayerNorm placement)
  double dropout = 0.1;           // embeddings, residual branches, feed-forward
  double attention_dropout = 0.1; // on attention probabilities
  bool segments = false;          // segment (token type) embeddings
  int64_t segment_vocab = 2;
  double init_std = 0.02;         // normal init of weights and embeddings
  // Feed-forward and MLM-transform nonlinearity: gelu (exact, erf) or gelu_tanh (the tanh
  // approximation GPT-2 and ALBERT use, Hugging Face's gelu_new).
  std::string activation = "gelu";
  double norm_eps = 1e-5;         // epsilon of every LayerNorm (BERT: 1e-12)
  // Post-LN embedding LayerNorm over the E-wide embeddings, before the E->D projection
  // (ALBERT), instead of over the D-wide projected ones.
  bool embedding_norm_before_projection = false;
  // auto | eager | fused: attention through LibTorch's fused scaled_dot_product_attention
  // kernel (LibTorch >= 2.0) or the eager (B,H,T,T) path (core/model/fused_attention.h).
  std::string attention_impl = "auto";

  template <class V>
  void visit(V& v) {
    v.choice("mode", mode, {"encoder", "decoder"}, "encoder: bidirectional; decoder: causal");
    v("layers", layers, "transformer blocks");
    v("width", width, "model width D");
    v("heads", heads, "attention heads H");
    v("ff_width", ff_width, "feed-forward hidden width");
    v("embedding_width", embedding_width, "E; 0 means E = D");
    v("share_layers", share_layers, "ALBERT cross-layer sharing");
    v.choice("norm", norm, {"pre", "post"}, "LayerNorm placement");
    v("dropout", dropout, "dropout rate");
    v("attention_dropout", attention_dropout, "dropout on attention probabilities");
    v("segments", segments, "segment embeddings");
    v("segment_vocab", segment_vocab, "number of segment ids");
    v("init_std", init_std, "std of the normal weight init");
    v.choice("activation", activation, {"gelu", "gelu_tanh"}, "feed-forward nonlinearity");
    v("norm_eps", norm_eps, "LayerNorm epsilon");
    v("embedding_norm_before_projection", embedding_norm_before_projection,
      "post-LN: embedding LayerNorm before the E->D projection (ALBERT)");
    v.choice("attention_impl", attention_impl, {"auto", "eager", "fused"},
             "auto: fused where LibTorch has the kernel and every encoding allows it; eager: the "
             "(B,H,T,T) path; fused: the kernel (LibTorch >= 2.0)");
  }
  bool causal() const { return mode == "decoder"; }
  int64_t head_dim() const { return heads > 0 ? width / heads : 0; }
  int64_t embed_dim() const { return embedding_width > 0 ? embedding_width : width; }
};

struct DataConfig : ConfigSection {
  // Built-in names (sotu, sentiment, wordnet_qa) or a path: a text file, a folder of .txt
  // files, a GLUE-style .tsv, or a SQuAD v1.1 .json.
  std::string corpus = "sotu";
  // Validation / test documents from their own file (e.g. SQuAD's dev-v1.1.json, GLUE's
  // dev.tsv) instead of a share of `corpus`; empty = split `corpus` by the fractions below.
  std::string valid_corpus;
  std::string test_corpus;
  std::string cache_dir = "data";  // fetched data and trained tokenizers (git-ignored)
  // bytes | sentencepiece | wordpiece | byte_bpe (GPT-2/RoBERTa byte-level BPE from a
  // vocab.json and merges.txt, as `relpos import` records for those checkpoints)
  std::string tokenizer = "bytes";
  // sentencepiece vocabulary; wordpiece without vocab_file: the vocabulary trained (tokens in all)
  int64_t vocab_size = 4000;
  std::string sentencepiece_model = "unigram";  // unigram | bpe
  // sentencepiece: a model file to load instead of training one (e.g. a pre-trained run's
  // tokenizer.model). Fine-tuning with --init-from takes the pre-trained run's model by itself.
  std::string tokenizer_file;
  // wordpiece: a BERT vocab.txt (empty: train one of vocab_size on the training split);
  // byte_bpe: a vocab.json
  std::string vocab_file;
  std::string merges_file;  // byte_bpe: a merges.txt
  double valid_fraction = 0.05;
  double test_fraction = 0.05;
  int64_t split_seed = 1234;       // document split, fixed across a sweep; 0 .. kMaxSeed
  int64_t max_documents = 0;       // 0 = all
  int64_t max_chars = 0;           // 0 = all; cap on corpus characters (quick runs)
  bool sentencepiece_byte_fallback = true;  // unknown characters as byte pieces (exact round trip)
  bool lower_case = true;          // wordpiece: lower-case and strip accents (uncased BERT vocab)
  std::vector<std::string> tsv_text_columns;  // TSV text column(s); empty = sentence | sentence1,sentence2
  std::string tsv_label_column = "label";
  std::vector<std::string> label_names;       // TSV text labels in class order; empty = integer labels

  template <class V>
  void visit(V& v) {
    v("corpus", corpus, "built-in name or path");
    v("valid_corpus", valid_corpus, "validation documents from this file instead of a split");
    v("test_corpus", test_corpus, "test documents from this file instead of a split");
    v("cache_dir", cache_dir, "data cache folder");
    v.choice("tokenizer", tokenizer, {"bytes", "sentencepiece", "wordpiece", "byte_bpe"},
             "tokenizer");
    v("vocab_size", vocab_size, "sentencepiece (or trained wordpiece) vocabulary size");
    v.choice("sentencepiece_model", sentencepiece_model, {"unigram", "bpe"}, "sp model type");
    v("tokenizer_file", tokenizer_file, "sentencepiece model file to load instead of training");
    v("vocab_file", vocab_file, "BERT vocab.txt for wordpiece, vocab.json for byte_bpe");
    v("merges_file", merges_file, "merges.txt for byte_bpe");
    v("valid_fraction", valid_fraction, "fraction of documents for validation");
    v("test_fraction", test_fraction, "fraction of documents for test");
    v("split_seed", split_seed, "seed of the document split");
    v("max_documents", max_documents, "cap on documents, 0 = all");
    v("max_chars", max_chars, "cap on corpus characters, 0 = all");
    v("sentencepiece_byte_fallback", sentencepiece_byte_fallback, "sentencepiece byte fallback");
    v("lower_case", lower_case, "wordpiece: lower-case and strip accents");
    v("tsv_text_columns", tsv_text_columns, "TSV text columns (one or two)");
    v("tsv_label_column", tsv_label_column, "TSV label column");
    v("label_names", label_names, "text labels in class order");
  }
};

// The task names of the task registry (core/task/task_registry.h), which defines this function,
// and the default task (defined by its file in core/task/).
std::vector<std::string> known_task_types();
extern const char* const kDefaultTaskType;

struct TaskConfig : ConfigSection {
  // A name of the task registry: mlm (the default) | clm | classify | span_qa | copy | reverse |
  // sort | shift | recall | marker_distance
  std::string type = kDefaultTaskType;
  int64_t seq_len = 128;           // training sequence length T
  double mask_prob = 0.15;         // mlm
  int64_t num_classes = 2;         // classify
  // synthetic tasks: training lengths [min_len, max_len], test lengths up to test_max_len
  int64_t min_len = 4;
  int64_t max_len = 16;
  int64_t test_max_len = 128;
  int64_t synthetic_vocab = 16;
  int64_t shift = 3;               // shift-by-k
  int64_t recall_queries = 1;      // recall: queries per example (0 = every key)
  int64_t eval_examples = 256;     // synthetic: evaluation examples per test length
  std::vector<int64_t> eval_lengths;  // synthetic test lengths; empty = max_len doubling to test_max_len
  int64_t max_query_len = 64;      // span_qa: question tokens kept
  // span_qa evaluation: the longest answer span the best-span search considers, in tokens (30:
  // the BERT SQuAD convention for word pieces; data.tokenizer bytes has one token per byte)
  int64_t max_answer_len = 30;

  template <class V>
  void visit(V& v) {
    v.choice("type", type, known_task_types(), "task");
    v("seq_len", seq_len, "training sequence length");
    v("mask_prob", mask_prob, "mlm masking rate");
    v("num_classes", num_classes, "classify: classes");
    v("min_len", min_len, "synthetic: shortest training length");
    v("max_len", max_len, "synthetic: longest training length");
    v("test_max_len", test_max_len, "synthetic: longest test length");
    v("synthetic_vocab", synthetic_vocab, "synthetic: symbol count");
    v("shift", shift, "synthetic shift: k");
    v("recall_queries", recall_queries, "synthetic recall: queries per example (0 = every key)");
    v("eval_examples", eval_examples, "synthetic: evaluation examples per length");
    v("eval_lengths", eval_lengths, "synthetic: test lengths");
    v("max_query_len", max_query_len, "span_qa: question tokens kept");
    v("max_answer_len", max_answer_len,
      "span_qa evaluation: longest predicted answer, in tokens (bytes: one per byte)");
  }
};

struct TrainConfig : ConfigSection {
  int64_t steps = 1000;
  int64_t batch_size = 32;
  double lr = 1e-3;
  double weight_decay = 0.01;
  double warmup = 0.1;             // fraction of steps with linear warm-up
  double grad_clip = 1.0;          // max global grad norm; 0 = off
  double adam_beta1 = 0.9;
  double adam_beta2 = 0.999;
  double adam_eps = 1e-8;
  int64_t log_every = 10;
  int64_t eval_every = 100;
  int64_t eval_batches = 20;
  int64_t checkpoint_every = 200;
  int64_t early_stop = 0;          // evaluations without improvement before stopping; 0 = off
  bool skip_nonfinite = false;     // skip a batch with non-finite loss instead of stopping

  template <class V>
  void visit(V& v) {
    v("steps", steps, "optimizer steps");
    v("batch_size", batch_size, "sequences per step");
    v("lr", lr, "peak learning rate");
    v("weight_decay", weight_decay, "AdamW weight decay");
    v("warmup", warmup, "warm-up fraction of steps");
    v("grad_clip", grad_clip, "gradient norm clip, 0 = off");
    v("adam_beta1", adam_beta1, "AdamW beta1");
    v("adam_beta2", adam_beta2, "AdamW beta2");
    v("adam_eps", adam_eps, "AdamW epsilon");
    v("log_every", log_every, "steps between metric lines");
    v("eval_every", eval_every, "steps between validation runs");
    v("eval_batches", eval_batches, "validation batches per evaluation, 0 = the whole split");
    v("checkpoint_every", checkpoint_every, "steps between checkpoints");
    v("early_stop", early_stop, "patience in evaluations, 0 = off");
    v("skip_nonfinite", skip_nonfinite, "skip non-finite batches instead of stopping");
  }
};

struct SnapshotConfig : ConfigSection {
  int64_t every_percent = 10;      // a snapshot every this % of training (plus step 0); 0 = off
  std::vector<int64_t> steps;      // extra explicit snapshot steps
  int64_t probe_size = 64;         // validation sequences in the probe set
  int64_t probe_len = 0;           // probe sequence length; 0 = task.seq_len
  int64_t profile_radius = 50;     // R: functions of r are exported on [-R, R]

  template <class V>
  void visit(V& v) {
    v("every_percent", every_percent, "snapshot interval in percent of steps");
    v("steps", steps, "explicit snapshot steps");
    v("probe_size", probe_size, "probe sequences");
    v("probe_len", probe_len, "probe length, 0 = seq_len");
    v("profile_radius", profile_radius, "R of exported relative profiles");
  }
};

// Length extrapolation (`relpos eval`, and the evaluation stage of `relpos reproduce`).
struct EvalConfig : ConfigSection {
  std::vector<int64_t> lengths;    // evaluation lengths; empty = 1x, 2x, 4x task.seq_len
  int64_t stride = 0;              // clm: sliding-window stride; 0 = nonoverlapping chunks only
  int64_t max_tokens = 65536;      // per length: clm scored targets, mlm window tokens (run time)
  int64_t batch_size = 8;          // sequences per batch at the training length

  template <class V>
  void visit(V& v) {
    v("lengths", lengths, "evaluation lengths");
    v("stride", stride, "clm sliding-window stride, 0 = off");
    v("max_tokens", max_tokens, "tokens per length (clm: scored, mlm: windows)");
    v("batch_size", batch_size, "sequences per batch at the training length");
  }
};

// How `relpos analyze` draws the run's figures (analysis/gnuplot.h): not used by training.
struct FiguresConfig : ConfigSection {
  // screen: each figure at its own size; column (about 3.3 in) or page (about 6.9 in): the
  // width of a paper's column or text, fonts readable at that size (docs/analysis.md).
  std::string size = "screen";

  template <class V>
  void visit(V& v) {
    v.choice("size", size, {"screen", "column", "page"}, "figure size: screen, column or page");
  }
};

// A grid written in an experiment's config (used by `relpos sweep` when no --grid is given).
struct SweepConfig : ConfigSection {
  std::vector<std::string> grid;   // "key=value1,value2" per axis, e.g. "position.type=none,shaw"
  int64_t jobs = 1;                // runs at once
  // `relpos reproduce` of synthetic (its tasks) or huang2020 (pretrain and any of the stages
  // that start from it): the stages to run, in the experiment's order; empty runs every stage.
  std::vector<std::string> stages;

  template <class V>
  void visit(V& v) {
    v("grid", grid, "axes key=v1,v2,...");
    v("jobs", jobs, "runs at once");
    v("stages", stages, "reproduce: the stages to run (empty: all)");
  }
};

// The largest seed (`seed`, `data.split_seed`): seeds are integers in [0, 2^31 - 1].
inline constexpr int64_t kMaxSeed = 2147483647;

struct Config : ConfigSection {
  std::string name = "run";
  int64_t seed = 1;                // 0 .. kMaxSeed
  std::string device = "cpu";      // cpu | cuda | cuda:N
  int64_t threads = 0;             // intra-op threads; 0 = automatic
  std::string cpu_allocator = "cache";  // cache | cache_small_pages | system (cpu_block_cache.h)
  // Compute precision of forward passes in training and evaluation: fp32, or bf16 autocast
  // (matrix products in bfloat16; parameters, optimizer state and snapshots stay float32).
  std::string precision = "fp32";
  ModelConfig model;
  PositionConfig position;
  DataConfig data;
  TaskConfig task;
  TrainConfig train;
  SnapshotConfig snapshots;
  EvalConfig eval;
  FiguresConfig figures;
  SweepConfig sweep;
  // What a sweep or named experiment tests, judged by `relpos report` / `relpos reproduce`
  // (analysis/claims.h), and the configuration changes made after a result was seen. Not used
  // by training: a run's stored config has them empty.
  std::vector<ClaimConfig> claims;
  std::vector<ProvenanceConfig> provenance;

  template <class V>
  void visit(V& v) {
    v("name", name, "run name");
    v("seed", seed, "random seed");
    v("device", device, "cpu, cuda or cuda:N");
    v("threads", threads, "intra-op threads, 0 = automatic");
    v("cpu_allocator", cpu_allocator, "cache, cache_small_pages or system");
    v.choice("precision", precision, {"fp32", "bf16"}, "compute precision");
    v("model", model);
    v("position", position);
    v("data", data);
    v("task", task);
    v("train", train);
    v("snapshots", snapshots);
    v("eval", eval);
    v("figures", figures);
    v("sweep", sweep);
    v("claims", claims, "claims the runs test (docs/analysis.md, \"Claims\")");
    v("provenance", provenance, "config changes made after a result was seen");
  }
};

struct LoadedConfig {
  Config config;
  SourceMap sources;
  std::vector<std::string> files;
};

// Merges `files` in order, applies `overrides` ("dotted.key=value"), parses into Config and
// runs validate(). Throws ConfigError naming file, line and key.
LoadedConfig load_config(const std::vector<std::string>& files,
                         const std::vector<std::string>& overrides = {});

// Parses an already merged YAML tree (used for the YAML stored in a run) and validates it.
Config parse_config(const YAML::Node& root, const SourceMap* sources);

// Every cross-field rule, in one place. Throws ConfigError.
void validate(const Config& c, const SourceMap* sources);
// The rules of the claims and provenance blocks (validate() calls it; claims_validate.cpp).
void validate_claims(const Config& c, const SourceMap* sources);
// The rules of the config's task (validate() calls it): the model mode it needs, its own
// TaskInfo::validate, and the probe length it needs. Defined by the task registry (core/task/task_registry.cpp).
void validate_task(const Config& c, const SourceMap* sources);

// The resolved config as YAML text (every key, defaults included).
std::string to_yaml(const Config& c);

}  // namespace relpos

namespace relpos {

// The keys where two resolved configs (YAML text as to_yaml writes it) differ, as
// "dotted.key: A -> B" ("(absent)" for a missing key), in key order. Keys in `ignore` and
// below them (e.g. "threads", "sweep") are not compared. Throws ConfigError when either text
// is not YAML.
std::vector<std::string> config_differences(const std::string& yaml_a, const std::string& yaml_b,
                                            const std::vector<std::string>& ignore = {});

}  // namespace relpos

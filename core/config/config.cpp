#include "core/config/config.h"
#include "core/config/labelled_override.h"

#include <fmt/format.h>
#include <torch/version.h>

#include <algorithm>

namespace relpos {

LoadedConfig load_config(const std::vector<std::string>& files,
                         const std::vector<std::string>& overrides) {
  return load_config(files, overrides, {});
}

LoadedConfig load_config(const std::vector<std::string>& files,
                         const std::vector<std::string>& overrides,
                         const std::vector<LabelledOverride>& labelled) {
  LayeredYaml layers = load_layers(files);
  for (const auto& o : overrides) apply_override(layers, o);
  for (const auto& o : labelled) apply_override(layers, o.assignment, o.origin);
  LoadedConfig out;
  out.config = parse_config(layers.root, &layers.sources);
  out.sources = layers.sources;
  out.files = layers.files;
  return out;
}

Config parse_config(const YAML::Node& root, const SourceMap* sources) {
  Config c;
  ConfigErrorCollector errors;
  try {
    read_value(root, "", sources, c);
    // Range checks report every bad value; the rules between keys stop at the first (a later
    // rule may assume an earlier one holds), and wait while any value is bad or unreadable (an
    // unreadable one keeps its default, which the rules would then judge).
    validate(c, sources);
  } catch (const ConfigError& e) {
    ConfigErrorCollector::collect(e);
  }
  errors.throw_if_any();
  return c;
}

std::string to_yaml(const Config& c) {
  YAML::Emitter out;
  write_value(out, c);
  return std::string(out.c_str()) + "\n";
}

namespace {

// Range checks of single keys: with a ConfigErrorCollector active (parse_config) each bad value
// is collected and the checks go on, so a config with several is told about all of them.
struct Checker {
  const SourceMap* src;
  mutable int failures = 0;  // bad values collected so far (the rules between keys then wait)
  void at_least(const std::string& path, double value, double min) const {
    if (value < min)
      fail(path, fmt::format("{}", value), fmt::format(">= {}", min));
  }
  void above(const std::string& path, double value, double min) const {
    if (!(value > min)) fail(path, fmt::format("{}", value), fmt::format("> {}", min));
  }
  void in_range(const std::string& path, double value, double lo, double hi) const {
    if (value < lo || value > hi)
      fail(path, fmt::format("{}", value), fmt::format("a value in [{}, {}]", lo, hi));
  }
  // Seeds are 0 .. 2^31 - 1 (kMaxSeed): what every reader of the run file's int attribute and
  // every other tool (numpy's 32-bit seeds) takes as it is; a negative seed used to be turned
  // into a huge unsigned one without a word.
  void seed(const std::string& path, int64_t value) const {
    if (value < 0 || value > kMaxSeed)
      fail(path, std::to_string(value), fmt::format("an integer in [0, {}] (2^31 - 1)", kMaxSeed));
  }
  void fail(const std::string& path, const std::string& got, const std::string& expected) const {
    try {
      config_fail(src, path, "out of range", got, expected);
    } catch (const ConfigError& e) {
      if (!ConfigErrorCollector::collect(e)) throw;
      ++failures;
    }
  }
};

// Of two keys a rule relates, the one to report the error at: a --set override (the likely
// cause) before a value from a file.
std::string blamed(const SourceMap* src, const std::string& a, const std::string& b) {
  if (!src) return a;
  const auto from_command_line = [&](const std::string& k) {
    const auto loc = src->exact(k);
    return loc && loc->file.rfind("command line", 0) == 0;
  };
  return !from_command_line(a) && from_command_line(b) ? b : a;
}

// The model section, then (with every model key in range) the rules between its keys and the
// position variants' own checks.
void validate_model(Checker& k, const Config& c, const SourceMap* src) {
  const ModelConfig& m = c.model;
  k.at_least("model.layers", m.layers, 1);
  k.at_least("model.width", m.width, 1);
  k.at_least("model.heads", m.heads, 1);
  k.at_least("model.ff_width", m.ff_width, 1);
  k.at_least("model.embedding_width", m.embedding_width, 0);
  k.in_range("model.dropout", m.dropout, 0, 0.99);
  k.in_range("model.attention_dropout", m.attention_dropout, 0, 0.99);
  k.at_least("model.segment_vocab", m.segment_vocab, 1);
  k.at_least("model.init_std", m.init_std, 0);
  k.above("model.norm_eps", m.norm_eps, 0);
  // The rules between keys assume each key is in range (a width divisible by 0 heads would
  // divide by zero): with bad values collected, they wait until those are fixed.
  if (k.failures == 0) {
    if (m.embedding_norm_before_projection && m.norm != "post")
      config_fail(src, "model.embedding_norm_before_projection",
                  "only a post-LN model has an embedding LayerNorm", "true with model.norm pre",
                  "false, or model.norm post");
    if (m.heads >= 1 && m.width % m.heads != 0) {
      const std::string at = blamed(src, "model.width", "model.heads");
      const std::string other = at == "model.width" ? "model.heads" : "model.width";
      config_fail(src, at, "width must be divisible by heads",
                  fmt::format("width {} with {} heads, {} from {}", m.width, m.heads, other,
                              src ? src->describe(other) : std::string("<config>")),
                  at == "model.width" ? fmt::format("a multiple of {}", m.heads)
                                      : fmt::format("a divisor of the width {}", m.width));
    }
    if (m.attention_impl == "fused" && TORCH_VERSION_MAJOR < 2)
      config_fail(src, "model.attention_impl",
                  "fused attention needs LibTorch >= 2.0 (scaled_dot_product_attention)",
                  fmt::format("fused with LibTorch {}", TORCH_VERSION), "auto or eager");
    if (m.embedding_width > m.width)
      config_fail(src, "model.embedding_width", "embedding width above model width",
                  std::to_string(m.embedding_width), fmt::format("0 or <= width {}", m.width));

    // Position variants: each checks its own parameters against the model.
    validate_position(c, src);
  }
}

void validate_task_keys(Checker& k, const Config& c, const SourceMap* src) {
  const TaskConfig& t = c.task;
  k.at_least("task.seq_len", t.seq_len, 2);
  k.in_range("task.mask_prob", t.mask_prob, 0.01, 1.0);
  k.at_least("task.num_classes", t.num_classes, 2);
  k.at_least("task.min_len", t.min_len, 1);
  k.at_least("task.max_len", t.max_len, t.min_len);
  k.at_least("task.test_max_len", t.test_max_len, t.max_len);
  k.at_least("task.synthetic_vocab", t.synthetic_vocab, 2);
  k.at_least("task.shift", t.shift, 0);
  k.at_least("task.recall_queries", t.recall_queries, 0);
  k.at_least("task.eval_examples", t.eval_examples, 1);
  k.at_least("task.max_query_len", t.max_query_len, 1);
  k.at_least("task.max_answer_len", t.max_answer_len, 1);
  for (auto len : t.eval_lengths)
    if (len < t.min_len || len > t.test_max_len)
      config_fail(src, "task.eval_lengths", "test length outside [min_len, test_max_len]",
                  std::to_string(len),
                  fmt::format("lengths in [{}, {}]", t.min_len, t.test_max_len));
}

void validate_data(Checker& k, const Config& c, const SourceMap* src) {
  const TaskConfig& t = c.task;
  const DataConfig& d = c.data;
  k.at_least("data.vocab_size", d.vocab_size, 16);
  k.in_range("data.valid_fraction", d.valid_fraction, 0, 0.5);
  k.in_range("data.test_fraction", d.test_fraction, 0, 0.5);
  k.at_least("data.max_documents", d.max_documents, 0);
  k.at_least("data.max_chars", d.max_chars, 0);
  if (!d.label_names.empty() && static_cast<int64_t>(d.label_names.size()) != t.num_classes)
    config_fail(src, "data.label_names", "one name per class",
                fmt::format("{} names ({})", d.label_names.size(), join_names(d.label_names)),
                fmt::format("task.num_classes = {} names", t.num_classes));
  for (size_t i = 0; i < d.label_names.size(); ++i)
    for (size_t j = 0; j < i; ++j)
      if (d.label_names[i] == d.label_names[j])
        config_fail(src, "data.label_names", "a name is given to two classes",
                    fmt::format("'{}' for classes {} and {}", d.label_names[i], j, i),
                    "one distinct name per class");
  if (d.tsv_text_columns.size() > 2)
    config_fail(src, "data.tsv_text_columns", "too many text columns",
                join_names(d.tsv_text_columns), "one or two column names");
  if (d.tokenizer == "sentencepiece" && d.sentencepiece_byte_fallback && d.vocab_size < 300)
    config_fail(src, "data.vocab_size", "byte fallback takes 256 ids of the vocabulary",
                std::to_string(d.vocab_size),
                ">= 300, or data.sentencepiece_byte_fallback: false");
}

// The tokenizer's files: what each tokenizer reads.
void validate_tokenizer_files(const Config& c, const SourceMap* src) {
  const DataConfig& d = c.data;
  if (!d.tokenizer_file.empty() && d.tokenizer != "sentencepiece")
    config_fail(src, "data.tokenizer_file", "only the sentencepiece tokenizer loads a model file",
                fmt::format("'{}' with data.tokenizer {}", d.tokenizer_file, d.tokenizer),
                "data.tokenizer: sentencepiece, or no data.tokenizer_file (wordpiece reads "
                "data.vocab_file)");
  if (d.tokenizer == "byte_bpe" && d.vocab_file.empty())
    config_fail(src, "data.vocab_file", "the byte_bpe tokenizer needs a GPT-2/RoBERTa vocab.json",
                "nothing", "a path to vocab.json");
  if (d.tokenizer == "byte_bpe" && d.merges_file.empty())
    config_fail(src, "data.merges_file", "the byte_bpe tokenizer needs a GPT-2/RoBERTa merges.txt",
                "nothing", "a path to merges.txt");
}

void validate_train_and_snapshots(Checker& k, const Config& c, const SourceMap* src) {
  const TrainConfig& tr = c.train;
  k.at_least("train.steps", tr.steps, 1);
  k.at_least("train.batch_size", tr.batch_size, 1);
  k.at_least("train.lr", tr.lr, 0);
  k.at_least("train.weight_decay", tr.weight_decay, 0);
  k.in_range("train.warmup", tr.warmup, 0, 1);
  k.at_least("train.grad_clip", tr.grad_clip, 0);
  k.in_range("train.adam_beta1", tr.adam_beta1, 0, 0.9999);
  k.in_range("train.adam_beta2", tr.adam_beta2, 0, 0.999999);
  k.above("train.adam_eps", tr.adam_eps, 0);  // 0 divides by zero where a gradient is 0
  k.at_least("train.log_every", tr.log_every, 1);
  k.at_least("train.eval_every", tr.eval_every, 1);
  k.at_least("train.eval_batches", tr.eval_batches, 0);
  k.at_least("train.checkpoint_every", tr.checkpoint_every, 1);
  k.at_least("train.early_stop", tr.early_stop, 0);

  const SnapshotConfig& s = c.snapshots;
  k.in_range("snapshots.every_percent", s.every_percent, 0, 100);
  k.at_least("snapshots.probe_size", s.probe_size, 1);
  k.at_least("snapshots.probe_len", s.probe_len, 0);
  k.at_least("snapshots.profile_radius", s.profile_radius, 1);
  for (auto step : s.steps)
    if (step < 0 || step > tr.steps)
      config_fail(src, "snapshots.steps", "snapshot step outside the run", std::to_string(step),
                  fmt::format("steps in [0, {}]", tr.steps));
}

void validate_eval_and_sweep(Checker& k, const Config& c, const SourceMap* src) {
  for (size_t i = 0; i < c.eval.lengths.size(); ++i) {
    const int64_t len = c.eval.lengths[i];
    if (len < 2) config_fail(src, "eval.lengths", "evaluation length too short", std::to_string(len), ">= 2");
    if (std::find(c.eval.lengths.begin(), c.eval.lengths.begin() + i, len) != c.eval.lengths.begin() + i)
      config_fail(src, "eval.lengths", "length listed twice", std::to_string(len), "each length once");
  }
  k.at_least("eval.stride", c.eval.stride, 0);
  k.at_least("eval.max_tokens", c.eval.max_tokens, 1);
  k.at_least("eval.batch_size", c.eval.batch_size, 1);
  k.at_least("sweep.jobs", c.sweep.jobs, 1);
  for (const auto& axis : c.sweep.grid)
    if (axis.find('=') == std::string::npos || axis.back() == '=')
      config_fail(src, "sweep.grid", "malformed grid axis", "'" + axis + "'", "key=value1,value2,...");
  for (size_t i = 0; i < c.sweep.stages.size(); ++i) {
    const std::string& st = c.sweep.stages[i];
    if (st.empty()) config_fail(src, "sweep.stages", "empty stage name", "''", "a stage name");
    if (std::find(c.sweep.stages.begin(), c.sweep.stages.begin() + i, st) != c.sweep.stages.begin() + i)
      config_fail(src, "sweep.stages", "stage listed twice", "'" + st + "'", "each stage once");
  }
}

// threads, the CPU allocator and the device.
void validate_runtime(Checker& k, const Config& c, const SourceMap* src) {
  k.at_least("threads", c.threads, 0);
  if (c.cpu_allocator != "cache" && c.cpu_allocator != "cache_small_pages" &&
      c.cpu_allocator != "system")
    config_fail(src, "cpu_allocator", "unknown CPU allocator", "'" + c.cpu_allocator + "'",
                "cache, cache_small_pages or system");
  // cuda:N with N a GPU index: digits only ("cuda:abc" and "cuda:-1" used to pass here and
  // reach LibTorch's parser). Whether GPU N exists is checked where the device is opened.
  const bool gpu_index = c.device.size() > 5 && c.device.rfind("cuda:", 0) == 0 &&
                         c.device.find_first_not_of("0123456789", 5) == std::string::npos;
  if (!(c.device == "cpu" || c.device == "cuda" || gpu_index))
    config_fail(src, "device", "unknown device", "'" + c.device + "'",
                "cpu, cuda or cuda:N with N a GPU index >= 0");
}

}  // namespace

void validate(const Config& c, const SourceMap* src) {
  Checker k{src, ConfigErrorCollector::active_count()};
  k.seed("seed", c.seed);
  k.seed("data.split_seed", c.data.split_seed);
  validate_model(k, c, src);
  validate_task_keys(k, c, src);
  validate_data(k, c, src);
  // The task's own rules: model mode, corpus kind, lengths, probe.
  if (k.failures == 0) validate_task(c, src);
  if (k.failures == 0) validate_claims(c, src);
  validate_tokenizer_files(c, src);
  validate_train_and_snapshots(k, c, src);
  validate_eval_and_sweep(k, c, src);
  validate_runtime(k, c, src);
}

}  // namespace relpos

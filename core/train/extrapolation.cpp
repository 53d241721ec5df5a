#include "core/train/extrapolation.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <torch/nn/functional/loss.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <set>

#include "core/io/run_file.h"
#include "core/position/position_registry.h"
#include "core/task/task_registry.h"
#include "core/train/objective.h"
#include "core/train/trainer.h"
#include "core/util/errors.h"
#include "core/util/paths.h"
#include "core/util/precision.h"
#include "core/util/system.h"

namespace relpos {

namespace F = torch::nn::functional;

namespace {

// Summed cross-entropy (and its square, for the per-token spread that sets the sampling error
// of the mean) and count of scored targets over windows of the test stream.
// Window w covers stream[start_w, start_w + L); targets are the next tokens; positions before
// `first_scored_w` (relative to the window) are not scored.
struct LmSum {
  double loss = 0, squares = 0, count = 0;
  // Standard deviation of the per-token loss (nats).
  double sd() const {
    const double m = loss / count;
    return std::sqrt(std::max(0.0, squares / count - m * m));
  }
};

LmSum score_windows(LoadedRun& run, const std::vector<int64_t>& stream,
                    const std::vector<std::pair<int64_t, int64_t>>& windows, int64_t L,
                    int64_t batch) {
  torch::NoGradGuard guard;
  LmSum sum;
  for (size_t w0 = 0; w0 < windows.size(); w0 += batch) {
    const int64_t B = std::min<int64_t>(batch, windows.size() - w0);
    auto tokens = torch::empty({B, L}, torch::kLong);   // (B,L)
    auto targets = torch::empty({B, L}, torch::kLong);  // (B,L)
    auto tk = tokens.accessor<int64_t, 2>();
    auto tg = targets.accessor<int64_t, 2>();
    for (int64_t b = 0; b < B; ++b) {
      const auto [start, first] = windows[w0 + b];
      for (int64_t t = 0; t < L; ++t) {
        tk[b][t] = stream[start + t];
        tg[b][t] = t >= first ? stream[start + t + 1] : -100;
      }
    }
    tokens = tokens.to(run.device);
    targets = targets.to(run.device);
    // Logits only where scored (with --stride, the last stride's worth of each window).
    auto r = lm_logits_at_targets(run.model, run.model->hidden(tokens), targets);  // (N,V), (N)
    auto losses = F::cross_entropy(r.logits, r.targets,
                                   F::CrossEntropyFuncOptions().reduction(torch::kNone))
                      .to(torch::kFloat64);  // (N)
    sum.loss += losses.sum().item<double>();
    sum.squares += losses.square().sum().item<double>();
    sum.count += static_cast<double>(r.targets.size(0));
  }
  return sum;
}

// Scored items of an evaluation, for the sampling error of its metric: masked (target) tokens,
// or examples (rows).
double scored_targets(const std::vector<Batch>& batches) {
  double n = 0;
  for (const auto& b : batches) n += static_cast<double>(b.targets.ne(-100).sum().item<int64_t>());
  return n;
}
double examples(const std::vector<Batch>& batches) {
  double n = 0;
  for (const auto& b : batches) n += static_cast<double>(b.tokens.size(0));
  return n;
}

// Drops rows past the first `n` of a list of batches (tokens, targets, key_mask, segments).
void keep_first_rows(std::vector<Batch>& batches, int64_t n) {
  int64_t seen = 0;
  std::vector<Batch> kept;
  for (auto& b : batches) {
    if (seen >= n) break;
    const int64_t rows = b.tokens.size(0), take = std::min(rows, n - seen);
    if (take < rows) {
      for (torch::Tensor* t : {&b.tokens, &b.targets, &b.key_mask, &b.segments})
        if (t->defined()) *t = t->narrow(0, 0, take);
    }
    seen += take;
    kept.push_back(std::move(b));
  }
  batches = std::move(kept);
}

// The encoding of a stack whose table bounds the sequence length (VariantInfo::length_key), and
// the evaluation setting that lets it run past its table, for the notes of the rows.
struct LengthBound {
  std::string name = "position encoding's", key = "length";  // the variant, its length_key
  std::string past;  // position.<name>.<key>=<value> from its eval_keys; "" when there is none
};

LengthBound length_bound(const PositionConfig& p) {
  LengthBound b;
  for (const auto& type : p.types) {
    const VariantInfo& v = Registry::get().at(type);
    if (v.length_key.empty()) continue;
    b.name = type;
    b.key = v.length_key;
    for (const auto& [key, value] : v.eval_keys)
      if (!value.empty()) b.past = fmt::format("position.{}.{}={}", type, key, value);
    break;
  }
  return b;
}

// The longest sequences a run's position table was trained on: its task.seq_len, or that of the
// run it was initialised from (result.json's init_from, followed while the folders exist) when
// longer — a fine-tune at 384 of a model pre-trained at 512 has trained rows up to 512.
int64_t trained_length(const std::string& dir, int64_t own, int depth = 0) {
  if (dir.empty() || depth >= 8) return own;
  std::ifstream in(std::filesystem::path(dir) / "result.json");
  const auto j = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object() || !j.contains("init_from") || !j["init_from"].is_string()) return own;
  // Written relative to the repository when it lies inside it (run_record.cpp).
  const std::string src = resolve_repo_path(j["init_from"].get<std::string>());
  try {
    if (!std::filesystem::exists(run_config_path(src))) return own;
    const int64_t pre = load_run_config(src).config.task.seq_len;
    return std::max(own, trained_length(src, pre, depth + 1));
  } catch (const Error&) {
    return own;  // an unreadable pre-trained run: what this run itself trained at
  }
}

}  // namespace

std::string attention_memory_note(int64_t batch, int64_t heads, int64_t length, double memory_bytes) {
  const double L = static_cast<double>(length);
  const double need = 2.0 * static_cast<double>(batch) * static_cast<double>(heads) * L * L * 4.0;
  if (memory_bytes <= 0 || need <= memory_bytes) return "";
  const double GB = 1024.0 * 1024.0 * 1024.0;
  return fmt::format("one layer's attention scores need at least {:.1f} GB (batch {}, {} heads), "
                     "more than this machine's {:.1f} GB",
                     need / GB, batch, heads, memory_bytes / GB);
}

ExtrapolationOptions extrapolation_options(const Config& cfg) {
  ExtrapolationOptions o;
  o.lengths = cfg.eval.lengths;
  if (o.lengths.empty() && task_info(cfg.task.type).length_eval != LengthEval::TaskLengths) {
    const int64_t T = cfg.task.seq_len;
    o.lengths = {T, 2 * T, 4 * T};
  }
  o.stride = cfg.eval.stride;
  o.max_tokens = cfg.eval.max_tokens;
  o.batch_size = cfg.eval.batch_size;
  return o;
}

namespace {

// Synthetic tasks: their test examples come at the task's own lengths.
std::vector<ExtrapolationRow> evaluate_task_lengths(LoadedRun& run, const ExtrapolationOptions& o,
                                                    int64_t max_len) {
  const std::string& task = run.config.config.task.type;
  std::vector<ExtrapolationRow> rows;
  auto batches = run.data->eval_batches(Split::Test, o.batch_size, 0);
  std::map<int64_t, std::vector<Batch>> by_len;
  for (auto& b : batches) {
    const int64_t len = b.lengths.empty() ? b.tokens.size(1) : b.lengths.front();
    by_len[len].push_back(b);
  }
  std::set<int64_t> wanted(o.lengths.begin(), o.lengths.end());
  std::vector<int64_t> available;
  for (const auto& [len, bs] : by_len) available.push_back(len);
  for (int64_t len : wanted)
    if (!by_len.count(len)) {
      ExtrapolationRow row;
      row.length = len;
      row.applicable = false;
      row.note = fmt::format("not a test length of the task (task.eval_lengths gives {})",
                             fmt::join(available, ", "));
      rows.push_back(row);
    }
  for (auto& [len, bs] : by_len) {
    if (!wanted.empty() && !wanted.count(len)) continue;
    ExtrapolationRow row;
    row.length = len;
    const int64_t seq = bs.front().tokens.size(1);
    if (max_len >= 0 && seq > max_len) {
      row.applicable = false;
      row.note = fmt::format("sequence length {} beyond the position table ({})", seq, max_len);
    } else {
      row.metrics = evaluate(run.model, *run.data, task, Split::Test, bs, run.device);
      row.metrics["examples"] = examples(bs);
    }
    rows.push_back(row);
  }
  std::sort(rows.begin(), rows.end(),
            [](const ExtrapolationRow& a, const ExtrapolationRow& b) { return a.length < b.length; });
  return rows;
}

// Causal LM at length L: perplexity over the test stream in nonoverlapping chunks, and with
// --stride over a sliding window.
void score_causal_stream(LoadedRun& run, const ExtrapolationOptions& o, int64_t L, int64_t batch,
                         const std::string& too_big, ExtrapolationRow& row) {
  const auto& stream = run.data->stream(Split::Test);
  const int64_t N = static_cast<int64_t>(stream.size()) - 1;  // positions with a target
  if (N < L || !too_big.empty()) {
    row.applicable = false;
    row.note = N < L ? fmt::format("test stream ({} tokens) too short: a window of {} "
                                   "tokens needs {} (its last token's target follows it)",
                                   N + 1, L, L + 1)
                     : too_big;
    return;
  }
  std::vector<std::pair<int64_t, int64_t>> chunks;
  for (int64_t s = 0; s + L <= N && static_cast<int64_t>(chunks.size()) * L < o.max_tokens; s += L)
    chunks.push_back({s, 0});
  auto sum = score_windows(run, stream, chunks, L, batch);
  row.metrics["loss"] = sum.loss / sum.count;
  row.metrics["ppl"] = std::exp(sum.loss / sum.count);
  row.metrics["tokens"] = sum.count;
  row.metrics["loss_sd"] = sum.sd();
  if (o.stride > 0) {
    const int64_t stride = std::min(o.stride, L);
    std::vector<std::pair<int64_t, int64_t>> windows{{0, 0}};
    int64_t scored = L;
    for (int64_t s = stride; s + L <= N && scored < o.max_tokens; s += stride) {
      windows.push_back({s, L - stride});
      scored += stride;
    }
    auto sl = score_windows(run, stream, windows, L, batch);
    row.metrics["loss_sliding"] = sl.loss / sl.count;
    row.metrics["ppl_sliding"] = std::exp(sl.loss / sl.count);
    row.metrics["tokens_sliding"] = sl.count;
    row.metrics["loss_sliding_sd"] = sl.sd();
  }
}

// The task's own metrics on test batches of length L: windows of the test stream (masked LM)
// or every test example laid out in rows of L tokens.
void score_batches(LoadedRun& run, const ExtrapolationOptions& o, int64_t L, int64_t batch,
                   const std::string& too_big, bool stream_windows, ExtrapolationRow& row) {
  std::vector<Batch> batches;
  if (stream_windows) {
    // max_tokens / L windows (at least one), whatever the batch size: the scored set must
    // not change with eval.batch_size.
    const int64_t windows = std::max<int64_t>(1, o.max_tokens / L);
    batches = run.data->eval_batches(Split::Test, batch, (windows + batch - 1) / batch, L);
    keep_first_rows(batches, windows);
    // A test split shorter than one window gives one shorter row: not this length.
    if (batches.empty() || batches.front().tokens.size(1) < L) {
      row.applicable = false;
      row.note = fmt::format("test stream ({} tokens) shorter than the length",
                             run.data->stream(Split::Test).size());
      return;
    }
  } else {
    // A longer L keeps more of a long context or sentence pair; positions past the training
    // length are the test.
    batches = run.data->eval_batches(Split::Test, batch, 0, L);
    if (batches.empty()) {
      row.applicable = false;
      row.note = "the test split is empty";
      return;
    }
  }
  if (!too_big.empty()) {
    row.applicable = false;
    row.note = too_big;
    return;
  }
  row.metrics =
      evaluate(run.model, *run.data, run.config.config.task.type, Split::Test, batches, run.device);
  // Scored items, for the sampling error of the metric: masked bytes, or examples.
  if (stream_windows)
    row.metrics["tokens"] = scored_targets(batches);
  else
    row.metrics["examples"] = examples(batches);
}

}  // namespace

std::vector<ExtrapolationRow> evaluate_lengths(LoadedRun& run, const ExtrapolationOptions& o) {
  const Config& cfg = run.config.config;
  const LengthEval protocol = task_info(cfg.task.type).length_eval;
  const int64_t max_len = run.model->transformer->position->max_length();
  run.model->eval();
  const PrecisionScope precision(cfg.precision, run.device);
  std::set<int64_t> seen;  // every length checked before the first is evaluated
  for (int64_t L : o.lengths) {
    if (L < 2) throw ConfigError(fmt::format("eval: length {} is too short", L), "use lengths >= 2");
    if (!seen.insert(L).second)
      throw ConfigError(fmt::format("eval: length {} is listed twice", L), "list each length once");
  }
  if (protocol == LengthEval::TaskLengths) return evaluate_task_lengths(run, o, max_len);

  // A learned table's rows past the training length never received a gradient (every training
  // window starts at position 0): lengths past it use untrained rows, clamped or not.
  const int64_t table = run.model->transformer->position->table_length();
  const bool clamped = table >= 0 && max_len < 0;
  const int64_t trained = trained_length(run.dir, cfg.task.seq_len);
  const LengthBound bound = length_bound(cfg.position);
  std::vector<ExtrapolationRow> rows;
  for (int64_t L : o.lengths) try {
    ExtrapolationRow row;
    row.length = L;
    if (max_len >= 0 && L > max_len) {
      row.applicable = false;
      row.note = table > trained
                     ? fmt::format("beyond the {} position table ({} {}), whose rows past {} "
                                   "were never trained either",
                                   bound.name, bound.key, max_len, trained)
                     : fmt::format("beyond the {} position table ({} {}){}", bound.name,
                                   bound.key, max_len,
                                   bound.past.empty()
                                       ? std::string()
                                       : fmt::format("; set {} to evaluate anyway", bound.past));
    } else if (table > trained && L > trained) {
      row.applicable = false;
      row.note = fmt::format(
          "positions {}..{} would use rows of the {} table ({} {}) that training "
          "never reached (it used lengths up to {}){}",
          trained, std::min(L, table) - 1, bound.name, bound.key, table, trained,
          clamped ? ", and clamping reuses its last, untrained row" : "");
    } else {
      if (clamped && L > table)
        row.note = fmt::format("positions past {} reuse {} row {} ({})", table, bound.name,
                               table - 1, bound.past);
      const int64_t batch = std::max<int64_t>(1, o.batch_size * cfg.task.seq_len / L);
      // Checked before anything of that size is allocated; on a GPU an allocation that fails
      // names the length instead (below).
      const std::string too_big =
          run.device.is_cpu() ? attention_memory_note(batch, cfg.model.heads, L,
                                                      physical_memory_mb() * 1024.0 * 1024.0)
                              : std::string();
      if (protocol == LengthEval::CausalStream)
        score_causal_stream(run, o, L, batch, too_big, row);
      else
        score_batches(run, o, L, batch, too_big, protocol == LengthEval::MaskedStream, row);
    }
    rows.push_back(row);
  } catch (const c10::Error& e) {  // out of memory, mostly: say at which length
    throw RunError(fmt::format("eval at length {}: {}", L, e.what_without_backtrace()),
                   "a shorter length or a smaller eval.batch_size needs less memory");
  }
  return rows;
}

void save_extrapolation(const std::string& dir, const LoadedRun& run,
                        const std::vector<ExtrapolationRow>& rows, const ExtrapolationOptions& o,
                        const std::string& table) {
  std::vector<std::string> names;
  for (const auto& r : rows)
    for (const auto& [k, v] : r.metrics)
      if (std::find(names.begin(), names.end(), k) == names.end()) names.push_back(k);
  const int64_t n = static_cast<int64_t>(rows.size());
  auto length = torch::empty({n}, torch::kLong), applicable = torch::empty({n}, torch::kLong);
  std::vector<torch::Tensor> cols(names.size());
  for (auto& c : cols) c = torch::full({n}, std::numeric_limits<double>::quiet_NaN(), torch::kDouble);
  std::string notes;
  for (int64_t i = 0; i < n; ++i) {
    length[i] = rows[i].length;
    applicable[i] = rows[i].applicable ? 1 : 0;
    for (size_t c = 0; c < names.size(); ++c) {
      auto it = rows[i].metrics.find(names[c]);
      if (it != rows[i].metrics.end()) cols[c][i] = it->second;
    }
  }
  // "128, 256: reason; 512: other reason": lengths with the same note share it. Notes of rows
  // that are not applicable, and of applicable ones evaluated out of the ordinary (clamped).
  auto grouped_notes = [&](bool applicable) {
    std::vector<std::pair<std::string, std::vector<int64_t>>> reasons;
    for (const auto& r : rows) {
      if (r.applicable != applicable || r.note.empty()) continue;
      auto it = std::find_if(reasons.begin(), reasons.end(),
                             [&](const auto& p) { return p.first == r.note; });
      if (it == reasons.end()) reasons.push_back({r.note, {r.length}});
      else it->second.push_back(r.length);
    }
    std::string out;
    for (const auto& [why, lens] : reasons)
      out += fmt::format("{}{}: {}", out.empty() ? "" : "; ", fmt::join(lens, ", "), why);
    return out;
  };
  notes = grouped_notes(false);
  const std::string clamped = grouped_notes(true);
  std::vector<NamedTensor> columns{{"length", length, {"row"}}, {"applicable", applicable, {"row"}}};
  for (size_t c = 0; c < names.size(); ++c) columns.push_back({names[c], cols[c], {"row"}});
  const Config& cfg = run.config.config;
  std::map<std::string, std::string> attrs{
      {"task", cfg.task.type},
      {"train_length", std::to_string(cfg.task.seq_len)},
      {"split", "test"},
      {"stride", std::to_string(o.stride)},
      {"not_applicable", notes}};
  if (!clamped.empty()) attrs["clamped"] = clamped;
  auto writer = RunFileWriter::open_append(run_h5_path(dir));
  writer->write_eval(table, columns, attrs);
  writer->close();

  std::ofstream csv(std::filesystem::path(dir) / ("eval_" + table + ".csv"));
  csv << "length,applicable";
  for (const auto& nm : names) csv << "," << nm;
  csv << "\n";
  for (const auto& r : rows) {
    csv << r.length << "," << (r.applicable ? 1 : 0);
    for (const auto& nm : names) {
      auto it = r.metrics.find(nm);
      csv << ",";
      if (it != r.metrics.end()) csv << fmt::format("{}", it->second);
    }
    csv << "\n";
  }
}

}  // namespace relpos

// `relpos eval` for a causal LM: perplexity over nonoverlapping chunks and with a sliding window
// (Press et al.: each window after the first scores only its last `stride` tokens), and for an
// MLM: masked-token loss and accuracy, each against a loop that runs the model on one window at
// a time and sums log-probabilities itself.
#include <doctest/doctest.h>

#include <fmt/format.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "core/io/run_file.h"
#include "core/io/schema.h"
#include "core/train/extrapolation.h"
#include "core/train/objective.h"
#include "core/train/run_model.h"
#include "core/train/trainer.h"
#include "tests/data_helpers.h"
#include "tests/helpers.h"
#include "tests/tiny_run.h"

using namespace relpos;

namespace {

// Mean negative log-likelihood over the windows [s, s+L) of `stream`, each scoring its
// positions t >= first (the target of position t is stream[s+t+1]); `sd` gets the standard
// deviation of the per-token values (divided by the count).
double naive_nll(LoadedRun& run, const std::vector<int64_t>& stream,
                 const std::vector<std::pair<int64_t, int64_t>>& windows, int64_t L,
                 double* count, double* sd = nullptr) {
  torch::NoGradGuard guard;
  double nll = 0;
  std::vector<double> each;
  *count = 0;
  for (const auto& [s, first] : windows) {
    auto tokens = torch::empty({1, L}, torch::kLong);
    for (int64_t t = 0; t < L; ++t) tokens[0][t] = stream[s + t];
    auto logp = torch::log_softmax(
        run.model->lm_logits(run.model->hidden(tokens)).to(torch::kDouble), -1);  // (1,L,V)
    for (int64_t t = first; t < L; ++t) {
      each.push_back(-logp[0][t][stream[s + t + 1]].item<double>());
      nll += each.back();
      *count += 1;
    }
  }
  if (sd) {
    double ss = 0;
    for (double v : each) ss += (v - nll / *count) * (v - nll / *count);
    *sd = std::sqrt(ss / *count);
  }
  return nll / *count;
}

}  // namespace

TEST_CASE("eval (clm): chunk and sliding-window perplexity equal a window-by-window loop") {
  test::TempFolder tmp("extrapolation");
  const std::string dir = tmp.str("run");
  auto sets = test::tiny_run(tmp.str("cache"), 3);
  sets.insert(sets.end(), {"task.type=clm", "model.mode=decoder", "position.type=alibi",
                           "task.seq_len=16"});
  TrainOptions o;
  o.out_dir = dir;
  o.quiet = true;
  REQUIRE(train(load_config({test::config_path("base.yaml")}, sets), o).finished);

  LoadedRun run = load_run(dir);
  ExtrapolationOptions eo;
  eo.lengths = {16, 32};
  eo.stride = 4;
  eo.max_tokens = 1 << 30;  // every window the stream holds
  eo.batch_size = 3;        // windows batched unevenly: the last batch is short
  const auto rows = evaluate_lengths(run, eo);
  REQUIRE(rows.size() == 2);

  const auto& stream = run.data->stream(Split::Test);
  const int64_t N = static_cast<int64_t>(stream.size()) - 1;
  for (const auto& row : rows) {
    const int64_t L = row.length;
    REQUIRE(row.applicable);
    REQUIRE(N >= 2 * L);
    std::vector<std::pair<int64_t, int64_t>> chunks, windows{{0, 0}};
    for (int64_t s = 0; s + L <= N; s += L) chunks.push_back({s, 0});
    for (int64_t s = eo.stride; s + L <= N; s += eo.stride) windows.push_back({s, L - eo.stride});
    double n_chunks = 0, n_windows = 0, chunk_sd = 0, window_sd = 0;
    const double chunk_nll = naive_nll(run, stream, chunks, L, &n_chunks, &chunk_sd);
    const double window_nll = naive_nll(run, stream, windows, L, &n_windows, &window_sd);
    CAPTURE(L);
    CHECK(row.metrics.at("tokens") == n_chunks);
    CHECK(row.metrics.at("loss") == doctest::Approx(chunk_nll).epsilon(1e-6));
    CHECK(row.metrics.at("ppl") == doctest::Approx(std::exp(chunk_nll)).epsilon(1e-6));
    CHECK(row.metrics.at("loss_sliding") == doctest::Approx(window_nll).epsilon(1e-6));
    CHECK(row.metrics.at("ppl_sliding") == doctest::Approx(std::exp(window_nll)).epsilon(1e-6));
    // Every scored position of the sliding protocol is a different token of the stream.
    CHECK(n_windows == L + eo.stride * static_cast<double>(windows.size() - 1));
    CHECK(row.metrics.at("tokens_sliding") == n_windows);
    // The spread of the per-token loss, for the sampling error of the mean (docs/analysis.md).
    CHECK(row.metrics.at("loss_sd") == doctest::Approx(chunk_sd).epsilon(1e-5));
    CHECK(row.metrics.at("loss_sliding_sd") == doctest::Approx(window_sd).epsilon(1e-5));
  }
}

TEST_CASE("eval (mlm): a length longer than the test text is not applicable, not a shorter row "
          "labelled with that length") {
  test::TempFolder tmp("extrapolation_mlm");
  const std::string dir = tmp.str("run");
  auto sets = test::tiny_run(tmp.str("cache"), 3);
  sets.insert(sets.end(), {"position.type=alibi", "task.seq_len=16"});
  TrainOptions o;
  o.out_dir = dir;
  o.quiet = true;
  REQUIRE(train(load_config({test::config_path("base.yaml")}, sets), o).finished);

  LoadedRun run = load_run(dir);
  const int64_t n = static_cast<int64_t>(run.data->stream(Split::Test).size());
  REQUIRE(n > 32);
  ExtrapolationOptions eo;
  // A row of length L holds a [CLS] token and L-1 stream tokens: n+1 is the longest length the
  // test text fills.
  eo.lengths = {32, n + 1, n + 2, 4 * n};
  const auto rows = evaluate_lengths(run, eo);
  REQUIRE(rows.size() == 4);
  CHECK(rows[0].applicable);
  CHECK(rows[1].applicable);
  CHECK(rows[1].metrics.count("accuracy") == 1);
  for (int i : {2, 3}) {
    CAPTURE(rows[i].length);
    CHECK_FALSE(rows[i].applicable);
    CHECK(rows[i].metrics.empty());
    CHECK(rows[i].note == fmt::format("test stream ({} tokens) shorter than the length", n));
  }
}

TEST_CASE("eval: a length whose attention scores exceed memory is named with the bytes it needs") {
  // 2 (scores and probabilities) x batch x heads x L^2 x 4 bytes.
  const double GB = 1024.0 * 1024.0 * 1024.0;
  CHECK(attention_memory_note(1, 4, 1 << 14, 8 * GB) == "");  // exactly 8 GB fits
  CHECK(attention_memory_note(1, 4, (1 << 14) + 1, 8 * GB) ==
        "one layer's attention scores need at least 8.0 GB (batch 1, 4 heads), more than this "
        "machine's 8.0 GB");
  CHECK(attention_memory_note(2, 12, 100000, 24 * GB) ==
        "one layer's attention scores need at least 1788.1 GB (batch 2, 12 heads), more than this "
        "machine's 24.0 GB");
  // Lengths whose square overflows int64 are computed in floating point, not wrapped.
  CHECK(attention_memory_note(1, 1, 99999999999, 24 * GB).rfind("one layer's", 0) == 0);
  CHECK(attention_memory_note(1, 4, 1 << 20, 0) == "");  // memory unknown: no check
}

namespace {

// A tiny learned-only MLM run at T = 16 with the given learned.max_len and beyond setting.
std::string learned_run(const test::TempFolder& tmp, const std::string& name, int64_t max_len,
                        const std::string& beyond) {
  const std::string dir = tmp.str(name);
  auto sets = test::tiny_run(tmp.str("cache"), 2);
  sets.insert(sets.end(), {"position.type=learned", "task.seq_len=16",
                           "position.learned.max_len=" + std::to_string(max_len),
                           "position.learned.beyond=" + beyond, "snapshots.probe_len=16"});
  REQUIRE(test::train_here(sets, dir).finished);
  return dir;
}

}  // namespace

TEST_CASE("eval: learned rows past the training length are never trained, clamped or not") {
  test::TempFolder tmp("extrapolation_learned");
  ExtrapolationOptions eo;
  eo.lengths = {16, 32, 64};
  eo.max_tokens = 512;
  {
    // A table of 32 rows trained at T = 16: rows 16..31 kept their initial values.
    LoadedRun run = load_run(learned_run(tmp, "long_table", 32, "error"));
    const auto rows = evaluate_lengths(run, eo);
    REQUIRE(rows.size() == 3);
    CHECK(rows[0].applicable);
    CHECK_FALSE(rows[1].applicable);  // it used to be evaluated with untrained rows
    CHECK(rows[1].note == "positions 16..31 would use rows of the learned table (max_len 32) that "
                          "training never reached (it used lengths up to 16)");
    CHECK_FALSE(rows[2].applicable);
    CHECK(rows[2].note == "beyond the learned position table (max_len 32), whose rows past 16 "
                          "were never trained either");
  }
  {
    LoadedRun run = load_run(learned_run(tmp, "long_table_clamp", 32, "clamp"));
    const auto rows = evaluate_lengths(run, eo);
    REQUIRE(rows.size() == 3);
    CHECK(rows[0].applicable);
    for (int i : {1, 2}) {
      CHECK_FALSE(rows[i].applicable);
      CHECK(rows[i].note.find("and clamping reuses its last, untrained row") != std::string::npos);
    }
  }
  {
    // Table = training length, clamped: longer lengths are evaluated, and say how.
    const std::string dir = learned_run(tmp, "clamp", 16, "clamp");
    LoadedRun run = load_run(dir);
    const auto rows = evaluate_lengths(run, eo);
    REQUIRE(rows.size() == 3);
    CHECK(rows[0].note.empty());
    for (int i : {1, 2}) {
      CHECK(rows[i].applicable);
      CHECK(rows[i].note == "positions past 16 reuse learned row 15 (position.learned.beyond=clamp)");
    }
    save_extrapolation(dir, run, rows, eo);
    auto r = RunFileReader::open(run_h5_path(dir));
    CHECK(r->attribute("/eval/extrapolation", "clamped") ==
          "32, 64: positions past 16 reuse learned row 15 (position.learned.beyond=clamp)");
    CHECK(r->attribute("/eval/extrapolation", "not_applicable").empty());
  }
}

TEST_CASE("eval: a fine-tune counts as trained up to its pre-trained run's length") {
  test::TempFolder tmp("extrapolation_finetuned");
  // Pre-trained at T = 32 with a 32-row table, fine-tuned at T = 16: rows 16..31 are trained.
  auto pre = test::tiny_run(tmp.str("cache"), 2);
  pre.insert(pre.end(), {"position.type=learned", "snapshots.every_percent=0"});
  REQUIRE(test::train_here(pre, tmp.str("pre")).finished);
  auto ft = pre;
  ft.insert(ft.end(), {"task.seq_len=16", "snapshots.probe_len=16"});
  TrainOptions o;
  o.out_dir = tmp.str("ft");
  o.quiet = true;
  o.init_from = tmp.str("pre");
  REQUIRE(train(load_config({test::config_path("base.yaml")}, ft), o).finished);
  ExtrapolationOptions eo;
  eo.lengths = {16, 32};
  eo.max_tokens = 256;
  LoadedRun run = load_run(tmp.str("ft"));
  auto rows = evaluate_lengths(run, eo);
  REQUIRE(rows.size() == 2);
  CHECK(rows[1].applicable);  // was: "positions 16..31 ... never reached"
  // Without the pre-trained folder, only the run's own length is known to be trained.
  std::filesystem::remove_all(tmp.str("pre"));
  rows = evaluate_lengths(run, eo);
  CHECK_FALSE(rows[1].applicable);
}

TEST_CASE("eval (mlm): the windows scored do not depend on the batch size") {
  test::TempFolder tmp("extrapolation_batch");
  const std::string dir = tmp.str("run");
  auto sets = test::tiny_run(tmp.str("cache"), 2);
  sets.insert(sets.end(), {"position.type=alibi", "task.seq_len=16"});
  REQUIRE(test::train_here(sets, dir).finished);
  LoadedRun run = load_run(dir);
  ExtrapolationOptions eo;
  eo.lengths = {32};
  eo.max_tokens = 32 * 10;  // 10 windows: batches of 3 end with a short one
  std::map<std::string, double> m[2];
  int i = 0;
  for (int64_t batch : {8, 3}) {
    eo.batch_size = batch;
    const auto rows = evaluate_lengths(run, eo);
    REQUIRE(rows.size() == 1);
    m[i++] = rows[0].metrics;
  }
  // Batch 8 at T = 32 holds 4 rows of 32 (batch x seq_len / L); it used to take
  // floor(max_tokens / (rows x L)) whole batches: 8 windows against 9 with batch 3.
  CHECK(m[0].at("loss") == doctest::Approx(m[1].at("loss")).epsilon(1e-6));
  CHECK(m[0].at("accuracy") == doctest::Approx(m[1].at("accuracy")).epsilon(1e-9));
}

TEST_CASE("eval (mlm): masked-token loss and accuracy equal a loop over the task's windows, one "
          "forward pass each") {
  test::TempFolder tmp("extrapolation_mlm_loop");
  const std::string dir = tmp.str("run");
  auto sets = test::tiny_run(tmp.str("cache"), 3);
  sets.insert(sets.end(), {"position.type=alibi", "task.seq_len=16"});
  REQUIRE(test::train_here(sets, dir).finished);
  LoadedRun run = load_run(dir);
  ExtrapolationOptions eo;
  eo.lengths = {16, 40};
  eo.max_tokens = 200;  // 12 windows at 16, 5 at 40
  eo.batch_size = 5;    // 5 rows at 16 (batches 5, 5, 2), 2 at 40 (2, 2, 1)
  const auto rows = evaluate_lengths(run, eo);
  REQUIRE(rows.size() == 2);

  const auto& stream = run.data->stream(Split::Test);
  const int64_t cls = run.data->tokenizer().special().cls;
  torch::NoGradGuard guard;
  for (const auto& row : rows) {
    const int64_t L = row.length, windows = eo.max_tokens / L;
    CAPTURE(L);
    REQUIRE(row.applicable);
    REQUIRE(static_cast<int64_t>(stream.size()) >= windows * (L - 1));
    // One window per batch: evaluation masks are fixed per window (docs/data.md), whatever the
    // batch they come in.
    const auto one = run.data->eval_batches(Split::Test, 1, windows, L);
    REQUIRE(static_cast<int64_t>(one.size()) == windows);
    double nll = 0, right = 0, n = 0;
    for (int64_t w = 0; w < windows; ++w) {
      const Batch& b = one[w];
      REQUIRE(b.tokens.sizes() == torch::IntArrayRef({1, L}));
      // The documented row: [CLS] + the L-1 stream tokens from w·(L-1) (windows consecutive,
      // not overlapping); a scored position's target is the stream token it hides, and an
      // unscored one shows that token unchanged.
      CHECK(b.tokens[0][0].item<int64_t>() == cls);
      CHECK(b.targets[0][0].item<int64_t>() == -100);
      const auto logits = run.model->lm_logits(run.model->hidden(b.tokens));  // (1,L,V)
      const auto logp = torch::log_softmax(logits.to(torch::kDouble), -1);    // (1,L,V)
      for (int64_t t = 1; t < L; ++t) {
        const int64_t original = stream[w * (L - 1) + t - 1];
        const int64_t y = b.targets[0][t].item<int64_t>();
        if (y == -100) {
          CHECK(b.tokens[0][t].item<int64_t>() == original);
          continue;
        }
        CHECK(y == original);
        nll -= logp[0][t][y].item<double>();
        right += logits[0][t].argmax().item<int64_t>() == y;
        n += 1;
      }
    }
    REQUIRE(n > 0);
    CHECK(row.metrics.at("loss") == doctest::Approx(nll / n).epsilon(1e-6));
    CHECK(row.metrics.at("accuracy") == doctest::Approx(right / n).epsilon(1e-9));
    CHECK(row.metrics.at("tokens") == n);  // the scored (masked) tokens, counted here
  }
}

TEST_CASE("eval (synthetic): every test length by default, and a length the task lacks is named") {
  Config c = load_config({test::config_path("base.yaml")},
                         {"task.type=copy", "task.seq_len=40", "task.min_len=4", "task.max_len=8",
                          "task.eval_lengths=[4,8,16]"})
                 .config;
  CHECK(extrapolation_options(c).lengths.empty());  // was {40, 80, 160}: token lengths
  c.eval.lengths = {16, 24};
  CHECK(extrapolation_options(c).lengths == std::vector<int64_t>{16, 24});

  test::TempFolder tmp("extrapolation_synthetic");
  auto sets = test::tiny_run(tmp.str("cache"), 2);
  sets.insert(sets.end(), {"task.type=copy", "task.seq_len=40", "task.min_len=4", "task.max_len=8",
                           "task.eval_lengths=[4,8,16]", "task.eval_examples=4",
                           "position.type=alibi", "snapshots.probe_len=40"});
  REQUIRE(test::train_here(sets, tmp.str("run")).finished);
  LoadedRun run = load_run(tmp.str("run"));
  ExtrapolationOptions eo;
  eo.lengths = {8, 24};  // 24 used to be dropped without a word
  auto rows = evaluate_lengths(run, eo);
  REQUIRE(rows.size() == 2);
  CHECK(rows[0].length == 8);
  CHECK(rows[0].applicable);
  CHECK(rows[1].length == 24);
  CHECK_FALSE(rows[1].applicable);
  CHECK(rows[1].note == "not a test length of the task (task.eval_lengths gives 4, 8, 16)");
  eo.lengths = {};  // every test length
  rows = evaluate_lengths(run, eo);
  REQUIRE(rows.size() == 3);
  CHECK(rows[2].length == 16);
}

TEST_CASE("eval (classify, span_qa): every test example is scored at each length") {
  test::TempFolder tmp("extrapolation_finetune");
  for (const std::vector<std::string>& task :
       {std::vector<std::string>{"task.type=classify", "data.corpus=sentiment", "task.num_classes=2"},
        std::vector<std::string>{"task.type=span_qa", "data.corpus=wordnet_qa"}}) {
    CAPTURE(task[0]);
    const std::string dir = tmp.str(task[0].substr(10));
    auto sets = test::tiny_run(tmp.str("cache"), 2);
    sets.insert(sets.end(), task.begin(), task.end());
    sets.insert(sets.end(), {"position.type=alibi", "task.seq_len=48", "snapshots.probe_len=48",
                             "data.cache_dir=" + test::cache_dir()});
    REQUIRE(test::train_here(sets, dir).finished);
    LoadedRun run = load_run(dir);
    ExtrapolationOptions eo;
    eo.lengths = {48, 96};
    eo.batch_size = 8;
    eo.max_tokens = 64;  // bounds lm windows; every test example counts here
    const auto rows = evaluate_lengths(run, eo);
    REQUIRE(rows.size() == 2);
    for (const auto& row : rows) {
      CAPTURE(row.length);
      REQUIRE(row.applicable);  // "has no length axis" before
      // The whole test split at that length, as a direct evaluation computes it.
      const auto all = run.data->eval_batches(Split::Test, 8 * 48 / row.length, 0, row.length);
      const auto direct = evaluate(run.model, *run.data, run.config.config.task.type, Split::Test,
                                   all, run.device);
      // Plus `examples`: every test example, counted here from the batches.
      REQUIRE(direct.size() + 1 == row.metrics.size());
      for (const auto& [k, v] : direct) CHECK(row.metrics.at(k) == doctest::Approx(v).epsilon(1e-9));
      double examples = 0;
      for (const auto& b : all) examples += static_cast<double>(b.tokens.size(0));
      CHECK(row.metrics.at("examples") == examples);
    }
    CHECK(rows[0].metrics.count(task[0] == "task.type=span_qa" ? "f1" : "accuracy") == 1);
    if (task[0] != "task.type=classify") continue;
    // Classification F1 and MCC: at each length, and logged by training like every validation
    // metric (metrics.jsonl, run.h5 /metrics, result.json).
    for (const std::string k : {"f1", "mcc"}) {
      CAPTURE(k);
      for (const auto& row : rows) CHECK(row.metrics.count(k) == 1);
      CHECK_FALSE(test::logged(dir, "valid_" + k).empty());
      CHECK(RunFileReader::open(run_h5_path(dir))->exists(schema::metric_group("valid_" + k)));
      std::ifstream in(run_result_path(dir));
      CHECK(nlohmann::json::parse(in).at("valid").contains(k));
    }
  }
}

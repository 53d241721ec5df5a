// A run's token ids belong to one tokenizer: a SentencePiece run keeps its model as
// DIR/tokenizer.model, resuming and reloading use that copy, and fine-tuning with --init-from
// tokenizes the new corpus with the pre-trained vocabulary (not a model trained on the new corpus).
#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>

#include "core/config/config.h"
#include "core/data/task.h"
#include "core/util/text_util.h"
#include "core/data/tokenizer.h"
#include "core/train/run_model.h"
#include "core/train/trainer.h"
#include "core/util/errors.h"
#include "core/task/task_registry.h"
#include "tests/helpers.h"
#include "tests/process_util.h"
#include "tests/tiny_run.h"

using namespace relpos;
namespace fs = std::filesystem;

namespace {

// The SentencePiece models in a tokenizer cache.
std::vector<std::string> cached_models(const std::string& cache) {
  std::vector<std::string> out;
  if (!fs::exists(cache + "/tokenizers")) return out;
  for (const auto& e : fs::directory_iterator(cache + "/tokenizers")) out.push_back(e.path().string());
  return out;
}

// A second corpus with other text: the SentencePiece fixture's lines, eight per document.
std::string write_other_corpus(const std::string& path) {
  std::ifstream in(test::fixture_path("data/spm_train.txt"));
  std::ofstream out(path);
  int n = 0;
  for (std::string line; std::getline(in, line);) {
    out << line << "\n";
    if (++n % 8 == 0) out << "\n";
  }
  return path;
}

std::vector<std::string> sp_run(const std::string& cache, int64_t steps) {
  auto o = test::tiny_run(cache, steps);
  o.insert(o.end(), {"data.tokenizer=sentencepiece", "data.vocab_size=400"});
  return o;
}

// `relpos train` of `sets` into `out` from the pre-trained run `pre`, with its progress output
// (not --quiet): the exit code and what it printed.
auto finetune_cli(const std::vector<std::string>& sets, const std::string& out,
                  const std::string& pre, const std::string& log) {
  auto a = test::train_args(sets, out);
  a.erase(std::find(a.begin(), a.end(), "--quiet"));
  a.insert(a.end(), {"--init-from", pre});
  return test::run_relpos(a, log);
}

TrainOptions run_options(const std::string& out, const std::string& init_from = "") {
  TrainOptions o;
  o.out_dir = out;
  o.init_from = init_from;
  return o;
}

TrainResult train_run(const std::vector<std::string>& sets, TrainOptions o) {
  o.quiet = true;
  return train(load_config({test::config_path("base.yaml")}, sets), o);
}

std::string config_error_of(const std::vector<std::string>& sets, const TrainOptions& o) {
  try {
    train_run(sets, o);
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("a sentencepiece run keeps its tokenizer and fine-tuning reads the pre-trained vocabulary") {
  test::TempFolder tmp("tokenizer");
  const std::string cache = tmp.str("cache");
  const std::string pre = tmp.str("pre");
  train_run(sp_run(cache, 4), run_options(pre));

  // The run's copy is the model it trained (the only one in the cache).
  const auto trained = cached_models(cache);
  REQUIRE(trained.size() == 1);
  REQUIRE(fs::exists(run_tokenizer_path(pre)));
  CHECK(read_file(run_tokenizer_path(pre), "model") == read_file(trained[0], "model"));

  // Fine-tune (MLM on another corpus) from it: the ids come from the pre-trained model, and no
  // tokenizer was trained on the new corpus.
  const std::string other = write_other_corpus(tmp.str("other.txt"));
  const std::string ft = tmp.str("ft");
  auto ft_sets = sp_run(cache, 2);
  ft_sets.push_back("data.corpus=" + other);
  ft_sets.push_back("data.vocab_size=450");  // not used: the pre-trained model has 400 pieces
  train_run(ft_sets, run_options(ft, pre));
  CHECK(cached_models(cache).size() == 1);
  // The run records the settings of the tokenizer it used (it used to record 450).
  CHECK(load_run_config(ft).config.data.vocab_size == 400);
  CHECK(read_file(run_tokenizer_path(ft), "model") == read_file(run_tokenizer_path(pre), "model"));
  const std::string probe = "The lamp was lit at the usual hour.";
  const auto pre_ids = load_sentencepiece_tokenizer(run_tokenizer_path(pre))->encode(probe);
  LoadedRun loaded = load_run(ft);
  CHECK(loaded.data->tokenizer().encode(probe) == pre_ids);

  // Without --init-from the same config trains its own model on the other corpus, which
  // tokenizes differently: the check above can fail.
  Config own = load_config({test::config_path("base.yaml")}, ft_sets).config;
  auto own_data = make_task_data(own);
  CHECK(cached_models(cache).size() == 2);
  CHECK(own_data->tokenizer().encode(probe) != pre_ids);
}

TEST_CASE("resuming a sentencepiece run tokenizes with its kept model, even with the cache gone") {
  test::TempFolder tmp("tokenizer_resume");
  const std::string cache = tmp.str("cache");
  const std::string dir = tmp.str("run");
  TrainOptions o = run_options(dir);
  o.stop_after = 4;
  CHECK_FALSE(train_run(sp_run(cache, 8), o).finished);
  fs::remove_all(cache);
  TrainOptions r = run_options(dir);
  r.resume = true;
  r.quiet = true;
  CHECK(train(load_run_config(dir), r).finished);
  CHECK(cached_models(cache).empty());
  // Evaluation loads the kept tokenizer too; without it, it refuses (it used to train a new
  // tokenizer into the cache without a word).
  CHECK_NOTHROW(load_run(dir));
  fs::remove(run_tokenizer_path(dir));
  CHECK_THROWS_WITH_AS(load_run(dir), doctest::Contains("missing: the run's sentencepiece tokenizer"),
                       ConfigError);
  CHECK(cached_models(cache).empty());
}

TEST_CASE("--init-from refuses a tokenizer that does not match the pre-trained run") {
  test::TempFolder tmp("tokenizer_mismatch");
  const std::string cache = tmp.str("cache");
  const std::string pre = tmp.str("pre");
  train_run(sp_run(cache, 2), run_options(pre));

  const TrainOptions fo = run_options(tmp.str("ft"), pre);
  auto bytes_sets = test::tiny_run(cache, 2);  // data.tokenizer=bytes
  std::string e = config_error_of(bytes_sets, fo);
  CHECK(e.find("--init-from " + pre) != std::string::npos);
  CHECK(e.find("tokenizes with sentencepiece, this config with bytes") != std::string::npos);

  // A pre-trained run without its tokenizer.model (an older relpos): refused, not retrained.
  fs::remove(run_tokenizer_path(pre));
  e = config_error_of(sp_run(cache, 2), fo);
  CHECK(e.find("has no tokenizer.model") != std::string::npos);
  CHECK_FALSE(fs::exists(fo.out_dir + "/checkpoint.pt"));
}

TEST_CASE("--init-from takes the pre-trained run's tokenizer when the config chooses none, and "
          "says so") {
  test::TempFolder tmp("tokenizer_taken");
  const std::string cache = tmp.str("cache");
  const std::string pre = tmp.str("pre");
  train_run(sp_run(cache, 2), run_options(pre));
  // The fine-tune's settings without data.tokenizer: base.yaml's `bytes` is no choice.
  std::vector<std::string> sets;
  for (const auto& s : test::tiny_run(cache, 2))
    if (s.rfind("data.tokenizer=", 0) != 0) sets.push_back(s);
  sets.push_back("data.corpus=" + write_other_corpus(tmp.str("other.txt")));
  const std::string ft = tmp.str("ft");
  auto [code, out] = finetune_cli(sets, ft, pre, tmp.str("ft.log"));
  REQUIRE_MESSAGE(code == 0, out);
  CHECK(out.find("tokenizer: sentencepiece from --init-from " + pre) != std::string::npos);
  // The run records the tokenizer it used, and reloads with it.
  const Config recorded = load_run_config(ft).config;
  CHECK(recorded.data.tokenizer == "sentencepiece");
  CHECK(recorded.data.vocab_size == 400);
  const std::string probe = "The lamp was lit at the usual hour.";
  CHECK(load_run(ft).data->tokenizer().encode(probe) ==
        load_sentencepiece_tokenizer(run_tokenizer_path(pre))->encode(probe));
  // A config that chooses SentencePiece with other settings still gets the pre-trained model,
  // and one whole sentence says so.
  auto sp_sets = sp_run(cache, 2);
  sp_sets.push_back("data.corpus=" + write_other_corpus(tmp.str("other2.txt")));
  sp_sets.push_back("data.vocab_size=450");
  const std::string ft_sp = tmp.str("ft_sp");
  auto [sp_code, sp_out] = finetune_cli(sp_sets, ft_sp, pre, tmp.str("ft_sp.log"));
  REQUIRE_MESSAGE(sp_code == 0, sp_out);
  CHECK(sp_out.find("note: the tokenizer is the pre-trained run's SentencePiece model (vocab_size "
                    "400, unigram, byte fallback") != std::string::npos);
  CHECK(sp_out.find("not one with this config's settings (vocab_size 450, unigram, byte "
                    "fallback") != std::string::npos);
  CHECK(sp_out.find("; config.yaml and run.h5 record the model's settings\n") != std::string::npos);

  // A tokenizer the user chose (here with --set) is not overridden: refused as before.
  sets.push_back("data.tokenizer=bytes");
  const std::string e = config_error_of(sets, run_options(tmp.str("ft2"), pre));
  CHECK(e.find("tokenizes with sentencepiece, this config with bytes") != std::string::npos);
}

TEST_CASE("data.tokenizer_file loads a model instead of training, and only for sentencepiece") {
  test::TempFolder tmp("tokenizer_file");
  const std::string cache = tmp.str("cache");
  auto sets = sp_run(cache, 2);
  Config c = load_config({test::config_path("base.yaml")}, sets).config;
  auto trained = make_task_data(c);
  const std::string model = trained->tokenizer().model_file();
  const std::string copy = tmp.str("copy.model");
  fs::copy_file(model, copy);
  fs::remove_all(cache);
  sets.push_back("data.tokenizer_file=" + copy);
  Config given = load_config({test::config_path("base.yaml")}, sets).config;
  auto loaded = make_task_data(given);
  CHECK(cached_models(cache).empty());
  CHECK(loaded->tokenizer().model_file() == copy);
  CHECK(loaded->train_batch(0, 2).tokens.equal(trained->train_batch(0, 2).tokens));

  // A missing model file is a data error naming the key and the path.
  std::string missing;
  try {
    Config bad = given;
    bad.data.tokenizer_file = tmp.str("none.model");
    make_task_data(bad);
  } catch (const DataError& err) {
    missing = err.what();
  }
  CHECK(missing.find("data.tokenizer_file: '" + tmp.str("none.model") + "' is not a file") !=
        std::string::npos);

  std::string e;
  try {
    load_config({test::config_path("base.yaml")}, {"data.tokenizer_file=" + copy});
  } catch (const ConfigError& err) {
    e = err.what();
  }
  CHECK(e.find("data.tokenizer_file") != std::string::npos);
  CHECK(e.find("only the sentencepiece tokenizer loads a model file") != std::string::npos);
}

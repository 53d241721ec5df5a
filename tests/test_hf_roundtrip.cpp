// `relpos export --format hf` then `relpos import` of runs relpos trained, whatever their
// tokenizer: the imported run tokenizes as the run did, reads the same documents (the data,
// task and evaluation settings travel in config.json's "relpos" object), and so has the same
// test loss. The byte vocabulary is checked line by line against the format docs/pretrained.md
// states, written out here; the folder passes the independent reference's BertForMaskedLM
// layout check (tests/reference/hf_reference.py).
#include <doctest/doctest.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>

#include "core/train/extrapolation.h"
#include "core/train/run_model.h"
#include "core/util/text_util.h"
#include "tests/child_log.h"
#include "tests/hf_test_util.h"

using namespace relpos;
using namespace relpos::test;
namespace fs = std::filesystem;

namespace {

// A tiny BERT-shaped run (post-LN MLM, learned table longer than the training length) with
// data and task settings away from their defaults, so that an import that dropped them would
// read other documents or mask otherwise.
std::vector<std::string> roundtrip_run(const std::string& cache, const std::string& tokenizer) {
  return {"data.corpus=" + fixture_path("trainer/corpus.txt"),
          "data.cache_dir=" + cache,
          "data.tokenizer=" + tokenizer,
          std::string("data.vocab_size=") + (tokenizer == "sentencepiece" ? "300" : "80"),
          "data.valid_fraction=0.2",
          "data.test_fraction=0.2",
          "data.split_seed=77",
          "task.type=mlm",
          "task.seq_len=16",
          "task.mask_prob=0.3",
          "model.layers=2",
          "model.width=32",
          "model.heads=2",
          "model.ff_width=64",
          "model.norm=post",
          "position.type=learned",
          "position.learned.max_len=24",
          "train.steps=3",
          "train.batch_size=4",
          "train.eval_every=3",
          "train.eval_batches=1",
          "snapshots.probe_size=2",
          "threads=1"};
}

// The masked-token loss of a run on its test split at the training length.
double test_loss(const std::string& run) {
  LoadedRun r = load_run(run);
  ExtrapolationOptions o = extrapolation_options(r.config.config);
  o.lengths = {16};
  const auto rows = evaluate_lengths(r, o);
  REQUIRE(rows.size() == 1);
  REQUIRE_MESSAGE(rows[0].applicable, rows[0].note);
  return rows[0].metrics.at("loss");
}

std::vector<std::string> lines_of(const std::string& path) {
  std::ifstream in(path);
  std::vector<std::string> lines;
  for (std::string l; std::getline(in, l);) lines.push_back(l);
  return lines;
}

bool have_numpy_here() { return call_program(kPython, {"-c", "import numpy"}).exit_code == 0; }

}  // namespace

TEST_CASE("hf round trip: export -> import of a byte-level, a WordPiece and a SentencePiece run "
          "keeps the data settings and the test loss") {
  TempFolder tmp("hf_roundtrip_runs");
  for (const std::string tokenizer : {"bytes", "wordpiece", "sentencepiece"}) {
    CAPTURE(tokenizer);
    const std::string run = tmp.str(tokenizer), hf = tmp.str(tokenizer + "_hf"),
                      back = tmp.str(tokenizer + "_back");
    const ChildResult t = relpos_cli(train_args(roundtrip_run(tmp.str("cache"), tokenizer), run));
    INFO(t.out << t.err);
    REQUIRE(t.exit_code == 0);
    const ChildResult e = relpos_cli({"export", run, "--format", "hf", "--out", hf});
    INFO(e.out << e.err);
    REQUIRE(e.exit_code == 0);
    if (tokenizer == "bytes") {
      // [PAD] [UNK] [CLS] [SEP] [MASK], then <0x00> .. <0xFF>: id 5 + byte value.
      std::vector<std::string> expected = {"[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"};
      for (int b = 0; b < 256; ++b) {
        char name[8];
        std::snprintf(name, sizeof name, "<0x%02X>", b);
        expected.push_back(name);
      }
      CHECK(lines_of(hf + "/vocab.txt") == expected);
    } else if (tokenizer == "wordpiece") {
      // The vocabulary the run trained and kept is the one exported (already in relpos's order).
      REQUIRE(fs::exists(run + "/vocab.txt"));
      CHECK(lines_of(hf + "/vocab.txt") == lines_of(run + "/vocab.txt"));
    } else {
      CHECK(read_file(hf + "/spiece.model", "model") == read_file(run + "/tokenizer.model", "model"));
    }
    const auto config = read_json(hf + "/config.json");
    CHECK(config["relpos"]["tokenizer"] == tokenizer);
    CHECK(config["relpos"]["data"]["corpus"] == fixture_path("trainer/corpus.txt"));
    if (have_numpy_here()) {
      const ChildResult c = call_program(
          kPython, {std::string(RELPOS_TEST_DIR) + "/reference/hf_reference.py", "check", hf});
      INFO(c.err);
      CHECK(c.exit_code == 0);
    }
    const ChildResult i = import_ok(hf, back);
    const Config a = load_run_config(run).config, b = load_run_config(back).config;
    CHECK(b.data.tokenizer == tokenizer);
    CHECK(b.data.corpus == a.data.corpus);
    CHECK(b.data.cache_dir == a.data.cache_dir);
    CHECK(b.data.split_seed == 77);
    CHECK(b.data.valid_fraction == a.data.valid_fraction);
    CHECK(b.data.test_fraction == a.data.test_fraction);
    CHECK(b.task.seq_len == 16);  // not the table's 24 rows
    CHECK(b.task.mask_prob == a.task.mask_prob);
    CHECK(b.position.types == std::vector<std::string>{"learned"});
    const double before = test_loss(run), after = test_loss(back);
    CHECK(std::isfinite(before));
    CHECK(after == doctest::Approx(before).epsilon(1e-6));
  }
}

TEST_CASE("hf round trip: a byte vocabulary in another line order is read as bytes, its rows "
          "reordered") {
  TempFolder tmp("hf_roundtrip_order");
  const std::string run = tmp.str("run"), hf = tmp.str("hf"), a = tmp.str("a"), b = tmp.str("b");
  const ChildResult t = relpos_cli(train_args(roundtrip_run(tmp.str("cache"), "bytes"), run));
  INFO(t.out << t.err);
  REQUIRE(t.exit_code == 0);
  REQUIRE(relpos_cli({"export", run, "--format", "hf", "--out", hf}).exit_code == 0);
  import_ok(hf, a);
  // Swap the lines of the bytes 'a' and 'b' (the embedding rows stay): the checkpoint's row of
  // 'a' is now the token of 'b', and the other way round.
  auto lines = lines_of(hf + "/vocab.txt");
  std::swap(lines[5 + 'a'], lines[5 + 'b']);
  {
    std::ofstream out(hf + "/vocab.txt");
    for (const auto& l : lines) out << l << "\n";
  }
  const ChildResult r = relpos_cli({"import", hf, "--out", b});
  INFO(r.out << r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(r.out.find("reordered") != std::string::npos);
  CHECK(load_run_config(b).config.data.tokenizer == "bytes");
  const RunOutputs x = run_forward(a, {2, 5 + 'a', 5 + 'b', 3}, {}, 261);
  const RunOutputs y = run_forward(b, {2, 5 + 'b', 5 + 'a', 3}, {}, 261);
  CHECK(max_abs_diff(x.hidden, y.hidden) == 0);
  CHECK(max_abs_diff(x.logits.select(1, 5 + 'a'), y.logits.select(1, 5 + 'b')) == 0);
  CHECK(max_abs_diff(x.logits.select(1, 5 + 'b'), y.logits.select(1, 5 + 'a')) == 0);
  CHECK(max_abs_diff(x.logits.select(1, 5 + 'c'), y.logits.select(1, 5 + 'c')) == 0);
}

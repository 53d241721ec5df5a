// An imported run is an ordinary run: `relpos train --init-from` fine-tunes it (span QA on the
// SQuAD fixture, Huang et al.'s huang_m4 drop-in in both forms, classification on a GLUE-style
// TSV), `relpos eval --run` evaluates it, and GPT-2 and RoBERTa imports train with their
// byte-level BPE.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "core/io/run_file.h"
#include "core/io/schema.h"
#include "tests/hf_test_util.h"

using namespace relpos;
using namespace relpos::test;
namespace fs = std::filesystem;

namespace {

// One list of the run's --init-from record, as result.json repeats it ("loaded", "initialised",
// "unused"). (Read from result.json: this test process's HDF5 refused to convert run.h5's UTF-8
// string datasets to its ASCII memory type, although `relpos` itself reads them.)
std::vector<std::string> strings_of(const std::string& run, const std::string& list) {
  return read_json(run + "/result.json")["init_from_parameters"][list].get<std::vector<std::string>>();
}

bool has_item(const std::vector<std::string>& v, const std::string& x) {
  return std::find(v.begin(), v.end(), x) != v.end();
}

// Fine-tuning settings on top of the imported run's own config.yaml.
std::vector<std::string> finetune_args(const std::string& pretrained, const std::string& out,
                                       const std::vector<std::string>& sets) {
  std::vector<std::string> a{"train", "--config", pretrained + "/config.yaml", "--init-from",
                             pretrained, "--out", out, "--quiet"};
  for (const auto& s : sets) a.insert(a.end(), {"--set", s});
  return a;
}

// `task` (the task's keys and data) with the settings of a four-step fine-tune.
std::vector<std::string> four_steps(std::vector<std::string> task, const std::string& cache) {
  task.insert(task.end(),
              {"data.cache_dir=" + cache, "train.steps=4", "train.batch_size=2",
               "train.eval_every=2", "train.lr=1e-4", "snapshots.probe_size=2", "threads=1"});
  return task;
}

}  // namespace

TEST_CASE("hf import: a BERT import fine-tunes on the SQuAD fixture, and takes the huang_m4 "
          "drop-in") {
  TempFolder tmp("hf_finetune");
  const std::string bert = tmp.str("bert");
  import_ok(hf_fixture("bert_absolute"), bert);
  const std::vector<std::string> squad =
      four_steps({"task.type=span_qa", "task.max_query_len=6",
                  "data.corpus=" + fixture_path("data/squad/good.json"),
                  "data.valid_corpus=" + fixture_path("data/squad/dev.json"),
                  "data.test_corpus=" + fixture_path("data/squad/dev.json")},
                 tmp.str("cache"));
  const std::string ft = tmp.str("squad");
  ChildResult r = relpos_cli(finetune_args(bert, ft, squad));
  INFO(r.out << r.err);
  REQUIRE(r.exit_code == 0);
  const auto result = read_json(ft + "/result.json");
  CHECK(result["steps"] == 4);
  CHECK(result["init_from"] == bert);
  CHECK(result["valid"].contains("f1"));
  // Every transformer parameter came from the import; only the span head is new.
  const auto loaded = strings_of(ft, schema::kInitLoaded);
  const auto fresh = strings_of(ft, schema::kInitInitialised);
  CHECK(has_item(loaded, "transformer.token_embedding.weight"));
  CHECK(has_item(loaded, "transformer.position.learned.table"));
  CHECK(has_item(loaded, "transformer.segment_embedding.weight"));
  CHECK(fresh == std::vector<std::string>{"span_head.span.weight", "span_head.span.bias"});
  // The fine-tune tokenized with the imported vocabulary (the run records it).
  const Config cfg = load_run_config(ft).config;
  CHECK(cfg.data.tokenizer == "wordpiece");
  CHECK(cfg.data.vocab_file == fs::absolute(bert + "/vocab.txt").lexically_normal().string());

  // Huang et al.'s drop-in, both forms (docs/pretrained.md): method 4 replaces the absolute
  // table of the pre-trained model, or is added to it (the table then stays loaded).
  auto dropin = [&](const std::string& type, const std::string& name) {
    auto sets = squad;
    sets.push_back("position.type=" + type);
    sets.push_back("position.huang_m4.clip=15");
    const std::string out = tmp.str(name);
    const ChildResult c = relpos_cli(finetune_args(bert, out, sets));
    INFO(c.out << c.err);
    REQUIRE(c.exit_code == 0);
    CHECK(
        has_item(strings_of(out, schema::kInitInitialised), "transformer.position.huang_m4.table"));
    CHECK(has_item(strings_of(out, schema::kInitLoaded), "transformer.blocks.1.ff_out.weight"));
    return out;
  };
  const std::string m4 = dropin("huang_m4", "squad_m4");
  CHECK(has_item(strings_of(m4, schema::kInitUnused), "transformer.position.learned.table"));
  const std::string both = dropin("learned+huang_m4", "squad_learned_m4");
  CHECK(has_item(strings_of(both, schema::kInitLoaded), "transformer.position.learned.table"));
}

TEST_CASE("hf import: a BERT import fine-tunes on a GLUE-style TSV (classification)") {
  TempFolder tmp("hf_classify");
  const std::string bert = tmp.str("bert");
  import_ok(hf_fixture("bert_absolute"), bert);
  // A sentence-label TSV with a header, as GLUE's SST-2 files are.
  auto write_tsv = [&](const std::string& name, int rows) {
    const std::string path = tmp.str(name);
    std::ofstream f(path);
    f << "sentence\tlabel\n";
    for (int i = 0; i < rows; ++i)
      f << (i % 2 ? "the movie was good" : "the movie was bad") << "\t" << (i % 2) << "\n";
    return path;
  };
  const std::vector<std::string> sets = four_steps(
      {"task.type=classify", "task.num_classes=2", "data.corpus=" + write_tsv("train.tsv", 16),
       "data.valid_corpus=" + write_tsv("dev.tsv", 6)},
      tmp.str("cache"));
  const std::string ft = tmp.str("cls");
  const ChildResult r = relpos_cli(finetune_args(bert, ft, sets));
  INFO(r.out << r.err);
  REQUIRE(r.exit_code == 0);
  const auto result = read_json(ft + "/result.json");
  CHECK(result["steps"] == 4);
  CHECK(result["valid"].contains("accuracy"));
  const auto loaded = strings_of(ft, schema::kInitLoaded);
  CHECK(has_item(loaded, "transformer.token_embedding.weight"));
  CHECK(has_item(loaded, "transformer.position.learned.table"));
  CHECK(has_item(loaded, "transformer.blocks.1.ff_out.weight"));
  CHECK(has_item(strings_of(ft, schema::kInitInitialised), "classifier_head.classifier.weight"));
  CHECK(load_run_config(ft).config.data.tokenizer == "wordpiece");
}

TEST_CASE("hf import: relpos eval --run evaluates an imported BERT and ALBERT") {
  TempFolder tmp("hf_eval");
  for (const char* name : {"bert_absolute", "albert"}) {
    CAPTURE(name);
    const std::string run = tmp.str(name);
    import_ok(hf_fixture(name), run,
              {"--set", "data.corpus=" + fixture_path("trainer/corpus.txt"), "--set",
               "data.cache_dir=" + tmp.str("cache"), "--set", "eval.max_tokens=256"});
    const ChildResult r = relpos_cli({"eval", "--run", run, "--lengths", "8,16,32"});
    INFO(r.out << r.err);
    REQUIRE(r.exit_code == 0);
    const auto reader = RunFileReader::open(run_h5_path(run));
    CHECK(reader->exists("/eval/extrapolation"));
  }
}

TEST_CASE("hf import: an ALBERT import fine-tunes with its own SentencePiece model") {
  TempFolder tmp("hf_albert_ft");
  const std::string albert = tmp.str("albert");
  import_ok(hf_fixture("albert"), albert);
  const std::string ft = tmp.str("ft");
  const ChildResult r = relpos_cli(finetune_args(
      albert, ft,
      {"data.corpus=" + fixture_path("trainer/corpus.txt"), "data.cache_dir=" + tmp.str("cache"),
       "train.steps=2", "train.batch_size=2", "train.eval_every=2", "train.eval_batches=1",
       "snapshots.probe_size=2", "threads=1"}));
  INFO(r.out << r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(strings_of(ft, schema::kInitInitialised).empty());
  CHECK(fs::exists(ft + "/tokenizer.model"));
}

TEST_CASE(
    "hf import: RoBERTa fine-tunes on the SQuAD fixture and GPT-2 continues as a causal LM, "
    "both with their byte-level BPE") {
  TempFolder tmp("hf_bpe");
  const std::string roberta = tmp.str("roberta");
  import_ok(hf_fixture("roberta"), roberta);
  const std::string ft = tmp.str("roberta_squad");
  ChildResult r = relpos_cli(
      finetune_args(roberta, ft,
                    {"task.type=span_qa", "task.max_query_len=6",
                     "data.corpus=" + fixture_path("data/squad/good.json"),
                     "data.valid_corpus=" + fixture_path("data/squad/dev.json"),
                     "data.test_corpus=" + fixture_path("data/squad/dev.json"),
                     "data.cache_dir=" + tmp.str("cache"), "train.steps=2", "train.batch_size=2",
                     "train.eval_every=2", "snapshots.probe_size=2", "threads=1"}));
  INFO(r.out << r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(read_json(ft + "/result.json")["valid"].contains("f1"));
  CHECK(has_item(strings_of(ft, schema::kInitLoaded), "transformer.token_embedding.weight"));
  Config cfg = load_run_config(ft).config;
  CHECK(cfg.data.tokenizer == "byte_bpe");
  CHECK(cfg.data.vocab_file == fs::absolute(roberta + "/vocab.json").lexically_normal().string());
  CHECK(cfg.data.merges_file == fs::absolute(roberta + "/merges.txt").lexically_normal().string());

  const std::string gpt2 = tmp.str("gpt2");
  import_ok(hf_fixture("gpt2"), gpt2,
            {"--set", "data.corpus=" + fixture_path("trainer/corpus.txt"), "--set",
             "data.cache_dir=" + tmp.str("cache"), "--set", "eval.max_tokens=256"});
  const std::string lm = tmp.str("gpt2_lm");
  const std::vector<std::string> corpus = {"data.corpus=" + fixture_path("trainer/corpus.txt"),
                                           "data.cache_dir=" + tmp.str("cache"),
                                           "train.steps=2",
                                           "train.batch_size=2",
                                           "train.eval_every=2",
                                           "train.eval_batches=1",
                                           "snapshots.probe_size=2",
                                           "threads=1"};
  r = relpos_cli(finetune_args(gpt2, lm, corpus));
  INFO(r.out << r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(strings_of(lm, schema::kInitInitialised).empty());
  cfg = load_run_config(lm).config;
  CHECK(cfg.data.tokenizer == "byte_bpe");
  CHECK(cfg.model.mode == "decoder");
  r = relpos_cli({"eval", "--run", gpt2, "--lengths", "8,16"});
  INFO(r.out << r.err);
  CHECK(r.exit_code == 0);

  // Another tokenizer would give the embeddings other tokens: refused, naming both.
  auto bytes = corpus;
  bytes.push_back("data.tokenizer=bytes");
  const std::string other = tmp.str("gpt2_bytes");
  r = relpos_cli(finetune_args(gpt2, other, bytes));
  CHECK(r.exit_code == 2);
  CHECK(r.err.find("the pre-trained run tokenizes with byte_bpe, this config with bytes") !=
        std::string::npos);
  CHECK(!fs::exists(other + "/checkpoint.pt"));
}

// `relpos export --format hf`: a BERT-shaped run written as a Hugging Face BertForMaskedLM
// folder. The independent reference (tests/reference/hf_reference.py, numpy) reads the exported
// folder with its own safetensors reader, checks it is the folder BertForMaskedLM expects, and
// computes the logits, which must equal relpos's to 1e-5; import -> export -> import gives the
// same parameters bit for bit.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>

#include "tests/child_log.h"
#include "tests/hf_test_util.h"

using namespace relpos;
using namespace relpos::test;
namespace fs = std::filesystem;

namespace {

bool have_numpy() {
  const ChildResult r = call_program(kPython, {"-c", "import numpy"});
  if (r.exit_code != 0)
    FAIL_CHECK(kPython << " cannot import numpy (python3-numpy; scripts/setup.sh installs "
                          "python3-h5py, which brings it): " << r.err);
  return r.exit_code == 0;
}

std::string reference_script() { return std::string(RELPOS_TEST_DIR) + "/reference/hf_reference.py"; }

std::string joined(const std::vector<int64_t>& v) {
  std::string s;
  for (auto x : v) s += (s.empty() ? "" : ",") + std::to_string(x);
  return s;
}

// The reference's hidden states and logits of an exported folder.
RunOutputs reference_forward(const std::string& dir, const std::vector<int64_t>& ids,
                             const std::vector<int64_t>& types) {
  std::vector<std::string> args{reference_script(), "forward", dir, "--ids", joined(ids)};
  if (!types.empty()) args.insert(args.end(), {"--types", joined(types)});
  const ChildResult r = call_program(kPython, args);
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  const auto j = nlohmann::json::parse(r.out);
  return {json_matrix(j["hidden"]), json_matrix(j["logits"])};
}

ChildResult reference_check(const std::string& dir) {
  return call_program(kPython, {reference_script(), "check", dir});
}

std::map<std::string, torch::Tensor> parameters(const std::string& run) {
  const Config cfg = load_run_config(run).config;
  const auto g = read_json(run + "/result.json");
  Model model(cfg, g["imported"]["config_json"]["vocab_size"].get<int64_t>());
  load_model_parameters(run_checkpoint_path(run), *model);
  std::map<std::string, torch::Tensor> out;
  for (const auto& p : model->named_parameters()) out[p.key()] = p.value().detach().clone();
  return out;
}

// A tiny BERT-shaped run trained by relpos: post-LN MLM with token types and a WordPiece
// vocabulary, position.type as given.
std::vector<std::string> bert_shaped(const std::string& cache, const std::string& position) {
  return {"data.corpus=" + fixture_path("trainer/corpus.txt"),
          "data.cache_dir=" + cache,
          "data.tokenizer=wordpiece",
          "data.vocab_file=" + fixture_path("data/vocab.txt"),
          "data.valid_fraction=0.2",
          "data.test_fraction=0.2",
          "task.type=mlm",
          "task.seq_len=16",
          "model.layers=2",
          "model.width=32",
          "model.heads=2",
          "model.ff_width=64",
          "model.norm=post",
          "model.segments=true",
          "model.norm_eps=1e-12",
          "position.type=" + position,
          "train.steps=3",
          "train.batch_size=4",
          "train.eval_every=3",
          "train.eval_batches=1",
          "snapshots.probe_size=2",
          "threads=1"};
}

}  // namespace

TEST_CASE("hf export: import -> export -> import is bit-identical, and the reference reads the "
          "export") {
  if (!have_numpy()) return;
  TempFolder tmp("hf_roundtrip");
  for (const char* name : {"bert_absolute", "bert_relative_key", "bert_relative_key_query"}) {
    CAPTURE(name);
    const std::string a = tmp.str(std::string(name) + "_a"), hf = tmp.str(std::string(name) + "_hf"),
                      b = tmp.str(std::string(name) + "_b");
    import_ok(hf_fixture(name), a);
    const ChildResult e = relpos_cli({"export", a, "--format", "hf", "--out", hf});
    INFO(e.out << e.err);
    REQUIRE(e.exit_code == 0);
    const ChildResult c = reference_check(hf);
    INFO(c.err);
    CHECK(c.exit_code == 0);
    import_ok(hf, b);
    const auto pa = parameters(a), pb = parameters(b);
    REQUIRE(pa.size() == pb.size());
    for (const auto& [k, v] : pa) {
      CAPTURE(k);
      REQUIRE(pb.count(k));
      CHECK(torch::equal(v, pb.at(k)));
    }
    // The exported folder computes what the run computes (token ids: the exported vocab.txt
    // is in relpos's order).
    const auto g = golden(name);
    const std::vector<int64_t> ids = {2, 9, 12, 30, 3, 7, 8, 3};
    const std::vector<int64_t> types = {0, 0, 0, 0, 0, 1, 1, 1};
    const RunOutputs ours = run_forward(a, ids, types, 40);
    const RunOutputs ref = reference_forward(hf, ids, types);
    CHECK(max_abs_diff(ours.hidden, ref.hidden) <= 1e-5);
    CHECK(max_abs_diff(ours.logits, ref.logits) <= 1e-5);
  }
}

TEST_CASE("hf export: a huang_m4 run trained by relpos gives the reference's logits "
          "(relative_key_query)") {
  if (!have_numpy()) return;
  TempFolder tmp("hf_export_m4");
  const std::string run = tmp.str("m4"), hf = tmp.str("m4_hf");
  auto sets = bert_shaped(tmp.str("cache"), "huang_m4");
  sets.push_back("position.huang_m4.clip=15");  // = task.seq_len - 1: never clipped
  const ChildResult t = relpos_cli(train_args(sets, run));
  INFO(t.out << t.err);
  REQUIRE(t.exit_code == 0);
  const ChildResult e = relpos_cli({"export", run, "--format", "hf", "--out", hf});
  INFO(e.out << e.err);
  REQUIRE(e.exit_code == 0);
  CHECK(e.out.find("position_embedding_type relative_key_query") != std::string::npos);
  const auto config = read_json(hf + "/config.json");
  CHECK(config["position_embedding_type"] == "relative_key_query");
  CHECK(config["max_position_embeddings"] == 16);
  CHECK(config["architectures"] == nlohmann::json::array({"BertForMaskedLM"}));
  const ChildResult c = reference_check(hf);
  INFO(c.err);
  CHECK(c.exit_code == 0);
  // vocab.txt in relpos's id order: the special tokens first.
  std::ifstream v(hf + "/vocab.txt");
  std::vector<std::string> lines;
  for (std::string l; std::getline(v, l);) lines.push_back(l);
  CHECK(lines.size() == 19);
  CHECK(std::vector<std::string>(lines.begin(), lines.begin() + 5) ==
        std::vector<std::string>{"[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"});

  const std::vector<int64_t> ids = {2, 5, 6, 7, 9, 1, 12, 3, 14, 15, 8, 16, 3};  // T = 13
  const std::vector<int64_t> types = {0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1};
  const RunOutputs ours = run_forward(run, ids, types, 19);
  const RunOutputs ref = reference_forward(hf, ids, types);
  CHECK(max_abs_diff(ours.hidden, ref.hidden) <= 1e-5);
  CHECK(max_abs_diff(ours.logits, ref.logits) <= 1e-5);
  // The reference's checker can fail: without the format metadata Hugging Face refuses the file.
  const std::string broken = tmp.str("broken");
  fs::copy(hf, broken, fs::copy_options::recursive);
  std::ifstream in(broken + "/model.safetensors", std::ios::binary);
  std::string raw{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  in.close();
  const size_t at = raw.find("\"format\":\"pt\"");
  REQUIRE(at != std::string::npos);
  raw.replace(at, 13, "\"format\":\"xx\"");
  std::ofstream(broken + "/model.safetensors", std::ios::binary) << raw;
  const ChildResult bad = reference_check(broken);
  CHECK(bad.exit_code == 1);
  CHECK(bad.err.find("format must be 'pt'") != std::string::npos);
}

TEST_CASE("hf export: runs Hugging Face's BERT cannot express are refused, listing what can be") {
  TempFolder tmp("hf_export_bad");
  struct Bad {
    std::string name;
    std::vector<std::string> sets;
    std::string expected;
  };
  const std::vector<Bad> bad = {
      {"rope", {"position.type=rope"}, "position.type rope has no Hugging Face BERT equivalent"},
      {"clipped",
       {"position.type=huang_m4", "position.huang_m4.clip=4"},
       "position.huang_m4.clip 4 is below task.seq_len - 1 = 15"},
      {"shaw_values",
       {"position.type=shaw", "position.shaw.clip=15"},
       "shaw with value vectors (position.shaw.values true)"},
      {"pre_ln",
       {"position.type=learned", "position.learned.max_len=16", "model.norm=pre"},
       "model.norm pre (BERT is post-LN)"},
      // One table per head: unclipped (clip 15 = T - 1), so only per_head stands in the way.
      {"per_head_m4",
       {"position.type=huang_m4", "position.huang_m4.clip=15", "position.huang_m4.per_head=true"},
       "position.huang_m4.per_head true: Hugging Face's relative_key_query shares one table"},
      {"per_head_shaw",
       {"position.type=shaw", "position.shaw.clip=15", "position.shaw.values=false",
        "position.shaw.per_head=true"},
       "position.shaw.per_head true: Hugging Face's relative_key shares one table"},
  };
  for (const auto& c : bad) {
    CAPTURE(c.name);
    auto sets = bert_shaped(tmp.str("cache"), "none");
    sets.insert(sets.end(), c.sets.begin(), c.sets.end());
    sets.push_back("train.steps=1");
    const std::string run = tmp.str(c.name);
    const ChildResult t = relpos_cli(train_args(sets, run));
    INFO(t.err);
    REQUIRE(t.exit_code == 0);
    const std::string out = tmp.str("out/" + c.name);
    const ChildResult e = relpos_cli({"export", run, "--format", "hf", "--out", out});
    INFO(e.err);
    CHECK(e.exit_code == 2);
    CHECK(e.err.find("cannot be written as Hugging Face's BertForMaskedLM") != std::string::npos);
    CHECK(e.err.find(c.expected) != std::string::npos);
    CHECK(e.err.find("hint: exportable: BERT-shaped runs") != std::string::npos);
    CHECK(e.err.find("learned (absolute), huang_m4 (relative_key_query)") != std::string::npos);
    check_no_partial_folder(out);
  }
  ChildResult r = relpos_cli({"export", tmp.str("rope"), "--format", "onnx", "--out", tmp.str("x")});
  CHECK(r.exit_code == 2);
  CHECK(r.err.find("--format") != std::string::npos);
  r = relpos_cli({"export", tmp.str("nothing"), "--format", "hf", "--out", tmp.str("x")});
  CHECK(r.exit_code == 2);
  CHECK(r.err.find(tmp.str("nothing") + ": not a run folder (no run.h5)") != std::string::npos);
  check_no_partial_folder(tmp.str("x"));
}

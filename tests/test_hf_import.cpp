// `relpos import` against an independent forward pass: every tiny model folder of
// tests/fixtures/hf/ (BERT absolute / relative_key / relative_key_query, F32 / F16 / BF16,
// a pytorch_model.bin, ALBERT, RoBERTa, GPT-2) is imported with the relpos executable, and the
// imported run's hidden states and LM logits must equal those that
// tests/reference/hf_reference.py (numpy, float64, written from the published architectures)
// computed on the same folder, to 1e-5. `relpos analyze` of the run must give the P·Pᵀ
// invariance numpy computed on the same table, and the tokenizers must give the ids the
// reference used.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "core/data/tokenizer.h"
#include "core/hf/hf_vocab.h"
#include "core/util/sha256.h"
#include "tests/child_log.h"
#include "tests/hf_test_util.h"

using namespace relpos;
using namespace relpos::test;
namespace fs = std::filesystem;

namespace {

constexpr double kTolerance = 1e-5;

struct ImportCase {
  std::string name;
  std::vector<std::string> extra;     // import options
  std::vector<std::string> unused;    // tensors the import must list as not used
};

const std::vector<ImportCase>& cases() {
  static const std::vector<ImportCase> c = {
      {"bert_absolute",
       {},
       {"bert.embeddings.position_ids", "bert.pooler.dense.weight", "bert.pooler.dense.bias",
        "cls.seq_relationship.weight", "cls.seq_relationship.bias"}},
      {"bert_relative_key", {}, {"bert.embeddings.position_embeddings.weight"}},
      {"bert_relative_key_query", {}, {"bert.embeddings.position_embeddings.weight"}},
      {"bert_bf16_bare", {"--init-missing-head"}, {"pooler.dense.weight", "pooler.dense.bias"}},
      {"bert_bin", {}, {}},
      {"albert",
       {},
       {"albert.pooler.weight", "albert.pooler.bias", "sop_classifier.classifier.weight",
        "sop_classifier.classifier.bias"}},
      {"roberta",
       {},
       {"roberta.embeddings.position_ids", "roberta.pooler.dense.weight",
        "roberta.pooler.dense.bias"}},
      {"gpt2",
       {},
       {"transformer.h.0.attn.bias", "transformer.h.1.attn.bias",
        "transformer.h.0.attn.masked_bias"}},
  };
  return c;
}

bool is_bert(const std::string& name) { return name.rfind("bert", 0) == 0; }

std::vector<int64_t> ints(const nlohmann::json& j) {
  std::vector<int64_t> v;
  for (const auto& x : j) v.push_back(x.get<int64_t>());
  return v;
}

// The invariance `relpos analyze` wrote for P·Pᵀ of the learned table.
double analyzed_gram_invariance(const std::string& run) {
  std::ifstream in(run + "/tables/invariance.csv");
  REQUIRE(in.good());
  for (std::string line; std::getline(in, line);) {
    std::vector<std::string> f;
    std::stringstream ss(line);
    for (std::string x; std::getline(ss, x, ',');) f.push_back(x);
    if (f.size() > 6 && f[1] == "gram" && f[2] == "learned") return std::stod(f[6]);
  }
  FAIL("no gram,learned row in " << run << "/tables/invariance.csv");
  return 0;
}

}  // namespace

TEST_CASE("hf import: hidden states and MLM logits of every layout equal the numpy reference") {
  TempFolder tmp("hf_import");
  for (const auto& c : cases()) {
    CAPTURE(c.name);
    const std::string src = hf_fixture(c.name), run = tmp.str(c.name);
    const ChildResult r = import_ok(src, run, c.extra);
    const auto g = golden(c.name);

    // Token ids as the reference saw them, in relpos's numbering.
    std::vector<int64_t> ids = ints(g["ids"]), segments;
    if (!g["types"].is_null()) segments = ints(g["types"]);
    // BERT: relpos id -> vocab.txt line; GPT-2, RoBERTa: -> vocab.json id (= checkpoint row).
    std::vector<int64_t> line_of_id;
    if (c.name == "gpt2" || c.name == "roberta") {
      line_of_id = byte_bpe_rows(src + "/vocab.json");
      std::map<int64_t, int64_t> id_of_row;  // GPT-2's <|endoftext|>: its first relpos id
      for (size_t i = line_of_id.size(); i-- > 0;)
        id_of_row[line_of_id[i]] = static_cast<int64_t>(i);
      for (auto& id : ids) id = id_of_row.at(id);
      // relpos's byte-level BPE on the imported run's vocab.json + merges.txt gives exactly those
      // ids (RoBERTa: between <s> and </s>, relpos's [CLS] and [SEP]).
      const Config cfg = load_run_config(run).config;
      CHECK(cfg.data.tokenizer == "byte_bpe");
      auto tok = make_byte_bpe_tokenizer(cfg.data.vocab_file, cfg.data.merges_file);
      CHECK(tok->vocab_size() == static_cast<int64_t>(line_of_id.size()));
      std::vector<int64_t> enc = tok->encode(g["text"].get<std::string>());
      if (c.name == "roberta") {
        enc.insert(enc.begin(), tok->special().cls);
        enc.push_back(tok->special().sep);
      }
      CHECK(enc == ids);
    }
    if (is_bert(c.name)) {
      line_of_id = bert_line_of_relpos_id(src + "/vocab.txt");
      std::vector<int64_t> id_of_line(line_of_id.size());
      for (size_t i = 0; i < line_of_id.size(); ++i) id_of_line[line_of_id[i]] = static_cast<int64_t>(i);
      for (auto& id : ids) id = id_of_line[id];
      // relpos's own WordPiece on the imported run's vocabulary gives exactly those ids.
      const Config cfg = load_run_config(run).config;
      CHECK(cfg.data.tokenizer == "wordpiece");
      CHECK(cfg.data.lower_case);
      auto tok = make_wordpiece_tokenizer(run + "/vocab.txt", cfg.data.lower_case);
      std::vector<int64_t> enc{tok->special().cls};
      for (auto t : tok->encode(g["text_a"].get<std::string>())) enc.push_back(t);
      enc.push_back(tok->special().sep);
      for (auto t : tok->encode(g["text_b"].get<std::string>())) enc.push_back(t);
      enc.push_back(tok->special().sep);
      CHECK(enc == ids);
    }
    if (c.name == "albert") {
      // The run keeps spiece.model as its tokenizer.model; relpos's SentencePiece agrees with
      // spm_encode, which made the reference ids.
      auto tok = load_sentencepiece_tokenizer(run + "/tokenizer.model");
      std::vector<int64_t> enc{tok->special().cls};
      for (auto t : tok->encode(g["text"].get<std::string>())) enc.push_back(t);
      enc.push_back(tok->special().sep);
      CHECK(enc == ids);
    }

    const auto hf_config = read_json(src + "/config.json");
    const int64_t vocab = line_of_id.empty() ? hf_config["vocab_size"].get<int64_t>()
                                             : static_cast<int64_t>(line_of_id.size());
    const RunOutputs out = run_forward(run, ids, segments, vocab);
    const auto hidden = json_matrix(g["hidden"]);
    CHECK(max_abs_diff(out.hidden, hidden) <= kTolerance);
    if (!g["logits"].is_null()) {
      auto logits = json_matrix(g["logits"]);  // (T,V) in the checkpoint's vocabulary order
      if (!line_of_id.empty()) logits = logits.index_select(1, torch::tensor(line_of_id, torch::kLong));
      CHECK(max_abs_diff(out.logits, logits) <= kTolerance);
    }

    // The record: source, sha256 of the weight file (hashlib's, in golden.json), unused tensors.
    const auto result = read_json(run + "/result.json");
    const auto& imp = result["imported"];
    CHECK(imp["weights_sha256"] == g["weights_sha256"]);
    CHECK(imp["config_json"] == hf_config);
    CHECK(imp["source"].get<std::string>() == fs::absolute(src).lexically_normal().string());
    std::vector<std::string> unused = imp["unused_tensors"];
    std::sort(unused.begin(), unused.end());
    std::vector<std::string> expected = c.unused;
    std::sort(expected.begin(), expected.end());
    CHECK(unused == expected);
    for (const auto& u : c.unused) CHECK_MESSAGE(r.out.find(u) != std::string::npos, u << " not printed");
  }
}

TEST_CASE("hf import: relpos analyze gives numpy's P·Pᵀ invariance of the imported table") {
  TempFolder tmp("hf_analyze");
  for (const char* name : {"bert_absolute", "bert_bf16_bare", "bert_bin", "albert", "roberta", "gpt2"}) {
    CAPTURE(name);
    const std::string run = tmp.str(name);
    import_ok(hf_fixture(name), run,
              std::string(name) == "bert_bf16_bare" ? std::vector<std::string>{"--init-missing-head"}
                                                   : std::vector<std::string>{});
    const auto g = golden(name);
    const bool figures = std::string(name) == "bert_absolute";
    std::vector<std::string> args{"analyze", run};
    if (!figures) args.push_back("--no-figures");
    const ChildResult a = relpos_cli(args);
    INFO(a.out << a.err);
    REQUIRE(a.exit_code == 0);
    CHECK(std::abs(analyzed_gram_invariance(run) - g["gram_invariance"].get<double>()) < 1e-8);
    // The table relpos analysed has the rows numpy used (RoBERTa: from pad_token_id + 1 on).
    const Config cfg = load_run_config(run).config;
    CHECK(cfg.task.seq_len == g["gram_rows"].get<int64_t>());
    if (figures) {
      bool png = false;
      for (const auto& e : fs::directory_iterator(run + "/figures")) png |= e.path().extension() == ".png";
      CHECK(png);
    }
  }
}

TEST_CASE("hf import: relpos analyze draws the relative tables of a relative BERT") {
  TempFolder tmp("hf_analyze_rel");
  const std::string run = tmp.str("rkq");
  import_ok(hf_fixture("bert_relative_key_query"), run);
  const ChildResult a = relpos_cli({"analyze", run});
  INFO(a.out << a.err);
  REQUIRE(a.exit_code == 0);
  // One figure per layer of the imported (L,2K+1,d) table: no P·Pᵀ, there is no absolute table.
  CHECK(fs::exists(run + "/figures/relpos_huang_m4_table_layer0.png"));
  CHECK(fs::exists(run + "/figures/relpos_huang_m4_table_layer1.png"));
}

TEST_CASE("hf import: the run file passes the independent h5py reader") {
  if (call_program(kPython, {"-c", "import h5py"}).exit_code != 0) {
    MESSAGE("python3-h5py missing: skipped");
    return;
  }
  TempFolder tmp("hf_h5py");
  for (const char* name : {"bert_absolute", "bert_relative_key_query", "gpt2"}) {
    CAPTURE(name);
    import_ok(hf_fixture(name), tmp.str(name));
    const ChildResult c =
        call_program(kPython, {std::string(RELPOS_TEST_DIR) + "/reference/read_run_file.py",
                               "check", tmp.str(name) + "/run.h5"});
    INFO(c.out << c.err);
    CHECK(c.exit_code == 0);
  }
}

TEST_CASE("hf import: the configs map every architecture feature") {
  TempFolder tmp("hf_configs");
  import_ok(hf_fixture("bert_relative_key"), tmp.str("rk"));
  import_ok(hf_fixture("albert"), tmp.str("albert"));
  import_ok(hf_fixture("gpt2"), tmp.str("gpt2"));
  import_ok(hf_fixture("roberta"), tmp.str("roberta"));
  const Config rk = load_run_config(tmp.str("rk")).config;
  CHECK(rk.model.norm == "post");
  CHECK(rk.model.activation == "gelu_tanh");  // hidden_act gelu_new
  CHECK(rk.model.norm_eps == doctest::Approx(1e-12).epsilon(1e-9));
  CHECK(rk.position.types == std::vector<std::string>{"shaw"});
  CHECK(rk.task.type == "mlm");
  const Config al = load_run_config(tmp.str("albert")).config;
  CHECK(al.model.share_layers);
  CHECK(al.model.embedding_width == 8);
  CHECK(al.model.embedding_norm_before_projection);
  CHECK(al.data.tokenizer == "sentencepiece");
  CHECK(fs::exists(tmp.str("albert") + "/tokenizer.model"));
  const Config g2 = load_run_config(tmp.str("gpt2")).config;
  CHECK(g2.model.mode == "decoder");
  CHECK(g2.model.norm == "pre");
  CHECK(g2.task.type == "clm");
  CHECK(g2.data.tokenizer == "byte_bpe");
  CHECK(!g2.model.segments);
  const Config ro = load_run_config(tmp.str("roberta")).config;
  CHECK(ro.task.seq_len == 64);  // 66 rows, the first two before pad_token_id + 1
  CHECK(ro.model.segment_vocab == 1);
}

TEST_CASE("sha256: the FIPS 180-4 examples") {
  CHECK(sha256_hex("") == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  CHECK(sha256_hex("abc") == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  CHECK(sha256_hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq") ==
        "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  CHECK(sha256_hex(std::string(1000000, 'a')) ==
        "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

TEST_CASE(
    "hf import: a cased BERT vocabulary keeps its case, told by tokenizer_config.json or "
    "seen in vocab.txt") {
  // bert_relative_key has no tokenizer_config.json and an uncased vocab.txt (lower_case true:
  // the import test above). Here: one line upper-cased ("the" -> "The"), then an uncased
  // vocabulary whose tokenizer_config.json says do_lower_case false.
  TempFolder tmp("hf_cased");
  const fs::path dir = tmp.path / "bert";
  fs::copy(hf_fixture("bert_relative_key"), dir);
  const std::string vocab = (dir / "vocab.txt").string();
  const std::string uncased = read_text(vocab);
  std::string cased = uncased;
  const size_t at = cased.find("\nthe\n");
  REQUIRE(at != std::string::npos);
  cased[at + 1] = 'T';
  std::ofstream(vocab, std::ios::binary | std::ios::trunc) << cased;

  ImportedVocab v = import_vocab(read_hf_config(dir.string()));
  CHECK_FALSE(v.lower_case);
  REQUIRE(!v.notes.empty());
  CHECK(contains(v.notes.front(),
                 "data.lower_case false: no do_lower_case in "
                 "tokenizer_config.json, and vocab.txt has some upper-case"));
  // The cased WordPiece keeps "The" and "the" apart: "The" is its own token and "the" has none.
  const auto tok = make_wordpiece_tokenizer(vocab, false);
  const auto ids = tok->encode("The the");
  REQUIRE(ids.size() == 2);
  CHECK(ids[0] != tok->special().unk);
  CHECK(ids[1] == tok->special().unk);
  // `relpos import` writes it into the run's config.
  import_ok(dir.string(), tmp.str("run_cased"));
  CHECK_FALSE(load_run_config(tmp.str("run_cased")).config.data.lower_case);

  // tokenizer_config.json overrules what the vocabulary looks like.
  std::ofstream(vocab, std::ios::binary | std::ios::trunc) << uncased;
  std::ofstream(dir / "tokenizer_config.json") << "{\"do_lower_case\": false}\n";
  v = import_vocab(read_hf_config(dir.string()));
  CHECK_FALSE(v.lower_case);
  CHECK(contains(v.notes.front(),
                 "data.lower_case false from tokenizer_config.json's do_lower_case"));
}

// Bad Hugging Face folders and arguments: `relpos import` and `relpos export` must stop with an
// error that names the file, the tensor or key and what was expected, exit with status 2, and
// leave no run folder (nor a half-written one beside it). The broken folders are copies of the
// committed fixtures, changed here with a few lines of JSON and byte surgery (nlohmann only).
#include <doctest/doctest.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>

#include "tests/hf_test_util.h"
#include "tests/text_file.h"

using namespace relpos;
using namespace relpos::test;
namespace fs = std::filesystem;

namespace {

void spit(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << bytes;
}

// A safetensors file split into its header and data, and put back together.
struct StFile {
  nlohmann::ordered_json header;
  std::string data;

  explicit StFile(const std::string& path) {
    const std::string raw = test::read_text(path);
    uint64_t n = 0;
    for (int i = 7; i >= 0; --i) n = (n << 8) | static_cast<unsigned char>(raw[i]);
    header = nlohmann::ordered_json::parse(raw.substr(8, n));
    data = raw.substr(8 + n);
  }
  void write(const std::string& path) const {
    std::string h = header.dump();
    h.append((8 - (8 + h.size()) % 8) % 8, ' ');
    std::string len(8, '\0');
    uint64_t n = h.size();
    for (int i = 0; i < 8; ++i, n >>= 8) len[i] = static_cast<char>(n & 0xff);
    spit(path, len + h + data);
  }
  // Drops a tensor and packs the rest again, so the file stays valid without it.
  void remove(const std::string& name) {
    nlohmann::ordered_json h;
    std::string d;
    for (auto& [k, v] : header.items()) {
      if (k == name) continue;
      if (k == "__metadata__") {
        h[k] = v;
        continue;
      }
      const uint64_t b = v["data_offsets"][0], e = v["data_offsets"][1];
      auto w = v;
      w["data_offsets"] = {d.size(), d.size() + (e - b)};
      d += data.substr(b, e - b);
      h[k] = w;
    }
    header = h;
    data = d;
  }
};

struct BadCase {
  std::string name;
  std::string fixture;
  std::function<void(const std::string& dir)> mutate;
  std::vector<std::string> extra;      // more import arguments
  std::vector<std::string> expected;   // parts of stderr ("{dir}" is replaced by the folder)
};

std::string replace_dir(std::string s, const std::string& dir) {
  const std::string key = "{dir}";
  for (size_t at; (at = s.find(key)) != std::string::npos;) s.replace(at, key.size(), dir);
  return s;
}

void edit_config(const std::string& dir, const std::function<void(nlohmann::ordered_json&)>& f) {
  auto j = nlohmann::ordered_json::parse(test::read_text(dir + "/config.json"));
  f(j);
  spit(dir + "/config.json", j.dump(2));
}

void edit_weights(const std::string& dir, const std::function<void(StFile&)>& f) {
  StFile st(dir + "/model.safetensors");
  f(st);
  st.write(dir + "/model.safetensors");
}

void truncate_to(const std::string& path, size_t n) {
  spit(path, test::read_text(path).substr(0, n));
}

}  // namespace

TEST_CASE("hf import: every bad input is a clear error naming the file, and leaves no run folder") {
  const std::string st = "/model.safetensors";
  const std::vector<BadCase> bad = {
      {"file shorter than the length field",
       "bert_absolute",
       [&](const std::string& d) { truncate_to(d + st, 5); },
       {},
       {"{dir}/model.safetensors: truncated: 5 bytes, fewer than the 8-byte header length"}},
      {"header length beyond the file",
       "bert_absolute",
       [&](const std::string& d) { truncate_to(d + st, 200); },
       {},
       {"{dir}/model.safetensors: the header length field says", "but only 192 bytes follow it"}},
      {"truncated data",
       "bert_absolute",
       [&](const std::string& d) {
         const auto s = test::read_text(d + st);
         spit(d + st, s.substr(0, s.size() - 100));
       },
       {},
       {"{dir}/model.safetensors: tensor '", "run past the data",
        "truncated file or wrong offsets"}},
      {"a length field far beyond the file",
       "bert_absolute",
       [&](const std::string& d) {
         auto s = test::read_text(d + st);
         std::memset(&s[0], 0x7f, 8);
         spit(d + st, s);
       },
       {},
       {"the header length field says 9187201950435737471 bytes"}},
      {"overlapping offsets",
       "bert_absolute",
       [](const std::string& d) {
         edit_weights(d, [](StFile& f) {
           f.header["bert.embeddings.LayerNorm.bias"]["data_offsets"] =
               f.header["bert.embeddings.LayerNorm.weight"]["data_offsets"];
         });
       },
       {},
       {"{dir}/model.safetensors: tensor 'bert.embeddings.LayerNorm.",
        "overlaps tensor 'bert.embeddings.LayerNorm."}},
      {"offsets out of range",
       "bert_absolute",
       [](const std::string& d) {
         edit_weights(d, [](StFile& f) {
           f.header["cls.predictions.bias"]["data_offsets"][1] = f.data.size() + 160;
         });
       },
       {},
       {"{dir}/model.safetensors: tensor 'cls.predictions.bias': data_offsets",
        "run past the data"}},
      {"unknown dtype",
       "bert_absolute",
       [](const std::string& d) {
         edit_weights(d, [](StFile& f) { f.header["cls.predictions.bias"]["dtype"] = "F12"; });
       },
       {},
       {"{dir}/model.safetensors: tensor 'cls.predictions.bias': unknown dtype 'F12' (known: "
        "BOOL,"}},
      {"a used tensor that is not floating-point",
       "bert_absolute",
       [](const std::string& d) {
         edit_weights(d, [](StFile& f) { f.header["cls.predictions.bias"]["dtype"] = "I32"; });
       },
       {},
       {"{dir}/model.safetensors: tensor 'cls.predictions.bias' has dtype I32 (expected a "
        "floating-point one"}},
      {"shape not matching the config",
       "bert_absolute",
       [](const std::string& d) { edit_config(d, [](auto& j) { j["intermediate_size"] = 48; }); },
       {},
       {"{dir}/model.safetensors: shape not matching config.json: "
        "bert.encoder.layer.0.intermediate.dense.weight "
        "has shape (32,16), expected (48,16)"}},
      {"missing tensor",
       "bert_absolute",
       [](const std::string& d) {
         edit_weights(d, [](StFile& f) { f.remove("bert.encoder.layer.1.output.dense.bias"); });
       },
       {},
       {"{dir}/model.safetensors: missing tensor bert.encoder.layer.1.output.dense.bias (16)"}},
      {"missing relative table",
       "bert_relative_key_query",
       [](const std::string& d) {
         edit_weights(d, [](StFile& f) {
           f.remove("bert.encoder.layer.0.attention.self.distance_embedding.weight");
         });
       },
       {},
       {"missing tensor bert.encoder.layer.0.attention.self.distance_embedding.weight (31,8)"}},
      {"unknown architecture",
       "bert_absolute",
       [](const std::string& d) { edit_config(d, [](auto& j) { j["model_type"] = "t5"; }); },
       {},
       {"{dir}/config.json: model_type: unknown architecture 't5' (relpos imports: bert, albert, "
        "roberta, gpt2)"}},
      {"no architecture at all",
       "bert_absolute",
       [](const std::string& d) {
         edit_config(d, [](auto& j) {
           j.erase("model_type");
           j.erase("architectures");
         });
       },
       {},
       {"{dir}/config.json: model_type: unknown architecture (no model_type or architectures "
        "key)"}},
      {"a config value of the wrong type",
       "bert_absolute",
       [](const std::string& d) { edit_config(d, [](auto& j) { j["hidden_size"] = "16"; }); },
       {},
       {"{dir}/config.json: hidden_size: expected an integer >= 1 (got \"16\")"}},
      {"an activation relpos lacks",
       "bert_absolute",
       [](const std::string& d) { edit_config(d, [](auto& j) { j["hidden_act"] = "relu"; }); },
       {},
       {"{dir}/config.json: hidden_act: 'relu' is not supported"}},
      {"an unknown position type",
       "bert_absolute",
       [](const std::string& d) {
         edit_config(d, [](auto& j) { j["position_embedding_type"] = "rotary"; });
       },
       {},
       {"{dir}/config.json: position_embedding_type: 'rotary' is not supported"}},
      {"ALBERT with relative positions",
       "albert",
       [](const std::string& d) {
         edit_config(d, [](auto& j) { j["position_embedding_type"] = "relative_key"; });
       },
       {},
       {"{dir}/config.json: position_embedding_type: 'relative_key' for albert is not supported"}},
      {"several ALBERT layer groups",
       "albert",
       [](const std::string& d) { edit_config(d, [](auto& j) { j["num_hidden_groups"] = 2; }); },
       {},
       {"{dir}/config.json: num_hidden_groups"}},
      {"GPT-2 scaled by layer index",
       "gpt2",
       [](const std::string& d) {
         edit_config(d, [](auto& j) { j["scale_attn_by_inverse_layer_idx"] = true; });
       },
       {},
       {"{dir}/config.json: scale_attn_by_inverse_layer_idx: true is not supported"}},
      {"config.json not JSON",
       "bert_absolute",
       [](const std::string& d) { spit(d + "/config.json", "{\"model_type\": \"bert\",\n"); },
       {},
       {"{dir}/config.json:2:1: invalid JSON"}},
      {"no config.json",
       "bert_absolute",
       [](const std::string& d) { fs::remove(d + "/config.json"); },
       {},
       {"{dir}/config.json: missing"}},
      {"no weights",
       "bert_absolute",
       [&](const std::string& d) { fs::remove(d + st); },
       {},
       {"{dir}: no weights: expected model.safetensors or pytorch_model.bin (the folder has: "
        "config.json"}},
      {"a sharded checkpoint",
       "bert_absolute",
       [&](const std::string& d) {
         fs::remove(d + st);
         spit(d + "/model.safetensors.index.json", "{}");
       },
       {},
       {"{dir}/model.safetensors.index.json: a sharded checkpoint"}},
      {"no vocab.txt",
       "bert_absolute",
       [](const std::string& d) { fs::remove(d + "/vocab.txt"); },
       {},
       {"{dir}/vocab.txt: missing"}},
      {"vocab.txt of another size",
       "bert_absolute",
       [](const std::string& d) {
         spit(d + "/vocab.txt", test::read_text(d + "/vocab.txt") + "extra\n");
       },
       {},
       {"{dir}/vocab.txt: 41 tokens, but {dir}/config.json says vocab_size 40"}},
      {"vocab.txt without [MASK]",
       "bert_absolute",
       [](const std::string& d) {
         auto v = test::read_text(d + "/vocab.txt");
         v.replace(v.find("[MASK]"), 6, "[MAZK]");
         spit(d + "/vocab.txt", v);
       },
       {},
       {"{dir}/vocab.txt: no [MASK] token"}},
      {"no spiece.model",
       "albert",
       [](const std::string& d) { fs::remove(d + "/spiece.model"); },
       {},
       {"{dir}/spiece.model: missing"}},
      {"no merges.txt",
       "gpt2",
       [](const std::string& d) { fs::remove(d + "/merges.txt"); },
       {},
       {"{dir}/merges.txt: missing (a gpt2 folder has its byte-level BPE vocabulary in vocab.json "
        "and merges.txt)"}},
      {"vocab.json of another size",
       "roberta",
       [](const std::string& d) { edit_config(d, [](auto& j) { j["vocab_size"] = 1000; }); },
       {},
       {"{dir}/vocab.json: 309 tokens, but {dir}/config.json says vocab_size 1000"}},
      {"vocab.json without RoBERTa's <mask> or GPT-2's <|endoftext|>",
       "roberta",
       [](const std::string& d) {
         auto v = test::read_text(d + "/vocab.json");
         v.replace(v.find("<mask>"), 6, "<mazk>");
         spit(d + "/vocab.json", v);
       },
       {},
       {"{dir}/vocab.json: no token for [MASK] (expected <mask>"}},
      {"a malformed merges.txt line",
       "gpt2",
       [](const std::string& d) {
         spit(d + "/merges.txt", test::read_text(d + "/merges.txt") + "x\n");
       },
       {},
       {"{dir}/merges.txt:50: 'x' is not a merge"}},
      {"an output layer not tied to the embeddings",
       "bert_absolute",
       [](const std::string& d) {
         edit_weights(d, [](StFile& f) {
           const uint64_t b = f.header["cls.predictions.decoder.weight"]["data_offsets"][0];
           f.data[b + 3] ^= 0x40;
         });
       },
       {},
       {"cls.predictions.decoder.weight differs from embeddings.word_embeddings.weight"}},
      {"a bare model without --init-missing-head",
       "bert_bf16_bare",
       [](const std::string&) {},
       {},
       {"{dir}/model.safetensors: no MLM head (no cls.predictions.* tensor)",
        "--init-missing-head"}},
      {"the same tensor twice (with and without the prefix)",
       "bert_absolute",
       [](const std::string& d) {
         edit_weights(d, [](StFile& f) {
           auto e = f.header["bert.pooler.dense.bias"];
           f.header["pooler.dense.bias"] = e;
           f.header["pooler.dense.bias"]["data_offsets"] = {f.data.size(), f.data.size() + 64};
           f.data += std::string(64, '\0');
         });
       },
       {},
       {"tensors 'bert.pooler.dense.bias' and 'pooler.dense.bias' are both 'pooler.dense.bias'"}},
      {"pytorch_model.bin saved by Hugging Face (an OrderedDict)",
       "bert_bin_ordered",
       [](const std::string&) {},
       {},
       {"{dir}/pytorch_model.bin: LibTorch", "cannot read this PyTorch checkpoint", "OrderedDict",
        "hint: convert it to safetensors once",
        "save_file({k: v.contiguous().clone() for k, v in sd.items()}, '{dir}/model.safetensors'"}},
      {"pytorch_model.bin in the legacy format",
       "bert_bin",
       [](const std::string& d) {
         auto s = test::read_text(d + "/pytorch_model.bin");
         s[0] = 'X';  // no zip archive any more
         spit(d + "/pytorch_model.bin", s);
       },
       {},
       {"{dir}/pytorch_model.bin: LibTorch", "legacy format"}},
      {"--set of a model key",
       "bert_absolute",
       [](const std::string&) {},
       {"--set", "model.width=8"},
       {"import: --set model.width=8: model.* and position.* come from the checkpoint's "
        "config.json"}},
      {"--set of an unknown key",
       "bert_absolute",
       [](const std::string&) {},
       {"--set", "task.seqlen=8"},
       {"task.seqlen: unknown key"}},
  };
  TempFolder tmp("hf_bad");
  for (const auto& c : bad) {
    CAPTURE(c.name);
    const std::string dir = tmp.str("src_" + std::to_string(&c - bad.data()));
    fs::copy(hf_fixture(c.fixture), dir, fs::copy_options::recursive);
    c.mutate(dir);
    const std::string out = tmp.str("runs/out");
    std::vector<std::string> args{"import", dir, "--out", out};
    args.insert(args.end(), c.extra.begin(), c.extra.end());
    const ChildResult r = relpos_cli(args);
    INFO(r.out << r.err);
    CHECK(r.exit_code == 2);
    CHECK(r.err.rfind("error: ", 0) == 0);
    for (const auto& part : c.expected) {
      const std::string want = replace_dir(part, dir);
      CHECK_MESSAGE(r.err.find(want) != std::string::npos, "expected '" << want << "'");
    }
    check_no_partial_folder(out);
  }
}

TEST_CASE("hf import: --out that exists is kept unless --overwrite, and only a run is replaced") {
  TempFolder tmp("hf_out");
  const std::string out = tmp.str("run");
  fs::create_directories(out);
  spit(out + "/notes.txt", "mine");
  ChildResult r = relpos_cli({"import", hf_fixture("gpt2"), "--out", out});
  CHECK(r.exit_code == 2);
  CHECK(r.err.find("import: --out " + out + ": the folder exists and is not empty") != std::string::npos);
  r = relpos_cli({"import", hf_fixture("gpt2"), "--out", out, "--overwrite"});
  CHECK(r.exit_code == 2);
  CHECK(r.err.find("--overwrite replaces only a folder with config.yaml in it") != std::string::npos);
  CHECK(test::read_text(out + "/notes.txt") == "mine");
  // A run folder is replaced whole.
  fs::remove_all(out);
  import_ok(hf_fixture("gpt2"), out);
  import_ok(hf_fixture("roberta"), out, {"--overwrite"});
  CHECK(read_json(out + "/result.json")["imported"]["architecture"] == "roberta");
}

TEST_CASE("hf import: command-line mistakes") {
  ChildResult r = relpos_cli({"import", hf_fixture("gpt2")});
  CHECK(r.exit_code == 2);
  CHECK(r.err.find("--out is required") != std::string::npos);
  r = relpos_cli({"import", "--out", "x"});
  CHECK(r.exit_code == 2);
  CHECK(r.err.find("dir is required") != std::string::npos);
  TempFolder tmp("hf_cli");
  r = relpos_cli({"import", tmp.str("nothing_here"), "--out", tmp.str("run")});
  CHECK(r.exit_code == 2);
  CHECK(r.err.find(tmp.str("nothing_here") + ": not a folder") != std::string::npos);
  check_no_partial_folder(tmp.str("run"));
}

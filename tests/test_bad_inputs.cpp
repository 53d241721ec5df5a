// Every bad input relpos meets, in one table, each with the error it must produce (issue 7).
// The rows call the same code paths as the unit tests of each layer (config, data, io, model);
// this file is the one place where a reader sees every bad input and its message. The second
// test case runs some of them through the `relpos` executable: exit status 2 and the
// `error: ...` / `hint: ...` lines.
#include <H5Cpp.h>
#include <doctest/doctest.h>
#include <sys/stat.h>

#include <functional>

#include "core/config/config.h"
#include "core/data/corpus.h"
#include "core/data/tokenizer.h"
#include "core/io/checkpoint.h"
#include "core/io/run_file.h"
#include "core/model/model.h"
#include "core/task/task_registry.h"
#include "tests/helpers.h"
#include "tests/process_util.h"
#include "tests/tiny_run.h"

using namespace relpos;
using namespace relpos::test;
namespace fs = std::filesystem;

namespace {

std::string data(const std::string& rel) { return fixture_path("data/" + rel); }

struct BadInput {
  std::string input;                // what is wrong
  std::string error;                // ConfigError | DataError | SchemaError
  std::function<void()> run;        // the code path that meets it
  std::vector<std::string> message; // parts the message must contain, in order
};

std::string kind_of(const Error& e) {
  if (dynamic_cast<const ConfigError*>(&e)) return "ConfigError";
  if (dynamic_cast<const DataError*>(&e)) return "DataError";
  if (dynamic_cast<const SchemaError*>(&e)) return "SchemaError";
  if (dynamic_cast<const RunError*>(&e)) return "RunError";
  return "Error";
}

// The parts appear in `text` in this order.
bool contains_in_order(const std::string& text, const std::vector<std::string>& parts) {
  size_t at = 0;
  for (const auto& p : parts) {
    at = text.find(p, at);
    if (at == std::string::npos) return false;
    at += p.size();
  }
  return true;
}

std::string write_input(const std::string& path, const std::string& text) {
  std::ofstream(path, std::ios::binary) << text;
  return path;
}

// A finished tiny run (4 steps, learned max_len 32) for the checkpoint, run-file and model rows.
std::string tiny_finished_run(const TempFolder& tmp) {
  const std::string dir = tmp.str("run");
  auto sets = tiny_run(tmp.str("cache"), 4);
  sets.push_back("position.type=learned");
  train_here(sets, dir);
  return dir;
}

}  // namespace

TEST_CASE("bad inputs: each one gives its error type and message") {
  TempFolder tmp("bad_inputs");
  const std::string run = tiny_finished_run(tmp);
  const std::string f = tmp.str("");

  // Files made here: configs, a run file of a newer schema, damaged checkpoints and run files.
  const std::string malformed =
      write_input(f + "malformed.yaml", "model:\n  layers: [1, 2\n  width: 8\n");
  const std::string unknown_key = write_input(f + "unknown_key.yaml", "model:\n  layerz: 3\n");
  const std::string wrong_type = write_input(f + "wrong_type.yaml", "model:\n  layers: four\n");
  const std::string out_of_range = write_input(f + "range.yaml", "train:\n  lr: -1\n");
  const std::string unknown_variant =
      write_input(f + "variant.yaml", "position:\n  type: rotary\n");
  const std::string duplicate = write_input(f + "duplicate.yaml", "seed: 1\nseed: 2\n");
  const std::string emptied_run = f + "emptied_run";
  std::filesystem::create_directories(emptied_run);
  write_input(emptied_run + "/config.yaml", "# nothing left\n");
  const std::string not_hdf5 = write_input(f + "not_hdf5.h5", std::string(2000, 'x'));
  const std::string truncated_h5 = f + "truncated.h5";
  {
    std::ifstream in(run_h5_path(run), std::ios::binary);
    std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    write_input(truncated_h5, bytes.substr(0, bytes.size() / 2));
  }
  const std::string newer = f + "newer.h5";
  fs::copy_file(run_h5_path(run), newer);
  {
    H5::H5File h(newer, H5F_ACC_RDWR);
    const int64_t v = 99;
    h.openGroup("/").openAttribute("schema_version").write(H5::PredType::NATIVE_INT64, &v);
  }
  std::string ckpt_bytes;
  {
    std::ifstream in(run_checkpoint_path(run), std::ios::binary);
    ckpt_bytes.assign((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  }
  std::string flipped = ckpt_bytes;
  for (size_t i = flipped.size() / 2; i < flipped.size() / 2 + 16; ++i) flipped[i] ^= 0x5A;
  const std::string corrupt_ckpt = write_input(f + "corrupt.pt", flipped);
  const std::string truncated_ckpt = write_input(f + "truncated.pt", ckpt_bytes.substr(0, 1000));
  // Data files made here: byte-level oddities (NUL, white space around a token), a FIFO, folders.
  const std::string fifo_dir = f + "fifo_dir";
  fs::create_directories(fifo_dir);
  write_input(fifo_dir + "/a.txt", "Some text.\n");
  REQUIRE(::mkfifo((fifo_dir + "/b.txt").c_str(), 0600) == 0);
  const std::string nested_dir = f + "nested_dir";
  fs::create_directories(nested_dir + "/sub");
  write_input(nested_dir + "/sub/a.txt", "Some text.\n");
  write_input(nested_dir + "/notes.md", "not a .txt file\n");
  const std::string empty_files_dir = f + "empty_files_dir";
  fs::create_directories(empty_files_dir);
  write_input(empty_files_dir + "/a.txt", "\n  \n");
  const std::string vocab_folder = f + "vocab_folder";
  fs::create_directories(vocab_folder);
  const std::string specials = "[PAD]\n[UNK]\n[CLS]\n[SEP]\n[MASK]\n";
  const std::string empty_vocab = write_input(f + "empty_vocab.txt", "");
  const std::string only_specials = write_input(f + "only_specials.txt", specials);
  const std::string spaced_mask =
      write_input(f + "spaced_mask.txt", "[PAD]\n[UNK]\n[CLS]\n[SEP]\n [MASK]\nthe\n");
  const std::string the_vocab = write_input(f + "the_vocab.txt", specials + "the\n");
  std::string unknown_words;
  for (int i = 0; i < 400; ++i) unknown_words += i % 20 == 19 ? "zzz\n\n" : "zzz ";
  const std::string unknown_text = write_input(f + "unknown_words.txt", unknown_words);
  std::string rare_words;  // "the" once in 100 words: most mlm rows of 7 tokens have no target
  for (int i = 0; i < 3000; ++i) rare_words += i % 100 == 0 ? "the " : "zzz ";
  const std::string rare_text = write_input(f + "rare_words.txt", rare_words);
  const std::string nul_label =
      write_input(f + "nul_label.tsv", std::string("sentence\tlabel\nfine\t1") + '\0' + "x\n");
  const std::string sentence1_only = write_input(f + "sentence1.tsv", "sentence1\tlabel\na b\t0\n");
  const std::string empty_sentence2 =
      write_input(f + "empty_sentence2.tsv", "sentence1\tsentence2\tlabel\na\tb\t0\nc\t\t1\n");
  const std::string empty_context = write_input(
      f + "empty_context.json",
      R"({"data": [{"title": "T", "paragraphs": [{"context": "", "qas": [)"
      R"({"id": "q1", "question": "When?", "answers": [{"answer_start": 0, "text": "1905"}]})"
      R"(]}]}]})");
  auto lm_sets = [&](const std::string& corpus, const std::string& vocab) {
    auto s = tiny_run(tmp.str("cache"), 4);
    s.insert(s.end(), {"data.corpus=" + corpus, "data.tokenizer=wordpiece",
                       "data.vocab_file=" + vocab, "task.seq_len=8", "train.batch_size=1",
                       "position.type=none"});
    return s;
  };

  const Config run_cfg = load_run_config(run).config;
  auto load_ckpt = [&](const std::string& path) {
    Model m(run_cfg, 261);
    auto opt = make_optimizer(*m, run_cfg.train);
    load_checkpoint(path, *m, *opt);
  };

  const std::vector<BadInput> table{
      // ---- config ---------------------------------------------------------------------------
      {"malformed YAML",
       "ConfigError",
       [&] { load_config({malformed}); },
       {malformed + ":3:", ": malformed YAML: "}},
      {"unknown key",
       "ConfigError",
       [&] { load_config({unknown_key}); },
       {unknown_key + ":2:3: model.layerz: unknown key (known: mode, layers, width",
        "; did you mean model.layers?"}},
      {"wrong type",
       "ConfigError",
       [&] { load_config({wrong_type}); },
       {wrong_type + ":2:3: model.layers: wrong type (got 'four'; expected an integer)"}},
      {"out-of-range value",
       "ConfigError",
       [&] { load_config({out_of_range}); },
       {out_of_range + ":2:3: train.lr: out of range (got -1; expected >= 0)"}},
      {"unknown position variant",
       "ConfigError",
       [&] { load_config({unknown_variant}); },
       {unknown_variant + ":2:", "position.type: unknown position variant (got 'rotary'",
        "known: ", "alibi", "rope"}},
      {"duplicate key",
       "ConfigError",
       [&] { load_config({duplicate}); },
       {duplicate + ":2:1: seed: duplicate key (first at line 1)"}},
      {"a run folder whose config.yaml was emptied",
       "ConfigError",
       [&] { load_run_config(emptied_run); },
       {emptied_run + "/config.yaml: not a run's resolved config: no model, position, data, "
                      "task, train sections (relpos train writes every key)"}},
      {"--set without '='",
       "ConfigError",
       [&] { test::base_config_with({"model.layers"}); },
       {"command line (--set model.layers): expected dotted.key=value"}},
      {"a non-finite number",
       "ConfigError",
       [&] { test::base_config_with({"train.lr=nan"}); },
       {"train.lr: wrong type (got 'nan'; expected a finite number)"}},
      {"sequence longer than the learned table (config time)",
       "ConfigError",
       [&] {
         test::base_config_with(
             {"position.type=learned", "position.learned.max_len=32", "task.seq_len=64"});
       },
       {"position.learned.max_len: the learned table is shorter than the training sequences "
        "(got 32; expected >= task.seq_len (64))"}},
      {"missing config file",
       "ConfigError",
       [&] { load_config({f + "absent.yaml"}); },
       {f + "absent.yaml: cannot open config file"}},
      // ---- data -----------------------------------------------------------------------------
      {"missing data file",
       "DataError",
       [&] { load_corpus(test::base_config_with({"data.corpus=" + f + "absent.txt"})); },
       {"data.corpus: '" + f +
        "absent.txt' is neither a built-in corpus (sotu, sentiment, "
        "wordnet_qa) nor an existing file or folder"}},
      {"built-in corpus not fetched",
       "DataError",
       [&] {
         load_corpus(
             test::base_config_with({"data.corpus=sotu", "data.cache_dir=" + f + "no_cache"}));
       },
       {"corpus 'sotu': no cached data at '" + f + "no_cache/sotu/package/data'"}},
      {"empty corpus (text)",
       "DataError",
       [&] { load_text_file(data("text/empty.txt")); },
       {data("text/empty.txt") + ": empty corpus (no text found"}},
      {"empty corpus (TSV, header only)",
       "DataError",
       [&] { load_tsv(data("tsv/header_only.tsv"), {}); },
       {data("tsv/header_only.tsv") + ": empty corpus (a header but no data rows)"}},
      {"empty corpus (SQuAD)",
       "DataError",
       [&] { load_squad(data("squad/empty.json")); },
       {data("squad/empty.json") + ": empty corpus (no questions"}},
      {"non-UTF-8 text",
       "DataError",
       [&] { load_text_file(data("text/bad_utf8.txt")); },
       {data("text/bad_utf8.txt") + ":3:5: invalid UTF-8 (byte 0xFF at byte offset"}},
      {"non-UTF-8 TSV",
       "DataError",
       [&] { load_tsv(data("tsv/bad_utf8.tsv"), {}); },
       {data("tsv/bad_utf8.tsv") + ":3:4: invalid UTF-8 (byte 0xE9"}},
      {"non-UTF-8 JSON",
       "DataError",
       [&] { load_squad(data("squad/bad_utf8.json")); },
       {data("squad/bad_utf8.json") + ":3:", "invalid JSON", "<0xE9>"}},
      {"malformed JSON",
       "DataError",
       [&] { load_squad(data("squad/bad_json.json")); },
       {data("squad/bad_json.json") + ":6:", "invalid JSON", "(expected SQuAD v1.1"}},
      {"a JSON number beyond double's range (found by fuzzing)",
       "DataError",
       [&] {
         Corpus c;
         load_sentiment_file(
             write_input(f + "overflow.json", "[\n{\"text\": \"Great.\", \"class\": 1e999}]\n"),
             "x", c);
       },
       {f + "overflow.json:2: invalid JSON: number overflow parsing '1e999'"}},
      {"a sentiment record whose text is null (found by fuzzing)",
       "DataError",
       [&] {
         Corpus c;
         load_sentiment_file(write_input(f + "null_text.json",
                                         "[{\"text\": \"Fine.\", \"class\": 1}, {\"text\": null}]"),
                             "x", c);
       },
       {f + "null_text.json: record 1: {\"text\":null} (expected a JSON array of"}},
      {"SQuAD answer outside its context",
       "DataError",
       [&] { load_squad(data("squad/answer_outside.json")); },
       {"answer_start 99 outside the context of 22 characters (expected 0..21)"}},
      {"SQuAD answer not at its answer_start",
       "DataError",
       [&] { load_squad(data("squad/answer_mismatch.json")); },
       {"(id 'q3'), answers[0]: answer 'north' does not occur at answer_start 4"}},
      {"label out of range (TSV)",
       "DataError",
       [&] { load_tsv(data("tsv/label_range.tsv"), {}); },
       {data("tsv/label_range.tsv") +
        ":3: label 2 out of range (expected 0..1 for task.num_classes = 2)"}},
      {"label out of range (sentiment JSON)",
       "DataError",
       [&] {
         Corpus c;
         load_sentiment_file(data("sentiment/bad_class.json"), "x", c);
       },
       {data("sentiment/bad_class.json") + ": record 1: class 3 out of range (expected 0 or 1)"}},
      {"wrong TSV column count",
       "DataError",
       [&] { load_tsv(data("tsv/wrong_columns.tsv"), {}); },
       {data("tsv/wrong_columns.tsv") + ":3: 3 tab-separated columns (expected 2"}},
      {"WordPiece vocabulary without [MASK]",
       "DataError",
       [&] { make_wordpiece_tokenizer(data("vocab_missing.txt"), true); },
       {data("vocab_missing.txt") + ": no [MASK] token"}},
      {"a special token with white space around it",
       "DataError",
       [&] { make_wordpiece_tokenizer(spaced_mask, true); },
       {spaced_mask + ": no [MASK] token", "line 5 has ' [MASK]', with white space"}},
      {"a folder as the WordPiece vocabulary",
       "DataError",
       [&] { make_wordpiece_tokenizer(vocab_folder, true); },
       {vocab_folder + ": not a regular file (a folder; expected a WordPiece vocabulary file)"}},
      {"an empty WordPiece vocabulary",
       "DataError",
       [&] { make_wordpiece_tokenizer(empty_vocab, true); },
       {empty_vocab + ": empty vocabulary (expected one token per line"}},
      {"a WordPiece vocabulary of only the special tokens",
       "DataError",
       [&] { make_wordpiece_tokenizer(only_specials, true); },
       {only_specials + ": no word pieces, only the special tokens", "every word would be [UNK]"}},
      {"a character device as the corpus",
       "DataError",
       [&] { load_corpus(test::base_config_with({"data.corpus=/dev/null"})); },
       {"/dev/null: not a regular file (a character device; expected a text corpus file)"}},
      {"a FIFO among a folder's .txt files",
       "DataError",
       [&] { load_text_folder(fifo_dir); },
       {fifo_dir + "/b.txt: not a regular file (a FIFO; expected a text corpus file)"}},
      {"a folder whose .txt files are in a subfolder",
       "DataError",
       [&] { load_text_folder(nested_dir); },
       {nested_dir + ": empty corpus (no .txt file directly in the folder",
        "subfolders are not searched, and it has 1: sub)"}},
      {"a folder of empty .txt files",
       "DataError",
       [&] { load_text_folder(empty_files_dir); },
       {empty_files_dir + ": empty corpus (all 1 .txt files are empty"}},
      {"a NUL byte in a TSV label",
       "DataError",
       [&] { load_tsv(nul_label, {}); },
       {nul_label + ":2: label '1<0x00>x' is not an integer (expected 0..1)"}},
      {"a TSV with sentence1 but no sentence2",
       "DataError",
       [&] { load_tsv(sentence1_only, {}); },
       {sentence1_only + ":1: no text column in the header (columns: sentence1, label;",
        "'sentence', or the pair 'sentence1' and 'sentence2', and 'sentence2' is missing)"}},
      {"a TSV pair row with an empty second sentence",
       "DataError",
       [&] { load_tsv(empty_sentence2, {}); },
       {empty_sentence2 + ":3: empty text in column 'sentence2' (a sentence pair needs both "
                          "sentences, 'sentence1' and 'sentence2')"}},
      {"SQuAD paragraph with an empty context",
       "DataError",
       [&] { load_squad(empty_context); },
       {empty_context + ":1: data[0].paragraphs[0].qas[0] (id 'q1'), answers[0]: the paragraph's "
                        "context is empty (expected the text the answer '1905' occurs in)"}},
      {"an mlm split without a token to mask",
       "DataError",
       [&] {
         make_task_data(
             load_config({config_path("base.yaml")}, lm_sets(unknown_text, the_vocab)).config);
       },
       {"corpus '" + unknown_text + "': the training split has no token mlm can mask: all ",
        " of its tokens are special ([UNK], [SEP], ...) with tokenizer wordpiece:" + the_vocab}},
      {"an mlm batch without a target",
       "DataError",
       [&] { train_here(lm_sets(rare_text, the_vocab), f + "no_target_run"); },
       {"step ",
        ": the batch has no target token, so its loss is not finite (nan): every token "
        "of its rows is [UNK] or another special token; stopped; the last good checkpoint"}},
      {"a batch far past the machine's memory (it used to be killed by the kernel)",
       "ConfigError",
       [&] {
         auto s = tiny_run(tmp.str("cache"), 4);
         s.push_back("train.batch_size=100000000");
         train_here(s, f + "huge_batch_run");
       },
       {"train.batch_size 100000000 at task.seq_len ",
        " does not fit in memory: one layer's "
        "attention scores need at least ",
        " GB (batch 100000000, "}},
      {"an empty validation split (no probe for snapshots)",
       "DataError",
       [&] {
         auto s = tiny_run(tmp.str("cache"), 4);
         s.push_back("data.valid_fraction=0");
         train_here(s, f + "no_valid_run");
       },
       {"the validation split is empty, so there is no probe set for snapshots (corpus '",
        "' splits into ", " training, 0 validation and ",
        " test documents with "
        "data.valid_fraction 0)"}},
      {"an mlm probe of length 1",
       "ConfigError",
       [&] { test::base_config_with({"snapshots.probe_len=1"}); },
       {"snapshots.probe_len: too short for an mlm probe ([CLS] and at least one text token) "
        "(got 1; expected >= 2, or 0 for task.seq_len)"}},
      // ---- run file -------------------------------------------------------------------------
      {"not an HDF5 file",
       "SchemaError",
       [&] { RunFileReader::open(not_hdf5); },
       {"'" + not_hdf5 + "' cannot be opened as an HDF5 file"}},
      {"truncated HDF5",
       "SchemaError",
       [&] { RunFileReader::open(truncated_h5); },
       {truncated_h5, "truncated file"}},
      {"HDF5 with a newer schema version",
       "SchemaError",
       [&] { RunFileReader::open(newer); },
       {"run file '" + newer +
        "' has schema version 99, newer than the version this relpos "
        "reads (1)"}},
      // ---- checkpoint -----------------------------------------------------------------------
      {"corrupt checkpoint",
       "SchemaError",
       [&] { load_ckpt(corrupt_ckpt); },
       {"checkpoint '" + corrupt_ckpt + "' is corrupt: checksum "}},
      {"truncated checkpoint",
       "SchemaError",
       [&] { load_ckpt(truncated_ckpt); },
       {"'" + truncated_ckpt + "' is not a relpos checkpoint, or it is truncated"}},
      {"checkpoint of another model",
       "SchemaError",
       [&] {
         Config other = run_cfg;
         other.model.width = 64;
         other.model.ff_width = 64;
         Model m(other, 261);
         auto opt = make_optimizer(*m, other.train);
         load_checkpoint(run_checkpoint_path(run), *m, *opt);
       },
       {"checkpoint '" + run_checkpoint_path(run) + "' does not match the model:",
        "has shape [32, 32] in the checkpoint and [32, 64] in the model"}},
      // ---- model ----------------------------------------------------------------------------
      {"sequence longer than the learned table (forward)",
       "ConfigError",
       [&] {
         Model m(run_cfg, 261);
         m->hidden(torch::zeros({1, 64}, torch::kLong));
       },
       {"position.learned: a sequence reaches position 64 but the learned table has max_len 32"}},
  };

  for (const auto& c : table) {
    CAPTURE(c.input);
    bool thrown = false;
    try {
      c.run();
    } catch (const Error& e) {
      thrown = true;
      CHECK(kind_of(e) == c.error);
      CHECK_MESSAGE(contains_in_order(e.what(), c.message), e.what());
    }
    CHECK_MESSAGE(thrown, "no relpos error for: ", c.input);
  }
}

TEST_CASE("bad inputs through the relpos executable: exit status 2, error: and hint: lines") {
  TempFolder tmp("bad_inputs_cli");
  const std::string run = tiny_finished_run(tmp);
  const std::string f = tmp.str("");
  const std::string malformed =
      write_input(f + "malformed.yaml", "model:\n  layers: [1, 2\n  width: 8\n");
  const std::string bad_text = data("text/bad_utf8.txt");
  fs::copy(run, f + "damaged", fs::copy_options::recursive);
  {
    std::fstream ck(run_checkpoint_path(f + "damaged"), std::ios::in | std::ios::out | std::ios::binary);
    ck.seekp(2000);
    ck.write("\xde\xad\xbe\xef", 4);
  }
  const std::string not_hdf5 = write_input(f + "not_hdf5.h5", std::string(2000, 'x'));
  // open() of a FIFO waits for a writer that never comes: relpos hung here, deaf to SIGTERM.
  const std::string fifo = f + "fifo.txt";
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);

  struct CliCase {
    std::string input;
    std::vector<std::string> args;
    std::vector<std::string> error;  // in order, on the error: line
    std::string hint;
  };
  auto train = [&](const std::vector<std::string>& sets) {
    auto s = tiny_run(tmp.str("cache"), 4);
    s.insert(s.end(), sets.begin(), sets.end());
    return train_args(s, f + "out");
  };
  const std::vector<CliCase> cases{
      {"malformed YAML", {"config", "--config", malformed},
       {"error: " + malformed + ":3:", "malformed YAML"},
       "hint: check indentation, colons and brackets near that line"},
      {"unknown key", {"config", "--set", "model.layerz=3"},
       {"error: command line (--set model.layerz=3): model.layerz: unknown key",
        "did you mean model.layers?"},
       "hint: see configs/base.yaml for every key and its default"},
      {"missing data file", train({"data.corpus=" + f + "absent.txt"}),
       {"error: data.corpus: '" + f + "absent.txt' is neither a built-in corpus"}, ""},
      {"non-UTF-8 text", train({"data.corpus=" + bad_text}),
       {"error: " + bad_text + ":3:5: invalid UTF-8"},
       "hint: convert the file to UTF-8, e.g. iconv -f latin1 -t utf-8"},
      {"a FIFO as the corpus", train({"data.corpus=" + fifo}),
       {"error: " + fifo + ": not a regular file (a FIFO; expected a text corpus file)"}, ""},
      {"not an HDF5 file", {"inspect", not_hdf5},
       {"error: '" + not_hdf5 + "' cannot be opened as an HDF5 file"},
       "hint: the file is truncated or corrupt"},
      {"corrupt checkpoint (eval)", {"eval", "--run", f + "damaged", "--lengths", "16"},
       {"error: checkpoint '" + run_checkpoint_path(f + "damaged") + "' is corrupt: checksum"},
       "hint: a checkpoint is replaced atomically"},
      {"unparsable option value", {"eval", "--run", run, "--lengths", "16,abc"},
       {"error: ", "--lengths", "16,abc"}, "hint: relpos eval --help lists the options"},
      {"sweep --jobs 0", {"sweep", "--grid", "seed=1,2", "--jobs", "0", "--out", f + "sweep"},
       {"error: ", "--jobs"}, "hint: relpos sweep --help"},
      {"bench length below 2", {"bench", "--variants", "none", "--lengths", "1"},
       {"error: bench: --lengths: 1 is too short (expected lengths >= 2)"},
       "hint: for example --lengths 128,512"},
      {"eval length listed twice", {"eval", "--run", run, "--lengths", "16,8,16"},
       {"error: eval: length 16 is listed twice"}, "hint: list each length once"},
      {"corrupt checkpoint (inspect)", {"inspect", run_checkpoint_path(f + "damaged")},
       {"error: checkpoint '" + run_checkpoint_path(f + "damaged") + "' is corrupt: checksum"},
       "hint: a checkpoint is replaced atomically"},
      {"corrupt checkpoint (resume)", {"train", "--resume", "--out", f + "damaged", "--quiet"},
       {"error: checkpoint '" + run_checkpoint_path(f + "damaged") + "' is corrupt: checksum"},
       "hint: a checkpoint is replaced atomically"},
  };
  for (const auto& c : cases) {
    CAPTURE(c.input);
    auto [code, out] = run_relpos(c.args, f + "log");
    CHECK(code == 2);
    CHECK_MESSAGE(contains_in_order(out, c.error), out);
    if (!c.hint.empty()) CHECK_MESSAGE(contains(out, c.hint), out);
  }

  // Lengths beyond a learned table are reported as not applicable, not as a failure.
  // Lengths with the same reason share it in the attribute that tables quote.
  auto [code, out] = run_relpos({"eval", "--run", run, "--lengths", "16,64,128"}, f + "log");
  CHECK_MESSAGE(code == 0, out);
  CHECK_MESSAGE(contains(out, "T=64     n/a: beyond the learned position table (max_len 32)"), out);
  auto r = RunFileReader::open(run_h5_path(run));
  CHECK(r->attribute("/eval/extrapolation", "not_applicable") ==
        "64, 128: beyond the learned position table (max_len 32); set "
        "position.learned.beyond=clamp to evaluate anyway");
}

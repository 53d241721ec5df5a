// Corpus loaders on the committed fixtures, including every malformed case and its message.
#include <doctest/doctest.h>
#include <fmt/format.h>

#include <cstdlib>
#include <fstream>

#include "core/data/corpus.h"
#include "core/data/tokenizer.h"
#include "core/util/json_util.h"
#include "core/util/text_util.h"
#include "data_helpers.h"
#include "tests/text_file.h"

using namespace relpos;
using relpos::test::data_error;
using relpos::test::data_fixture;
using relpos::test::TempDir;

namespace {

std::string write_file(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary) << bytes;
  return path;
}

const std::string kBom = "\xEF\xBB\xBF";

}  // namespace

TEST_CASE("utf8 validation finds the first bad byte") {
  CHECK(utf8_error_offset("plain ascii") == std::string::npos);
  CHECK(utf8_error_offset("caf\xC3\xA9 \xE2\x82\xAC \xF0\x9F\x98\x80") == std::string::npos);
  CHECK(utf8_error_offset("ab\xFF") == 2);
  CHECK(utf8_error_offset("ab\xC3") == 2);            // truncated sequence
  CHECK(utf8_error_offset("x\xC0\xAF") == 1);         // overlong '/'
  CHECK(utf8_error_offset("\xED\xA0\x80") == 0);      // surrogate U+D800
  CHECK(utf8_error_offset("\xF4\x90\x80\x80") == 0);  // above U+10FFFF
  CHECK(printable_utf8("a\xFF"
                       "b\xC3\xA9") == "a<0xFF>b\xC3\xA9");
  // Control characters (a NUL cut messages short) and byte order marks are written visibly.
  CHECK(printable_utf8(std::string("1\0x\t\n\x7F", 6)) == "1<0x00>x<0x09><0x0A><0x7F>");
  CHECK(printable_utf8("\xEF\xBB\xBFsentence") == "<U+FEFF>sentence");
  CHECK(printable_utf8("\xFF\x01") == "<0xFF><0x01>");
  auto [line, col] = line_col("ab\ncd\nef", 7);
  CHECK(line == 3);
  CHECK(col == 2);
}

TEST_CASE("text file: documents separated by blank lines") {
  Corpus c = load_text_file(data_fixture("text/docs.txt"));
  CHECK(c.kind == CorpusKind::Text);
  REQUIRE(c.documents.size() == 3);
  CHECK(c.documents[0].text == "First document, line one.\nFirst document, line two.");
  CHECK(c.documents[1].text == "Second document.");  // CRLF line end dropped
  CHECK(c.documents[2].text == "Third document:\nstill third.");
  CHECK(c.documents[2].name == "line 7");
  Corpus one = load_text_file(data_fixture("text/one_doc.txt"));
  REQUIRE(one.documents.size() == 1);
  CHECK(one.documents[0].text == "Only one document here.\nNo blank line in it.");
}

TEST_CASE("text file errors: empty, invalid UTF-8, missing") {
  std::string e = data_error([] { load_text_file(data_fixture("text/empty.txt")); });
  CHECK(e.find("empty.txt: empty corpus") != std::string::npos);
  e = data_error([] { load_text_file(data_fixture("text/bad_utf8.txt")); });
  CHECK(e.find("bad_utf8.txt:3:5: invalid UTF-8 (byte 0xFF") != std::string::npos);
  e = data_error([] { load_text_file(data_fixture("text/nothing_here.txt")); });
  CHECK(e.find("cannot read text corpus") != std::string::npos);
  CHECK(e.find("nothing_here.txt") != std::string::npos);
}

TEST_CASE("text folder: sorted .txt files, empty ones skipped") {
  Corpus c = load_text_folder(data_fixture("folder"));
  REQUIRE(c.documents.size() == 2);
  CHECK(c.documents[0].name == "a");
  CHECK(c.documents[0].text == "Document A.\n\nStill A (files are not split on blank lines).\n");
  CHECK(c.documents[1].name == "b");
  std::string e = data_error([] { load_text_folder(data_fixture("wordnet_bad")); });
  CHECK(e.find("empty corpus (no .txt file in the folder") != std::string::npos);
}

TEST_CASE("GLUE-style TSV: single sentences, pairs, text labels") {
  TsvOptions o;
  Corpus s = load_tsv(data_fixture("tsv/single.tsv"), o);
  CHECK(s.kind == CorpusKind::Labelled);
  REQUIRE(s.documents.size() == 3);
  CHECK(s.documents[0].text == "it was great");
  CHECK(s.documents[0].label == 1);
  CHECK(s.documents[2].label == 0);
  Corpus p = load_tsv(data_fixture("tsv/pair.tsv"), o);
  REQUIRE(p.documents.size() == 2);
  CHECK(p.documents[0].text == "A man runs.");
  CHECK(p.documents[0].text_b == "A person moves.");
  CHECK(p.documents[1].label == 0);
  o.label_names = {"entailment", "not_entailment"};
  Corpus t = load_tsv(data_fixture("tsv/text_labels.tsv"), o);
  REQUIRE(t.documents.size() == 2);
  CHECK(t.documents[0].label == 0);
  CHECK(t.documents[1].label == 1);
  CHECK(t.documents[1].text_b == "D");
}

TEST_CASE("TSV errors name the file, line and what was expected") {
  TsvOptions o;
  std::string e = data_error([&] { load_tsv(data_fixture("tsv/wrong_columns.tsv"), o); });
  CHECK(e.find("wrong_columns.tsv:3: 3 tab-separated columns (expected 2") != std::string::npos);
  e = data_error([&] { load_tsv(data_fixture("tsv/no_label.tsv"), o); });
  CHECK(e.find("no_label.tsv:1: no label column 'label'") != std::string::npos);
  CHECK(e.find("sentence, score") != std::string::npos);
  e = data_error([&] { load_tsv(data_fixture("tsv/label_range.tsv"), o); });
  CHECK(e.find("label_range.tsv:3: label 2 out of range (expected 0..1") != std::string::npos);
  e = data_error([&] { load_tsv(data_fixture("tsv/text_labels.tsv"), o); });
  CHECK(e.find("text_labels.tsv:2: label 'entailment' is not an integer") != std::string::npos);
  e = data_error([&] { load_tsv(data_fixture("tsv/bad_utf8.tsv"), o); });
  CHECK(e.find("bad_utf8.tsv:3:4: invalid UTF-8 (byte 0xE9") != std::string::npos);
  e = data_error([&] { load_tsv(data_fixture("tsv/header_only.tsv"), o); });
  CHECK(e.find("header_only.tsv: empty corpus") != std::string::npos);
  // A pair row whose second sentence is empty was laid out as a single sentence among pairs.
  TempDir tmp;
  const std::string empty_b =
      write_file(tmp.path + "/empty_b.tsv", "sentence1\tsentence2\tlabel\nA\tB\t0\nC\t \t1\n");
  e = data_error([&] { load_tsv(empty_b, o); });
  CHECK(e == empty_b + ":3: empty text in column 'sentence2' (a sentence pair needs both "
                       "sentences, 'sentence1' and 'sentence2')");
  o.text_columns = {"sentence1"};  // read as single sentences, the row is fine
  CHECK(load_tsv(empty_b, o).documents.size() == 2);
  o.text_columns = {"premise"};
  e = data_error([&] { load_tsv(data_fixture("tsv/single.tsv"), o); });
  CHECK(e.find("single.tsv:1: no column 'premise'") != std::string::npos);
  o.text_columns = {};
  o.label_names = {"yes", "no"};
  e = data_error([&] { load_tsv(data_fixture("tsv/single.tsv"), o); });
  CHECK(e.find("single.tsv:2: label '1' is not one of data.label_names (yes, no)") !=
        std::string::npos);
}

TEST_CASE("sentiment fixture files: dummy last entry dropped, classes checked") {
  Corpus c;
  load_sentiment_file(data_fixture("sentiment/small.json"), "amazon", c);
  REQUIRE(c.documents.size() == 3);
  CHECK(c.documents[0].text == "Great phone.");  // trailing white space trimmed
  CHECK(c.documents[0].label == 1);
  CHECK(c.documents[1].label == 0);
  CHECK(c.documents[2].name == "amazon:2");
  Corpus bad;
  std::string e =
      data_error([&] { load_sentiment_file(data_fixture("sentiment/bad_class.json"), "x", bad); });
  CHECK(e.find("bad_class.json: record 1: class 3 out of range (expected 0 or 1)") !=
        std::string::npos);
  e = data_error([&] { load_sentiment_file(data_fixture("squad/bad_json.json"), "x", bad); });
  CHECK(e.find("invalid JSON") != std::string::npos);
}

TEST_CASE("SQuAD v1.1: answer_start counts characters, spans are bytes") {
  Corpus c = load_squad(data_fixture("squad/good.json"));
  CHECK(c.kind == CorpusKind::Qa);
  REQUIRE(c.documents.size() == 2);
  CHECK(c.documents[0].name == "Café");
  REQUIRE(c.contexts.size() == 3);
  REQUIRE(c.questions.size() == 4);
  const QaExample& q1 = c.questions[0];
  CHECK(q1.id == "q1");
  // "The café in Zürich opened in " is 29 characters but 31 bytes (é and ü take two).
  CHECK(q1.answer_begin == 31);
  CHECK(q1.answer_end == 35);
  CHECK(c.contexts[0].substr(q1.answer_begin, q1.answer_end - q1.answer_begin) == "1905");
  const QaExample& q2 = c.questions[1];
  CHECK(q2.answers == std::vector<std::string>{"Émile Roux", "Émile"});
  CHECK(c.contexts[0].substr(q2.answer_begin, q2.answer_end - q2.answer_begin) == "Émile Roux");
  CHECK(c.questions[3].document == 1);
  CHECK(c.questions[3].context == 2);
}

TEST_CASE("SQuAD errors: bad JSON, answer mismatch, answer outside, empty") {
  std::string e = data_error([] { load_squad(data_fixture("squad/bad_json.json")); });
  CHECK(e.find("bad_json.json:6:") != std::string::npos);
  CHECK(e.find("invalid JSON") != std::string::npos);
  CHECK(e.find("expected SQuAD v1.1") != std::string::npos);
  e = data_error([] { load_squad(data_fixture("squad/answer_mismatch.json")); });
  CHECK(e.find("answer_mismatch.json:45: data[1].paragraphs[0].qas[0] (id 'q3'), answers[0]: "
               "answer 'north' does not occur at answer_start 4 (the context has 'Rhine' there") !=
        std::string::npos);
  e = data_error([] { load_squad(data_fixture("squad/answer_outside.json")); });
  CHECK(e.find("answer_start 99 outside the context of 22 characters") != std::string::npos);
  e = data_error([] { load_squad(data_fixture("squad/bad_utf8.json")); });
  CHECK(e.find("bad_utf8.json:3:") != std::string::npos);
  CHECK(e.find("UTF-8") != std::string::npos);
  CHECK(e.find("<0xE9>") != std::string::npos);  // the bad byte, written printable
  CHECK(utf8_error_offset(e) == std::string::npos);
  e = data_error([] { load_squad(data_fixture("squad/empty.json")); });
  CHECK(e.find("empty.json: empty corpus") != std::string::npos);
}

// A SQuAD file of `n` questions, one paragraph "p<k> w" per 10 questions, one record a line
// (line 1 opens the file): question k is on line k + 3 + k / 10 (each paragraph opens a line).
// `bad` replaces the record of question `bad_at`.
std::string many_questions(int n, int bad_at = -1, const std::string& bad = "") {
  std::string s = "{\"data\": [{\"title\": \"T\", \"paragraphs\": [\n";
  for (int k = 0; k < n; ++k) {
    if (k % 10 == 0)
      s += fmt::format("{}{{\"context\": \"p{} w\", \"qas\": [\n", k ? "]}, " : "", k / 10);
    s += k % 10 ? ", " : "";
    s += k == bad_at ? bad
                     : fmt::format(R"({{"id": "q{}", "question": "Q{}?", "answers": )"
                                   R"([{{"answer_start": 0, "text": "p{}"}}]}})",
                                   k, k, k / 10);
    s += "\n";
  }
  return s + "]}]}]}\n";
}

TEST_CASE("SQuAD: a valid file is read without searching it for each question's line") {
  // Finding a question's line searched the file from its start for every question, so loading
  // took time quadratic in the file's size (a 5 MB file of 20k questions: 40 s). The search is
  // now made only for an error message; a valid file makes none.
  TempDir tmp;
  const std::string path = write_file(tmp.path + "/many.json", many_questions(20000));
  const int64_t before = locate_calls();
  Corpus c = load_squad(path);
  CHECK(locate_calls() == before);
  REQUIRE(c.questions.size() == 20000);
  CHECK(c.contexts.size() == 2000);
  CHECK(c.questions[19999].id == "q19999");
  CHECK(c.questions[19999].answers == std::vector<std::string>{"p1999"});
  CHECK(c.contexts[c.questions[19999].context] == "p1999 w");

  // Errors still name the line of the record (question 15003: line 15003 + 3 + 1500).
  auto error_at = [&](const std::string& record) {
    const std::string bad =
        write_file(tmp.path + "/bad.json", many_questions(20000, 15003, record));
    return data_error([&] { load_squad(bad); });
  };
  const std::string at = tmp.path + "/bad.json:16506: data[0].paragraphs[1500].qas[3] (id 'x')";
  CHECK(error_at(R"({"id": "x", "question": " ", "answers": []})") == at + ": empty question");
  CHECK(error_at(R"({"id": "x", "question": "Q?", "answers": []})") ==
        at + ": no answers (expected at least one; SQuAD v2 unanswerable questions are not "
             "supported)");
  CHECK(error_at(R"({"id": "x", "question": "Q?"})") ==
        at + ": 'answers' missing or not an array (expected SQuAD v1.1: {\"data\": [{\"title\", "
             "\"paragraphs\": [{\"context\", \"qas\": [{\"id\", \"question\", \"answers\": "
             "[{\"answer_start\", \"text\"}]}]}]}]})");
  const std::string head = R"({"id": "x", "question": "Q?", "answers": )";
  CHECK(error_at(head + R"([{"answer_start": 0, "text": ""}]})") ==
        at + ", answers[0]: empty answer text");
  CHECK(error_at(head + R"([{"answer_start": 9, "text": "w"}]})") ==
        at + ", answers[0]: answer_start 9 outside the context of 7 characters (expected 0..6)");
  CHECK(error_at(R"({"id": "x", "question": "Q?", "answers": [{"text": "w"}]})")
            .find(at + ", answers[0]: 'answer_start' missing or not an integer") == 0);
  // Before its id is known, a record is named by its path in the file only.
  CHECK(error_at(R"({"question": "Q?"})")
            .find(tmp.path + "/bad.json: data[0].paragraphs[1500].qas[3]: 'id' missing or not a "
                             "string") == 0);
  CHECK(locate_calls() == before + 6);
}

TEST_CASE("WordNet QA: question = gloss, context = examples, answer = the word's span") {
  Corpus c = load_wordnet_qa(data_fixture("wordnet"));
  CHECK(c.kind == CorpusKind::Qa);
  // Worked out by hand from the fixture: entity has no example, barely does not occur.
  struct Want {
    const char* question;
    const char* answer;
    int64_t begin;
  };
  const std::vector<Want> want = {
      {"a tangible and visible entity; an entity that can cast a shadow", "objects", 40},
      {"an assemblage of parts that is regarded as a single entity", "whole", 37},
      {"any of numerous small rodents", "mice", 4},  // noun.exc: mice -> mouse
      {"the letter \"a\" as written", "letter", 4},
      {"fixate one's eyes", "staring", 32},
      {"clap one's hands together", "clapping", 18},
      {"move away from a place", "went", 3},  // verb.exc: went -> go
      {"(usually followed by `to') having the necessary means or skill or know-how or authority "
       "to do something",
       "able", 0},
  };
  REQUIRE(c.questions.size() == want.size());
  for (size_t i = 0; i < want.size(); ++i) {
    const QaExample& q = c.questions[i];
    CAPTURE(i);
    CHECK(q.question == want[i].question);
    CHECK(q.answers == std::vector<std::string>{want[i].answer});
    CHECK(q.answer_begin == want[i].begin);
    CHECK(c.contexts[q.context].substr(q.answer_begin, q.answer_end - q.answer_begin) ==
          want[i].answer);
    CHECK(q.document == static_cast<int64_t>(i));
  }
  CHECK(c.contexts[1] == "how big is that part compared to the whole?; the team is a unit");
  std::string e = data_error([] { load_wordnet_qa(data_fixture("wordnet_bad")); });
  CHECK(e.find("wordnet_bad/data.noun:3: malformed synset line") != std::string::npos);
  e = data_error([] { load_wordnet_qa(data_fixture("folder")); });
  CHECK(e.find("no WordNet database") != std::string::npos);
}

TEST_CASE("load_corpus: built-in names need the cache, paths by kind, caps") {
  Config cfg;
  cfg.data.cache_dir = "/nonexistent/relpos-cache";
  cfg.data.corpus = "sotu";
  try {
    load_corpus(cfg);
    FAIL("expected a DataError");
  } catch (const DataError& e) {
    CHECK(std::string(e.what()).find("corpus 'sotu': no cached data") != std::string::npos);
    CHECK(e.hint().find("run scripts/fetch_data.sh") != std::string::npos);
  }
  cfg.data.corpus = "sentiment";
  CHECK(data_error([&] { load_corpus(cfg); }).find("corpus 'sentiment': no cached data") !=
        std::string::npos);
  cfg.data.corpus = data_fixture("nope.txt");
  CHECK(data_error([&] { load_corpus(cfg); }).find("neither a built-in corpus") !=
        std::string::npos);
  cfg.data.corpus = data_fixture("tsv/pair.tsv");
  CHECK(load_corpus(cfg).kind == CorpusKind::Labelled);
  cfg.data.corpus = data_fixture("squad/good.json");
  CHECK(load_corpus(cfg).kind == CorpusKind::Qa);
  cfg.data.max_documents = 1;
  Corpus one = load_corpus(cfg);
  CHECK(one.documents.size() == 1);
  CHECK(one.questions.size() == 2);
  CHECK(one.contexts.size() == 1);
  cfg.data.max_documents = 0;
  cfg.data.corpus = data_fixture("text/docs.txt");
  cfg.data.max_chars = 60;
  Corpus capped = load_corpus(cfg);
  REQUIRE(capped.documents.size() == 2);
  CHECK(capped.documents[0].text.size() + capped.documents[1].text.size() == 60);
}

TEST_CASE("a UTF-8 byte order mark at the start of a text, TSV, vocabulary or JSON file is "
          "dropped") {
  TempDir tmp;
  const std::string dir = tmp.path + "/";
  // Text file and folder: the documents hold no BOM bytes.
  Corpus t = load_text_file(write_file(dir + "bom.txt", kBom + "First.\n\nSecond.\n"));
  REQUIRE(t.documents.size() == 2);
  CHECK(t.documents[0].text == "First.");
  std::filesystem::create_directories(dir + "folder");
  write_file(dir + "folder/a.txt", kBom + "Only text.\n");
  Corpus f = load_text_folder(dir + "folder");
  REQUIRE(f.documents.size() == 1);
  CHECK(f.documents[0].text == "Only text.\n");
  // Only one leading BOM is a BOM: a second one is text (U+FEFF), and so is one further on.
  Corpus t2 = load_text_file(write_file(dir + "bom2.txt", kBom + kBom + "x" + kBom + "\n"));
  CHECK(t2.documents[0].text == kBom + "x" + kBom);
  // TSV: the first column is 'sentence', not U+FEFF 'sentence'.
  const std::string single = test::read_text(data_fixture("tsv/single.tsv"));
  Corpus s = load_tsv(write_file(dir + "bom.tsv", kBom + single), {});
  Corpus plain = load_tsv(data_fixture("tsv/single.tsv"), {});
  REQUIRE(s.documents.size() == plain.documents.size());
  CHECK(s.documents[0].text == plain.documents[0].text);
  // WordPiece: the first token is [PAD], and the ids are those of the file without the BOM.
  const std::string vocab = test::read_text(data_fixture("vocab.txt"));
  auto with_bom = make_wordpiece_tokenizer(write_file(dir + "vocab.txt", kBom + vocab), true);
  auto without = make_wordpiece_tokenizer(data_fixture("vocab.txt"), true);
  CHECK(with_bom->vocab_size() == without->vocab_size());
  CHECK(with_bom->encode("the unaffable runner") == without->encode("the unaffable runner"));
  // SQuAD JSON (the JSON parser skips a BOM itself).
  const std::string squad = test::read_text(data_fixture("squad/good.json"));
  Corpus q = load_squad(write_file(dir + "bom.json", kBom + squad));
  CHECK(q.questions.size() == load_squad(data_fixture("squad/good.json")).questions.size());
  // Invalid UTF-8 is still located in the file as it is, BOM included.
  const std::string e =
      data_error([&] { load_text_file(write_file(dir + "bad.txt", kBom + "ab\xFF\n")); });
  CHECK(e.find("bad.txt:1:6: invalid UTF-8 (byte 0xFF at byte offset 5") != std::string::npos);
}

TEST_CASE("data.cache_dir: the default names the checkout's data/, another relative path the "
          "working directory, like data.corpus") {
  const char* env = std::getenv("RELPOS_DATA_DIR");
  const std::string saved = env ? env : "";
  ::unsetenv("RELPOS_DATA_DIR");
  DataConfig d;
  CHECK(resolve_cache_dir(d) == std::string(RELPOS_SOURCE_DIR) + "/data");
  d.cache_dir = "cache";
  CHECK(resolve_cache_dir(d) == "cache");  // relative: opened from the working directory
  d.cache_dir = "/tmp/abs_cache";
  CHECK(resolve_cache_dir(d) == "/tmp/abs_cache");
  ::setenv("RELPOS_DATA_DIR", "/tmp/env_cache", 1);
  CHECK(resolve_cache_dir(DataConfig{}) == "/tmp/env_cache");
  CHECK(resolve_cache_dir(d) == "/tmp/abs_cache");  // a cache_dir that was set wins
  if (saved.empty())
    ::unsetenv("RELPOS_DATA_DIR");
  else
    ::setenv("RELPOS_DATA_DIR", saved.c_str(), 1);
}

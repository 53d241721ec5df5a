// mlm, clm, classify and span_qa batches on fixtures, checked against the raw text (the bytes
// tokenizer makes the expected ids plain: 5 + byte).
#include <doctest/doctest.h>

#include <algorithm>
#include <fstream>
#include <set>

#include "core/data/task.h"
#include "core/data/tasks.h"
#include "core/util/text_util.h"
#include "core/task/task_registry.h"
#include "data_helpers.h"

using namespace relpos;
using relpos::test::data_error;
using relpos::test::data_fixture;

namespace {

std::vector<int64_t> byte_ids(const std::string& s) {
  std::vector<int64_t> v;
  for (unsigned char ch : s) v.push_back(5 + ch);
  return v;
}

std::vector<int64_t> row(const torch::Tensor& t, int64_t r) {
  torch::Tensor x = t[r].contiguous();
  return {x.data_ptr<int64_t>(), x.data_ptr<int64_t>() + x.numel()};
}

// Is `part` a contiguous piece of `whole`?
bool contains_run(const std::vector<int64_t>& whole, const std::vector<int64_t>& part) {
  return std::search(whole.begin(), whole.end(), part.begin(), part.end()) != whole.end();
}

Config lm_config(const std::string& type) {
  Config c;
  c.task.type = type;
  c.model.mode = type == "clm" ? "decoder" : "encoder";
  c.data.corpus = data_fixture("spm_train.txt");  // one document: cut into 20 pieces
  c.data.tokenizer = "bytes";
  c.data.valid_fraction = 0.1;
  c.data.test_fraction = 0.1;
  c.task.seq_len = 32;
  return c;
}

}  // namespace

TEST_CASE("mlm: [CLS] + a window of the training stream, masks undo to the stream") {
  const Config c = lm_config("mlm");
  auto data = make_task_data(c);
  const auto& train = data->stream(Split::Train);
  // Split by document, on record, disjoint.
  std::set<int64_t> docs;
  for (Split s : {Split::Train, Split::Valid, Split::Test})
    for (int64_t d : data->split_documents(s)) CHECK(docs.insert(d).second);
  CHECK(docs.size() == 20);
  CHECK(data->split_documents(Split::Valid).size() == 2);
  CHECK(std::count(train.begin(), train.end(), 3) == 16);  // a [SEP] after each document
  const Batch b = data->train_batch(3, 8);
  CHECK(b.tokens.sizes() == torch::IntArrayRef{8, 32});
  CHECK(!b.key_mask.defined());
  for (int64_t r = 0; r < 8; ++r) {
    auto tok = row(b.tokens, r), tgt = row(b.targets, r);
    CHECK(tok[0] == 2);
    CHECK(tgt[0] == -100);
    for (size_t i = 1; i < tok.size(); ++i)
      if (tgt[i] != -100) tok[i] = tgt[i];
    CHECK(contains_run(train, std::vector<int64_t>(tok.begin() + 1, tok.end())));
  }
  // Pure function of (seed, index).
  CHECK(b.tokens.equal(data->train_batch(3, 8).tokens));
  CHECK(b.targets.equal(data->train_batch(3, 8).targets));
  CHECK(!b.tokens.equal(data->train_batch(4, 8).tokens));
  Config c2 = c;
  c2.seed = 99;
  CHECK(!b.tokens.equal(make_task_data(c2)->train_batch(3, 8).tokens));
}

TEST_CASE("a text without white space is still cut into pieces, so every split gets text") {
  relpos::test::TempDir tmp;
  // One line of 6003 bytes without white space (one 3-byte character repeated, so a cut that
  // ignored character boundaries would break the UTF-8): it was one piece, and the validation
  // split, a share of one document, was empty.
  std::string text;
  for (int i = 0; i < 2001; ++i) text += "\xE6\x97\xA5";  // U+65E5; pieces of 301+ bytes
  const std::string path = tmp.path + "/one_line.txt";
  std::ofstream(path, std::ios::binary) << text << "\n";
  Config c = lm_config("mlm");
  c.data.corpus = path;
  auto data = make_task_data(c);
  CHECK(data->describe().find("1 document(s) cut into pieces; 19 documents") != std::string::npos);
  CHECK(!data->split_documents(Split::Valid).empty());
  CHECK(!data->split_documents(Split::Test).empty());
  CHECK(!data->eval_batches(Split::Valid, 2, 1).empty());
  // Every piece is whole characters: the streams decode back to valid UTF-8.
  for (Split s : {Split::Train, Split::Valid, Split::Test}) {
    std::vector<int64_t> ids;
    for (int64_t id : data->stream(s))
      if (id >= 5) ids.push_back(id);
    CHECK(utf8_error_offset(data->tokenizer().decode(ids)) == std::string::npos);
  }
}

TEST_CASE("mlm evaluation: consecutive windows, deterministic, any length") {
  auto data = make_task_data(lm_config("mlm"));
  const auto& valid = data->stream(Split::Valid);
  const auto batches = data->eval_batches(Split::Valid, 4, 0);
  const auto again = data->eval_batches(Split::Valid, 4, 0);
  REQUIRE(batches.size() == again.size());
  std::vector<int64_t> restored;
  for (size_t k = 0; k < batches.size(); ++k) {
    CHECK(batches[k].tokens.equal(again[k].tokens));
    CHECK(batches[k].targets.equal(again[k].targets));
    for (int64_t r = 0; r < batches[k].tokens.size(0); ++r) {
      auto tok = row(batches[k].tokens, r), tgt = row(batches[k].targets, r);
      for (size_t i = 0; i < tok.size(); ++i)
        if (tgt[i] != -100) tok[i] = tgt[i];
      restored.insert(restored.end(), tok.begin() + 1, tok.end());
    }
  }
  const size_t windows = valid.size() / 31;
  CHECK(restored.size() == windows * 31);
  CHECK(std::equal(restored.begin(), restored.end(), valid.begin()));
  CHECK(data->eval_batches(Split::Valid, 4, 2).size() == 2);
  CHECK(data->eval_batches(Split::Test, 2, 1, 64)[0].tokens.size(1) == 64);
}

TEST_CASE("clm: targets are the next tokens / evaluation covers the stream once") {
  auto data = make_task_data(lm_config("clm"));
  const auto& train = data->stream(Split::Train);
  const Batch b = data->train_batch(0, 4);
  for (int64_t r = 0; r < 4; ++r) {
    auto tok = row(b.tokens, r), tgt = row(b.targets, r);
    for (size_t i = 0; i + 1 < tok.size(); ++i) CHECK(tgt[i] == tok[i + 1]);
    tok.push_back(tgt.back());
    CHECK(contains_run(train, tok));
  }
  const auto& test = data->stream(Split::Test);
  const auto eval = data->eval_batches(Split::Test, 3, 0);
  int64_t k = 0;
  for (const Batch& e : eval)
    for (int64_t r = 0; r < e.tokens.size(0); ++r, ++k) {
      CHECK(row(e.tokens, r) ==
            std::vector<int64_t>(test.begin() + 32 * k, test.begin() + 32 * k + 32));
      CHECK(row(e.targets, r) ==
            std::vector<int64_t>(test.begin() + 32 * k + 1, test.begin() + 32 * k + 33));
    }
  CHECK(k == (static_cast<int64_t>(test.size()) - 33) / 32 + 1);
}

TEST_CASE("classify: [CLS] a [SEP] b [SEP], truncation, pooling, epochs") {
  Config c;
  c.task.type = "classify";
  c.data.corpus = data_fixture("tsv/pair.tsv");
  c.data.valid_fraction = c.data.test_fraction = 0;
  c.task.seq_len = 12;
  auto data = make_task_data(c);
  const auto batches = data->eval_batches(Split::Train, 2, 0);
  REQUIRE(batches.size() == 1);
  const Batch& b = batches[0];
  // "A man runs." + "A person moves." need 26 + 3 > 12: the longer one is cut first, by turns,
  // down to 4 + 5 = 9 bytes.
  std::vector<int64_t> want = {2};
  for (auto x : byte_ids("A ma")) want.push_back(x);
  want.push_back(3);
  for (auto x : byte_ids("A per")) want.push_back(x);
  want.push_back(3);
  CHECK(row(b.tokens, 0) == want);
  CHECK(row(b.segments, 0) == std::vector<int64_t>{0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1});
  CHECK(row(b.targets.view({1, -1}), 0) == std::vector<int64_t>{1, 0});
  CHECK(row(b.pool_index.view({1, -1}), 0) == std::vector<int64_t>{0, 0});
  CHECK(b.example_ids == std::vector<int64_t>{0, 1});

  c.data.corpus = data_fixture("tsv/single.tsv");
  c.model.mode = "decoder";
  c.task.seq_len = 64;
  auto single = make_task_data(c);
  const Batch s = single->eval_batches(Split::Train, 3, 0)[0];
  CHECK(!s.segments.defined());
  // Rows "it was great", "it was awful", "meh": decoders pool at the last real token.
  CHECK(row(s.pool_index.view({1, -1}), 0) == std::vector<int64_t>{13, 13, 4});
  REQUIRE(s.key_mask.defined());
  CHECK(s.key_mask[2].sum().item<int64_t>() == 5);
  CHECK(s.tokens[2][5].item<int64_t>() == 0);
  // Every epoch visits every training example once.
  for (int64_t epoch = 0; epoch < 3; ++epoch) {
    std::set<int64_t> seen;
    for (int64_t i = 0; i < 3; ++i)
      seen.insert(single->train_batch(epoch * 3 + i, 1).example_ids[0]);
    CHECK(seen == std::set<int64_t>{0, 1, 2});
  }
  c.data.corpus = data_fixture("text/docs.txt");
  CHECK(data_error([&] { make_task_data(c); }).find("needs a labelled corpus") !=
        std::string::npos);
}

TEST_CASE("classify: a corpus of sentence pairs lays out every row as a pair") {
  // A pair file with a single-sentence validation file: rows of two layouts in one classifier.
  Config c;
  c.task.type = "classify";
  c.data.corpus = data_fixture("tsv/pair.tsv");
  c.data.valid_corpus = data_fixture("tsv/dev.tsv");
  CHECK(data_error([&] { make_task_data(c); }) ==
        "data.valid_corpus '" + data_fixture("tsv/dev.tsv") + "' has single sentences, but "
        "data.corpus '" + data_fixture("tsv/pair.tsv") + "' has sentence pairs");
  // A pair corpus built otherwise, with one row that has no second sentence.
  Corpus corpus;
  corpus.name = "pairs";
  corpus.kind = CorpusKind::Labelled;
  corpus.documents = {{"line 2", "A", "B", 0}, {"line 3", "C", "", 1}};
  c.data.valid_corpus.clear();
  CHECK(data_error([&] { make_classify_task(c, corpus); }) ==
        "corpus 'pairs', document 'line 3': no second sentence in a corpus of sentence pairs "
        "(expected both sentences in every row)");
}

TEST_CASE("span_qa: layout, answer spans, truncation and span_text") {
  Config c;
  c.task.type = "span_qa";
  c.data.corpus = data_fixture("squad/good.json");
  c.data.valid_fraction = c.data.test_fraction = 0;
  c.task.seq_len = 48;
  auto data = make_task_data(c);
  struct Q {
    std::string question, context, answer;
  };
  const std::string c1 =
      "The caf\xC3\xA9 in Z\xC3\xBCrich opened in 1905. Its owner was \xC3\x89mile Roux.";
  const std::vector<Q> qs = {{"When did the caf\xC3\xA9 open?", c1, "1905"},
                             {"Who owned it?", c1, "\xC3\x89mile Roux"},
                             {"Which way does the Rhine flow?", "The Rhine flows north.", "north"},
                             {"Which way does the Danube flow?", "The Danube flows east.", "east"}};
  for (int64_t T : {48, 128}) {
    CAPTURE(T);
    const auto batches = data->eval_batches(Split::Train, 4, 0, T);
    REQUIRE(batches.size() == 1);
    const Batch& b = batches[0];
    CHECK(b.example_ids == std::vector<int64_t>{0, 1, 2, 3});
    for (int64_t r = 0; r < 4; ++r) {
      CAPTURE(r);
      const Q& q = qs[r];
      // Questions keep min(max_query_len, seq_len / 2) = 24 tokens.
      const std::string qt = q.question.substr(0, std::min<size_t>(q.question.size(), 24));
      const int64_t room = T - static_cast<int64_t>(qt.size()) - 3;
      std::vector<int64_t> want = {2};
      for (auto x : byte_ids(qt)) want.push_back(x);
      want.push_back(3);
      for (auto x : byte_ids(q.context.substr(0, room))) want.push_back(x);
      want.push_back(3);
      auto tok = row(b.tokens, r);
      tok.resize(want.size());
      CHECK(tok == want);
      // The context is at positions [|q| + 2, |q| + 2 + what fitted); the final [SEP] is not.
      CHECK(b.context_range[r].begin == static_cast<int64_t>(qt.size()) + 2);
      CHECK(b.context_range[r].end ==
            static_cast<int64_t>(qt.size() + 2 +
                                 std::min(q.context.size(), static_cast<size_t>(room))));
      const int64_t start = b.targets[r][0].item<int64_t>(), end = b.targets[r][1].item<int64_t>();
      const size_t at = q.context.find(q.answer);
      if (at + q.answer.size() <= static_cast<size_t>(room)) {
        CHECK(start == static_cast<int64_t>(qt.size() + 2 + at));
        CHECK(end == static_cast<int64_t>(qt.size() + 2 + at + q.answer.size() - 1));
        CHECK(data->span_text(Split::Train, r, start, end, b.context_range[r]) == q.answer);
      } else {
        CHECK(start == 0);  // the answer is cut away: [CLS]
        CHECK(end == 0);
      }
      CHECK(data->gold_answers(Split::Train, r)[0] == q.answer);
    }
  }
  // At T = 48 only the river questions keep their answers: training uses those two.
  CHECK(data->describe().find("2 training questions dropped (2 with the answer beyond seq_len 48, "
                              "0 with an answer no token covers)") != std::string::npos);
  std::set<int64_t> used;
  for (int64_t i = 0; i < 8; ++i) used.insert(data->train_batch(i, 1).example_ids[0]);
  CHECK(used == std::set<int64_t>{2, 3});
  const Batch b = data->eval_batches(Split::Train, 4, 0)[0];
  CHECK(data->span_text(Split::Train, 2, 0, 0, b.context_range[2]) == "");  // [CLS]
}

TEST_CASE("span_qa: span_text never returns context the row did not show") {
  Config c;
  c.task.type = "span_qa";
  c.data.corpus = data_fixture("squad/good.json");
  c.data.valid_fraction = c.data.test_fraction = 0;
  c.task.seq_len = 48;
  auto data = make_task_data(c);
  const Batch b = data->eval_batches(Split::Train, 4, 0)[0];
  // Row 0: [CLS] + the 24-byte question + [SEP], then 48 - 27 = 21 context bytes,
  // "The caf\xC3\xA9 in Z\xC3\xBCrich " at 26..46, and the final [SEP] at 47; "opened" is cut away.
  REQUIRE(b.context_range[0].begin == 26);
  REQUIRE(b.context_range[0].end == 47);
  CHECK(row(b.tokens, 0)[47] == 3);
  const TokenRange visible = b.context_range[0];
  CHECK(data->span_text(Split::Train, 0, 39, 46, visible) == "Z\xC3\xBCrich");
  // A span that ends on the final [SEP] (or starts on the question's) returned the hidden
  // context byte behind it, "Z\xC3\xBCrich o"; now it is no context span at all.
  CHECK(data->span_text(Split::Train, 0, 39, 47, visible) == "");
  CHECK(data->span_text(Split::Train, 0, 25, 30, visible) == "");
  // The same example at a longer length shows more of the context.
  const Batch longer = data->eval_batches(Split::Train, 4, 0, 128)[0];
  CHECK(data->span_text(Split::Train, 0, 39, 48, longer.context_range[0]) == "Z\xC3\xBCrich op");
}

TEST_CASE("span_qa: describe() counts uncovered and too-long answers per split") {
  // Bytes: answers of 4, 11, 5 and 4 tokens; two are longer than task.max_answer_len = 4.
  Config c;
  c.task.type = "span_qa";
  c.data.corpus = data_fixture("squad/good.json");
  c.data.valid_fraction = c.data.test_fraction = 0;
  c.task.seq_len = 128;
  c.task.max_answer_len = 4;
  auto data = make_task_data(c);
  CHECK(data->max_answer_len() == 4);
  CHECK(data->describe().find(
            "0 training questions dropped (0 with the answer beyond seq_len 128, 0 with an answer "
            "no token covers); answers no token covers: train 0 / valid 0 / test 0; answers "
            "longer than task.max_answer_len = 4 tokens: train 2 / valid 0 / test 0") !=
        std::string::npos);

  // WordPiece makes no token of a space: an answer " " is covered by none. Such a training
  // question is dropped for that reason, not for seq_len, and each split counts its own.
  relpos::test::TempDir dir;
  const std::string vocab = dir.path + "/vocab.txt";
  std::ofstream(vocab)
      << "[PAD]\n[UNK]\n[CLS]\n[SEP]\n[MASK]\nthe\nrhine\nflows\nnorth\n.\nwhere\n?\n";
  // Question "a" has the answer `answer` at `start`; question "b" the answer "north".
  auto squad = [&](const std::string& name, const std::string& context, int start,
                   const std::string& answer) {
    const std::string path = dir.path + "/" + name;
    std::ofstream(path) << R"({"data": [{"title": ")" << name
                        << R"(", "paragraphs": [{"context": ")" << context
                        << R"(", "qas": [{"id": "a", "question": "where?", "answers": [)"
                        << R"({"answer_start": )" << start << R"(, "text": ")" << answer
                        << R"("}]}, {"id": "b", "question": "where?", "answers": [)"
                        << R"({"answer_start": 16, "text": "north"}]}]}]}]})";
    return path;
  };
  c.data.corpus = squad("train.json", "The Rhine flows north.", 3, " ");
  c.data.valid_corpus = squad("valid.json", "The Rhine flows north.", 9, " ");
  c.data.tokenizer = "wordpiece";
  c.data.vocab_file = vocab;
  c.task.seq_len = 40;
  c.task.max_answer_len = 30;
  data = make_task_data(c);
  CHECK(data->describe().find(
            "1 training questions dropped (0 with the answer beyond seq_len 40, 1 with an answer "
            "no token covers); answers no token covers: train 1 / valid 1 / test 0; answers "
            "longer than task.max_answer_len = 30 tokens: train 0 / valid 0 / test 0") !=
        std::string::npos);
}

TEST_CASE("span_qa with WordPiece: offsets map token spans back to the original text") {
  relpos::test::TempDir dir;
  const std::string vocab = dir.path + "/vocab.txt";
  {
    std::string v = "[PAD]\n[UNK]\n[CLS]\n[SEP]\n[MASK]\n";
    for (const char* w : {"the", "cafe", "in", "zurich", "opened", "1905", ".", "its", "owner",
                          "was", "emile", "roux", "when", "did", "open", "?", "who", "owned", "it"})
      v += std::string(w) + "\n";
    std::ofstream(vocab) << v;
  }
  Config c;
  c.task.type = "span_qa";
  c.data.corpus = data_fixture("squad/good.json");
  c.data.tokenizer = "wordpiece";
  c.data.vocab_file = vocab;
  c.data.valid_fraction = c.data.test_fraction = 0;
  c.task.seq_len = 40;
  auto data = make_task_data(c);
  const Batch b = data->eval_batches(Split::Train, 2, 1)[0];
  // "Émile Roux" is two word tokens; the text comes back with its accent.
  const int64_t s = b.targets[1][0].item<int64_t>(), e = b.targets[1][1].item<int64_t>();
  CHECK(e == s + 1);
  CHECK(data->span_text(Split::Train, 1, s, e, b.context_range[1]) == "\xC3\x89mile Roux");
  CHECK(data->span_text(Split::Train, 1, s, s, b.context_range[1]) == "\xC3\x89mile");
  CHECK(data->span_text(Split::Train, 0, b.targets[0][0].item<int64_t>(),
                        b.targets[0][1].item<int64_t>(), b.context_range[0]) == "1905");
}

TEST_CASE("data.valid_corpus / data.test_corpus: a split from its own file") {
  // SQuAD-style: train on one file, validate on a dev file whose questions have several gold
  // answers. valid_fraction is ignored once the validation split has its own file.
  Config c;
  c.task.type = "span_qa";
  c.data.corpus = data_fixture("squad/good.json");
  c.data.valid_corpus = data_fixture("squad/dev.json");
  c.data.valid_fraction = 0.5;
  c.data.test_fraction = 0;
  c.task.seq_len = 96;
  auto qa = make_task_data(c);
  CHECK(qa->split_documents(Split::Train) == std::vector<int64_t>{0, 1});
  CHECK(qa->split_documents(Split::Valid) == std::vector<int64_t>{2});
  CHECK(qa->split_documents(Split::Test).empty());
  CHECK(qa->eval_batches(Split::Train, 8, 0)[0].example_ids == std::vector<int64_t>{0, 1, 2, 3});
  const auto valid = qa->eval_batches(Split::Valid, 8, 0);
  REQUIRE(valid.size() == 1);
  REQUIRE(valid[0].example_ids == std::vector<int64_t>{0, 1});
  CHECK(qa->gold_answers(Split::Valid, 0) ==
        std::vector<std::string>{"between Switzerland and France", "Switzerland and France",
                                 "Switzerland"});
  const Batch& v = valid[0];
  for (int64_t r = 0; r < 2; ++r) {
    const int64_t start = v.targets[r][0].item<int64_t>(), end = v.targets[r][1].item<int64_t>();
    CHECK(qa->span_text(Split::Valid, r, start, end, v.context_range[r]) ==
          qa->gold_answers(Split::Valid, r)[0]);
  }
  CHECK(qa->describe().find("validation: SQuAD v1.1 file") != std::string::npos);

  // GLUE-style: train.tsv + dev.tsv; the test split from a file too. Rows keep file order.
  c = Config();
  c.task.type = "classify";
  c.data.corpus = data_fixture("tsv/single.tsv");
  c.data.valid_corpus = data_fixture("tsv/dev.tsv");
  c.data.test_corpus = data_fixture("tsv/dev.tsv");
  auto cls = make_task_data(c);
  CHECK(cls->split_documents(Split::Train) == std::vector<int64_t>{0, 1, 2});
  CHECK(cls->split_documents(Split::Valid) == std::vector<int64_t>{3, 4, 5, 6});
  CHECK(cls->split_documents(Split::Test) == std::vector<int64_t>{7, 8, 9, 10});
  const Batch dev = cls->eval_batches(Split::Valid, 8, 0)[0];
  CHECK(row(dev.targets.view({1, -1}), 0) == std::vector<int64_t>{1, 0, 1, 0});
  std::vector<int64_t> bad = {2};  // "bad", the second dev row
  for (auto x : byte_ids("bad")) bad.push_back(x);
  bad.push_back(3);
  auto second = row(dev.tokens, 1);
  second.resize(bad.size());
  CHECK(second == bad);

  // Text: the validation stream is the dev file's text (pieces joined by [SEP]), and the main
  // corpus is split between train and test only.
  c = lm_config("clm");
  c.data.corpus = data_fixture("text/docs.txt");
  c.data.valid_corpus = data_fixture("text/one_doc.txt");
  c.task.seq_len = 8;
  auto lm = make_task_data(c);
  Config alone = lm_config("clm");
  alone.data.corpus = data_fixture("text/one_doc.txt");
  alone.data.valid_fraction = alone.data.test_fraction = 0;
  alone.task.seq_len = 8;
  auto ref = make_task_data(alone);
  const int64_t sep = lm->tokenizer().special().sep;
  auto without_sep = [&](std::vector<int64_t> v) {
    v.erase(std::remove(v.begin(), v.end(), sep), v.end());
    return v;
  };
  CHECK(without_sep(lm->stream(Split::Valid)) == without_sep(ref->stream(Split::Train)));
  const auto lm_valid = lm->split_documents(Split::Valid);
  const auto lm_test = lm->split_documents(Split::Test);
  CHECK_FALSE(lm_test.empty());
  for (int64_t d : lm_test) CHECK(std::count(lm_valid.begin(), lm_valid.end(), d) == 0);

  // Errors name the key: a file of another kind, a missing file.
  c = Config();
  c.task.type = "span_qa";
  c.data.corpus = data_fixture("squad/good.json");
  c.data.valid_corpus = data_fixture("tsv/single.tsv");
  const std::string kind = data_error([&] { make_task_data(c); });
  CHECK(kind.find("data.valid_corpus '") != std::string::npos);
  CHECK(kind.find("is labelled data, but data.corpus") != std::string::npos);
  c.data.valid_corpus = "";
  c.data.test_corpus = data_fixture("squad/absent.json");
  CHECK(data_error([&] { make_task_data(c); }).find("data.test_corpus: '") != std::string::npos);
}

TEST_CASE("config validation of data and task keys") {
  auto config_error = [](const Config& c) {
    try {
      validate(c, nullptr);
    } catch (const ConfigError& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  Config c;
  c.task.type = "recall";
  CHECK(config_error(c).find("task.synthetic_vocab") != std::string::npos);
  c = Config();
  c.task.type = "classify";
  CHECK(config_error(c).find("data.corpus: corpus does not fit the task") != std::string::npos);
  c.data.corpus = "sentiment";
  CHECK(config_error(c).empty());
  c.data.label_names = {"a", "b", "c"};
  CHECK(config_error(c).find("data.label_names") != std::string::npos);
  c = Config();
  c.data.tokenizer = "sentencepiece";
  c.data.vocab_size = 100;
  CHECK(config_error(c).find("data.vocab_size") != std::string::npos);
  c = Config();
  c.task.type = "classify";
  c.data.corpus = "sentiment";
  c.data.valid_corpus = "sotu";
  CHECK(config_error(c).find("data.valid_corpus: corpus does not fit the task") !=
        std::string::npos);
  c = Config();
  c.task.type = "copy";
  c.model.mode = "decoder";
  c.data.test_corpus = "dev.txt";
  CHECK(config_error(c).find("data.test_corpus: the synthetic tasks generate their own data") !=
        std::string::npos);
}

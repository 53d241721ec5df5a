// The built-in corpora on the real cached data (scripts/fetch_data.sh; scripts/test.sh runs it
// first). Each test skips with a message when the data is not there.
#include <doctest/doctest.h>

#include <filesystem>
#include <set>

#include "core/data/corpus.h"
#include "core/data/task.h"
#include "core/task/task_registry.h"
#include "data_helpers.h"

using namespace relpos;
using relpos::test::cache_dir;

namespace {

bool have(const std::string& rel) {
  if (std::filesystem::exists(cache_dir() + "/" + rel)) return true;
  MESSAGE("skipped: " << cache_dir() << "/" << rel << " is missing (run scripts/fetch_data.sh)");
  return false;
}

}  // namespace

TEST_CASE("built-in sotu: 233 speeches, 1790-2021, one document each") {
  if (!have("sotu/package/data")) return;
  Corpus c = load_sotu(cache_dir() + "/sotu");
  REQUIRE(c.documents.size() == 233);
  CHECK(c.documents.front().name == "1790_george_washington_n");
  CHECK(c.documents.back().name == "2021_joseph_r_biden_d");
  CHECK(c.documents.front().text.rfind(
            "Fellow-Citizens of the Senate and House of Representatives:", 0) == 0);
  size_t total = 0;
  for (const auto& d : c.documents) {
    CHECK(d.text.size() > 1000);
    total += d.text.size();
  }
  CHECK(total > 10'000'000);
  CHECK(total < 11'500'000);

  Config cfg;
  cfg.data.cache_dir = cache_dir();
  cfg.task.seq_len = 64;
  auto data = make_task_data(cfg);
  CHECK(data->split_documents(Split::Train).size() == 209);  // 233 - 2 * round(0.05 * 233)
  CHECK(data->split_documents(Split::Valid).size() == 12);
  CHECK(data->split_documents(Split::Test).size() == 12);
  CHECK(data->describe().find("233 documents") != std::string::npos);
  CHECK(data->train_batch(0, 4).tokens.sizes() == torch::IntArrayRef{4, 64});
}

TEST_CASE("built-in sentiment: 3,000 labelled sentences, balanced, stratified split") {
  if (!have("sentiment/package/test/fixtures")) return;
  Corpus c = load_sentiment(cache_dir() + "/sentiment");
  REQUIRE(c.documents.size() == 3000);
  int64_t positive = 0;
  std::set<std::string> names;
  for (const auto& d : c.documents) {
    positive += d.label;
    CHECK(!d.text.empty());
    names.insert(d.name);
  }
  CHECK(positive == 1500);
  CHECK(names.size() == 3000);
  CHECK(c.documents[0].name == "imdb:0");
  CHECK(c.documents[0].text ==
        "A very, very, very slow-moving, aimless movie about a distressed, drifting young man.");
  CHECK(c.documents[2999].name == "yelp:999");

  Config cfg;
  cfg.data.cache_dir = cache_dir();
  cfg.data.corpus = "sentiment";
  cfg.task.type = "classify";
  auto data = make_task_data(cfg);
  CHECK(data->split_documents(Split::Test).size() == 150);  // round(0.05 * 1500) per class
  CHECK(data->split_documents(Split::Valid).size() == 150);
  CHECK(data->split_documents(Split::Train).size() == 2700);
  int64_t pos_test = 0;
  for (int64_t id : data->split_documents(Split::Test)) pos_test += c.documents[id].label;
  CHECK(pos_test == 75);
}

TEST_CASE("built-in wordnet_qa: generated questions with answers inside their contexts") {
  const std::string dir = wordnet_dir(cache_dir());
  if (!std::filesystem::exists(dir + "/data.noun")) {
    MESSAGE("skipped: no WordNet in " << dir << " (install wordnet-base)");
    return;
  }
  Corpus c = load_wordnet_qa(dir);
  CHECK(c.questions.size() > 15000);
  CHECK(c.documents.size() == c.questions.size());
  for (const auto& q : c.questions) {
    const std::string& ctx = c.contexts[q.context];
    REQUIRE(q.answer_end <= static_cast<int64_t>(ctx.size()));
    CHECK(ctx.substr(q.answer_begin, q.answer_end - q.answer_begin) == q.answers[0]);
    CHECK(!q.question.empty());
  }
  Config cfg;
  cfg.data.cache_dir = cache_dir();
  cfg.data.corpus = "wordnet_qa";
  cfg.task.type = "span_qa";
  auto data = make_task_data(cfg);
  const Batch b = data->eval_batches(Split::Valid, 16, 1)[0];
  for (int64_t r = 0; r < 16; ++r) {
    const int64_t s = b.targets[r][0].item<int64_t>(), e = b.targets[r][1].item<int64_t>();
    if (s == 0) continue;  // answer beyond seq_len
    CHECK(data->span_text(Split::Valid, b.example_ids[r], s, e, b.context_range[r]) ==
          data->gold_answers(Split::Valid, b.example_ids[r])[0]);
  }
  MESSAGE(data->describe());
}

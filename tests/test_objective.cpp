// The Lm loss and metrics form logits only at positions with a target; they must equal the
// same quantities computed in a loop from the logits of every position that ModelImpl::forward
// (the model's one entry from tokens to logits) gives.
#include <doctest/doctest.h>

#include <cmath>

#include "core/train/objective.h"
#include "tests/small_model.h"

using namespace relpos;

namespace {

// Tokens (3,8) and targets with a few positions set: row 0 three targets, row 1 one target
// (the model's own prediction there), row 2 none.
struct ObjectiveCase {
  Batch batch;
  torch::Tensor logits;  // (B,T,V) of every position
};

ObjectiveCase make_case(Model& model) {
  torch::manual_seed(5);
  ObjectiveCase c;
  c.batch.tokens = torch::randint(5, 40, {3, 8}, torch::kLong);
  c.batch.targets = torch::full({3, 8}, -100, torch::kLong);
  {
    torch::NoGradGuard guard;
    c.logits = model->forward(c.batch.tokens);  // (B,T,V): the model's documented entry
  }
  c.batch.targets[0][1] = 7;
  c.batch.targets[0][4] = 12;
  c.batch.targets[0][6] = 30;
  c.batch.targets[1][3] = c.logits[1][3].argmax().item<int64_t>();
  c.batch.lengths = {8, 8, 8};
  return c;
}

}  // namespace

TEST_CASE("the Lm loss and metrics over target positions equal a loop over every position") {
  Config cfg = test::small_config("learned", false);
  Model model = test::small_model(cfg);
  ObjectiveCase c = make_case(model);

  double nll = 0, n = 0, right = 0;
  for (int64_t b = 0; b < 3; ++b)
    for (int64_t t = 0; t < 8; ++t) {
      const int64_t y = c.batch.targets[b][t].item<int64_t>();
      if (y == -100) continue;
      auto logp = torch::log_softmax(c.logits[b][t].to(torch::kDouble), 0);
      nll -= logp[y].item<double>();
      right += c.logits[b][t].argmax().item<int64_t>() == y;
      n += 1;
    }
  {
    torch::NoGradGuard guard;
    CHECK(batch_loss(model, c.batch).item<double>() == doctest::Approx(nll / n).epsilon(1e-5));
  }
  CHECK(loss_items(model, c.batch) == 4);

  MetricAccumulator mlm("mlm", nullptr, Split::Valid);
  mlm.add(model, c.batch);
  auto m = mlm.result();
  CHECK(m.at("loss") == doctest::Approx(nll / n).epsilon(1e-5));
  CHECK(m.at("accuracy") == doctest::Approx(right / n));

  // Sequence accuracy (synthetic tasks): row 1 is right at its one target, row 2 has none, and
  // row 0 is right only if every one of its three targets is the argmax.
  bool row0 = true;
  for (int64_t t : {1, 4, 6})
    row0 = row0 && c.logits[0][t].argmax().item<int64_t>() == c.batch.targets[0][t].item<int64_t>();
  MetricAccumulator copy("copy", nullptr, Split::Valid);
  copy.add(model, c.batch);
  CHECK(copy.result().at("seq_accuracy") == doctest::Approx((2.0 + row0) / 3.0));
}

namespace {

// The best span by a loop over every (s, e) inside [begin, end) with e - s < max_len.
std::pair<int64_t, int64_t> naive_best_span(const torch::Tensor& start, const torch::Tensor& end,
                                            TokenRange r, int64_t max_len) {
  std::pair<int64_t, int64_t> best{0, 0};
  double best_score = -1e300;
  for (int64_t s = r.begin; s < r.end; ++s)
    for (int64_t e = s; e < r.end && e - s < max_len; ++e) {
      const double score = start[s].item<double>() + end[e].item<double>();
      if (score > best_score) best_score = score, best = {s, e};
    }
  return best;
}

}  // namespace

TEST_CASE("span_qa decoding: the best span lies in the row's visible context") {
  // Row: [CLS] q q [SEP] c c c c [SEP] [PAD]; the context is at positions 4..7.
  auto start = torch::zeros({1, 10}), end = torch::zeros({1, 10});
  // The highest scores are on question tokens (1, 2), on [CLS] and on the final [SEP] (8): a
  // search over the whole row picked (1, 2) or (0, 8). Inside the context, (5, 6) is best.
  start[0][1] = 9, end[0][2] = 9, start[0][0] = 8, end[0][8] = 8, end[0][0] = 8;
  start[0][5] = 2, end[0][6] = 3, end[0][4] = 1;
  CHECK(best_spans(start, end, {{4, 8}}, 30) == std::vector<std::pair<int64_t, int64_t>>{{5, 6}});
  // An end before the start is never chosen: start 5 + end 4 is not a span.
  end[0][4] = 10;
  CHECK(best_spans(start, end, {{4, 8}}, 30)[0] == std::make_pair<int64_t, int64_t>(4, 4));
  // A row that shows no context token predicts (0, 0), the [CLS] position (no answer).
  CHECK(best_spans(start, end, {{4, 4}}, 30)[0] == std::make_pair<int64_t, int64_t>(0, 0));
}

TEST_CASE("span_qa decoding: task.max_answer_len caps the predicted span, as a loop over spans") {
  torch::manual_seed(3);
  const int64_t B = 4, T = 40;
  auto start = torch::randn({B, T}), end = torch::randn({B, T});
  // Long answers are favoured: a high start early and a high end late in every context.
  for (int64_t b = 0; b < B; ++b) start[b][6] += 10, end[b][35] += 10;
  const std::vector<TokenRange> ranges = {{5, 39}, {6, 36}, {10, 20}, {3, 4}};
  for (int64_t max_len : {1, 3, 30, 100}) {
    CAPTURE(max_len);
    const auto got = best_spans(start, end, ranges, max_len);
    for (int64_t b = 0; b < B; ++b) {
      CAPTURE(b);
      CHECK(got[b] == naive_best_span(start[b], end[b], ranges[b], max_len));
      CHECK(got[b].second - got[b].first < max_len);
    }
  }
  // With room for it, the long span 6..35 (30 tokens) wins in rows 0 and 1; 29 tokens is too few.
  CHECK(best_spans(start, end, ranges, 30)[1] == std::make_pair<int64_t, int64_t>(6, 35));
  CHECK(best_spans(start, end, ranges, 29)[1] != std::make_pair<int64_t, int64_t>(6, 35));
}

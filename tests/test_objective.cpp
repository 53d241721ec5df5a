// The Lm loss and metrics form logits only at positions with a target; they must equal the
// same quantities computed from the logits of every position, in a loop.
#include <doctest/doctest.h>

#include <cmath>

#include "core/train/objective.h"
#include "tests/small_model.h"

using namespace relpos;

namespace {

// Tokens (3,8) and targets with a few positions set: row 0 three targets, row 1 one target
// (the model's own prediction there), row 2 none.
struct Case {
  Batch batch;
  torch::Tensor logits;  // (B,T,V) of every position
};

Case make_case(Model& model) {
  torch::manual_seed(5);
  Case c;
  c.batch.tokens = torch::randint(5, 40, {3, 8}, torch::kLong);
  c.batch.targets = torch::full({3, 8}, -100, torch::kLong);
  {
    torch::NoGradGuard guard;
    c.logits = model->lm_logits(model->hidden(c.batch.tokens));
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
  Case c = make_case(model);

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

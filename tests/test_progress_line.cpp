// What `relpos train` shows while it runs: a progress line per logged step with the step, the
// loss, tokens/s and the ETA; the last validation value names the step it was measured at when
// it was not measured at the step shown.
#include <doctest/doctest.h>

#include <algorithm>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "tests/process_util.h"
#include "tests/tiny_run.h"

using namespace relpos;
using namespace relpos::test;

TEST_CASE("progress line: step, loss, tok/s, ETA, and the step of a validation value from an "
          "earlier evaluation") {
  TempFolder tmp("progress_line");
  auto sets = tiny_run(tmp.str("cache"), 4);
  sets.insert(sets.end(), {"train.log_every=1", "train.eval_every=2"});
  auto args = train_args(sets, tmp.str("run"));
  args.erase(std::find(args.begin(), args.end(), "--quiet"));
  auto [code, out] = run_relpos(args, tmp.str("log"));
  REQUIRE_MESSAGE(code == 0, out);
  std::vector<std::string> lines;
  std::istringstream in(out);
  for (std::string l; std::getline(in, l);)
    if (l.rfind("step ", 0) == 0) lines.push_back(l);
  REQUIRE(lines.size() == 4);
  const std::regex shape(R"(step \d/4  loss \d+\.\d{4}  .*\d+ tok/s  ETA .+)");
  for (const auto& l : lines) CHECK_MESSAGE(std::regex_match(l, shape), l);
  // Step 1: no evaluation yet. Step 2: measured now. Step 3: step 2's value, said so. Step 4: new.
  CHECK(lines[0].find("valid") == std::string::npos);
  CHECK(lines[1].find("valid accuracy") != std::string::npos);
  CHECK(lines[1].find("(at step") == std::string::npos);
  CHECK(lines[2].find("(at step 2)") != std::string::npos);
  CHECK(lines[3].find("(at step") == std::string::npos);
}

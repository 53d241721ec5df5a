// Live curves (docs/training.md, "Live curves"): the TensorBoard event files of a run and of its
// analysis, read by an independent program, tests/reference/read_tfevents.py, written from the
// TFRecord and protocol-buffer specifications (its own bitwise CRC-32C, its own wire-format
// decoder; it also applies TensorBoard's documented rule for restarts). Needs /usr/bin/python3
// (standard library only).
#include <doctest/doctest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "analysis/run_source.h"
#include "core/io/event_file.h"
#include "core/io/run_paths.h"
#include "core/train/tensorboard_log.h"
#include "core/util/process.h"
#include "core/util/sha256.h"
#include "core/util/text_util.h"
#include "tests/child_log.h"
#include "tests/helpers.h"
#include "tests/text_file.h"
#include "tests/tiny_run.h"

using namespace relpos;
using namespace relpos::test;
namespace fs = std::filesystem;
using Json = nlohmann::json;

namespace {

std::string tfevents_reader() {
  return std::string(RELPOS_TEST_DIR) + "/reference/read_tfevents.py";
}

ChildResult run_tfevents_reader(const std::vector<std::string>& args) {
  std::vector<std::string> all{tfevents_reader()};
  all.insert(all.end(), args.begin(), args.end());
  return call_program(kPython, all);
}

// The reader's JSON for `args`; fails the test when it reports a violation.
Json read_events(const std::vector<std::string>& args) {
  const ChildResult r = run_tfevents_reader(args);
  INFO(r.out);
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  return Json::parse(r.out);
}

// The TensorBoard series the documented tag rule makes of metrics.jsonl, written out here from
// docs/training.md: valid_X -> valid/X, train_X -> train/X, others -> train/<name>; a loss X as
// X_nats and X_bits = X_nats / ln 2; null values left out.
std::map<std::string, std::vector<std::pair<int64_t, double>>> expected_series(
    const std::string& dir) {
  std::map<std::string, std::vector<std::pair<int64_t, double>>> out;
  std::ifstream in(run_metrics_path(dir));
  for (std::string line; std::getline(in, line);) {
    const Json j = Json::parse(line);
    const int64_t step = j.at("step").get<int64_t>();
    for (const auto& [key, value] : j.items()) {
      if (key == "step" || value.is_null()) continue;
      const bool valid = key.rfind("valid_", 0) == 0, train = key.rfind("train_", 0) == 0;
      const std::string name = valid || train ? key.substr(6) : key;
      const std::string tag = std::string(valid ? "valid/" : "train/") + name;
      const double v = value.get<double>();
      if (name.rfind("loss", 0) == 0) {
        out[tag + "_nats"].emplace_back(step, v);
        out[tag + "_bits"].emplace_back(step, v / std::log(2.0));
      } else {
        out[tag].emplace_back(step, v);
      }
    }
  }
  return out;
}

// Every series of metrics.jsonl is in the reader's `scalars`, each step once, at float32
// precision (simple_value is a float); and nothing else is.
void check_scalars_match(const Json& scalars, const std::string& dir) {
  const auto want = expected_series(dir);
  REQUIRE(!want.empty());
  CHECK(scalars.size() == want.size());
  for (const auto& [tag, points] : want) {
    CAPTURE(tag);
    REQUIRE(scalars.contains(tag));
    const Json& got = scalars.at(tag);
    REQUIRE(got.size() == points.size());
    for (size_t k = 0; k < points.size(); ++k) {
      CHECK(got[k][0].get<int64_t>() == points[k].first);
      const double g = got[k][1].get<double>(), w = points[k].second;
      CHECK(std::abs(g - w) <= 1e-6 * std::max(1.0, std::abs(w)));
    }
  }
}

std::vector<std::string> tb_run_sets(const TempFolder& tmp, int64_t steps) {
  auto sets = tiny_run(tmp.str("cache"), steps);
  sets.push_back("train.eval_every=4");
  return sets;
}

}  // namespace

TEST_CASE("tfevents: CRC-32C gives the published check values, as the independent reader does") {
  CHECK(crc32c("123456789", 9) == 0xE3069283u);
  CHECK(crc32c("", 0) == 0u);
  // RFC 3720, appendix B.4: 32 bytes of zeros, of ones, ascending and descending.
  std::string zeros(32, '\0'), ones(32, '\xff'), up(32, '\0'), down(32, '\0');
  for (int i = 0; i < 32; ++i) up[i] = static_cast<char>(i), down[i] = static_cast<char>(31 - i);
  CHECK(crc32c(zeros.data(), 32) == 0x8A9136AAu);
  CHECK(crc32c(ones.data(), 32) == 0x62A8AB43u);
  CHECK(crc32c(up.data(), 32) == 0x46DD794Eu);
  CHECK(crc32c(down.data(), 32) == 0x113FDB5Cu);
  // The mask, from its formula.
  const uint32_t c = 0xE3069283u;
  CHECK(masked_crc32c("123456789", 9) == ((c >> 15) | (c << 17)) + 0xa282ead8u);
  const ChildResult r = run_tfevents_reader({"crc", "123456789"});
  CHECK(r.out == "e3069283\n");
}

TEST_CASE("tfevents: the independent reader decodes every field written, after every write; a "
          "changed byte fails its CRC") {
  TempFolder tmp("tfevents_format");
  // A PNG header is all png_image reads: an 8-byte signature and the IHDR chunk.
  std::string png("\x89PNG\r\n\x1a\n\0\0\0\x0dIHDR\0\0\0\x05\0\0\0\x03\x08\x06\0\0\0", 29);
  png += "rest";
  EventFileWriter w(tmp.str("tb"), "test");
  CHECK(contains(fs::path(w.path()).filename().string(), "events.out.tfevents."));
  const std::vector<std::string> events = {
      session_start_event(1700000000.25, 3),
      scalars_event(1700000001.5, 7, {{"train/loss_nats", 2.5f}, {"valid/ppl", 1.0e-3f}}),
      scalars_event(1700000002.0, int64_t{1} << 40, {{"train/lr", -0.75f}}),
      image_event(1700000003.0, 9, "figures/x", png_image(png, "x.png"))};
  for (size_t k = 0; k < events.size(); ++k) {
    w.write(events[k]);
    // Whole records on disk after each write: the reader sees every event so far.
    const Json f = read_events({"events", w.path()});
    CHECK(f[0]["events"].size() == k + 2);
    CHECK(f[0]["note"].is_null());
  }
  const Json e = read_events({"events", w.path()})[0]["events"];
  CHECK(e[0]["file_version"] == "brain.Event:2");
  CHECK(e[1]["session_status"] == 1);
  CHECK(e[1]["step"] == 3);
  CHECK(e[1]["wall_time"].get<double>() == 1700000000.25);
  CHECK(e[2]["step"] == 7);
  CHECK(e[2]["summary"][0]["tag"] == "train/loss_nats");
  CHECK(e[2]["summary"][0]["simple_value"].get<double>() == 2.5);
  CHECK(e[2]["summary"][1]["tag"] == "valid/ppl");
  CHECK(e[2]["summary"][1]["simple_value"].get<double>() == static_cast<double>(1.0e-3f));
  CHECK(e[3]["step"].get<int64_t>() == int64_t{1} << 40);
  CHECK(e[3]["summary"][0]["simple_value"].get<double>() == -0.75);
  const Json img = e[4]["summary"][0]["image"];
  CHECK(e[4]["summary"][0]["tag"] == "figures/x");
  CHECK(img["width"] == 5);
  CHECK(img["height"] == 3);
  CHECK(img["colorspace"] == 4);  // PNG colour type 6: RGBA
  CHECK(img["png_bytes"] == png.size());
  CHECK(img["png_sha256"] == sha256_hex(png));

  // A second file in the folder, written in the same second, sorts after the first.
  EventFileWriter second(tmp.str("tb"), "test");
  CHECK(fs::path(second.path()).filename() > fs::path(w.path()).filename());
  CHECK(event_files(tmp.str("tb")) == std::vector<std::string>{w.path(), second.path()});

  // One changed byte in a record's data, then in a length: both CRCs are checked.
  const std::string good = read_file(w.path(), "event file");
  for (const auto& [at, what] : {std::pair<size_t, const char*>{good.size() - 10, "of the data"},
                                 {0, "of the length"}}) {
    std::string bad = good;
    bad[at] = static_cast<char>(bad[at] ^ 0x01);
    std::ofstream(tmp.str("bad.tfevents"), std::ios::binary) << bad;
    const ChildResult r = run_tfevents_reader({"events", tmp.str("bad.tfevents")});
    CHECK(r.exit_code == 1);
    CHECK_MESSAGE(contains(r.out, std::string("CRC MISMATCH ") + what), r.out);
  }
  CHECK_THROWS_WITH_AS(png_image("GIF89a, not a PNG at all", "fig.gif"),
                       "fig.gif: not a PNG file (no PNG signature and IHDR header)", DataError);
}

TEST_CASE("tfevents: a tiny run's event file holds every scalar of metrics.jsonl at its step, "
          "losses in nats and bits") {
  TempFolder tmp("tfevents_run");
  const std::string dir = tmp.str("run");
  REQUIRE(train_here(tb_run_sets(tmp, 8), dir).finished);
  const auto files = event_files(dir);
  REQUIRE(files.size() == 1);
  const Json run = read_events({"run", dir});
  CHECK(run["starts"] == Json::parse("[[\"" + fs::path(files[0]).filename().string() + "\", 0]]"));
  check_scalars_match(run["scalars"], dir);
  // The tags the documentation names are among them.
  for (const char* tag : {"train/loss_nats", "train/loss_bits", "valid/loss_nats",
                          "valid/loss_bits", "valid/accuracy", "train/lr", "train/tokens_per_s"})
    CHECK_MESSAGE(run["scalars"].contains(tag), tag);

  // --overwrite starts the folder's curves again.
  TrainOptions o;
  o.out_dir = dir;
  o.quiet = true;
  o.overwrite = true;
  fs::create_directories(run_analysis_events_dir(dir));
  std::ofstream(run_analysis_events_dir(dir) + "/events.out.tfevents.1.old");
  REQUIRE(train(load_config({config_path("base.yaml")}, tb_run_sets(tmp, 3)), o).finished);
  // The new file may carry the old one's name (same process, same second: a fast machine);
  // what matters is that only the new run's 3 steps are in the folder, not the old run's 8.
  REQUIRE(event_files(dir).size() == 1);
  CHECK(event_files(run_analysis_events_dir(dir)).empty());
  const Json again = read_events({"run", dir})["scalars"];
  REQUIRE(again.contains("train/loss_nats"));
  CHECK(again["train/loss_nats"].back()[0].get<int64_t>() == 3);
  check_scalars_match(again, dir);
}

TEST_CASE("tfevents: a run resumed after a crash past its checkpoint adds a file starting at the "
          "checkpoint's step + 1; read as TensorBoard reads, each step is there once") {
  TempFolder tmp("tfevents_resume");
  const std::string dir = tmp.str("run");
  REQUIRE_FALSE(train_here(tb_run_sets(tmp, 16), dir, 5).finished);  // checkpoint at step 5
  fs::copy_file(run_checkpoint_path(dir), tmp.str("checkpoint5.pt"));
  TrainOptions o;
  o.out_dir = dir;
  o.quiet = true;
  o.resume = true;
  o.stop_after = 9;
  REQUIRE_FALSE(train(load_run_config(dir), o).finished);
  // As if the process had died after logging step 9, its last checkpoint the one of step 5.
  fs::copy_file(tmp.str("checkpoint5.pt"), run_checkpoint_path(dir),
                fs::copy_options::overwrite_existing);
  o.stop_after = 0;
  REQUIRE(train(load_run_config(dir), o).finished);

  const auto files = event_files(dir);
  REQUIRE(files.size() == 3);
  // The second file holds steps 6..9, which the third file's START at 6 withdraws.
  std::vector<int64_t> second_steps;
  const Json second = read_events({"events", files[1]})[0]["events"];
  for (const auto& e : second)
    if (e.contains("summary")) second_steps.push_back(e["step"].get<int64_t>());
  CHECK(second_steps == std::vector<int64_t>{6, 7, 8, 9});
  const Json run = read_events({"run", dir});
  const auto name = [&](size_t k) { return fs::path(files[k]).filename().string(); };
  CHECK(run["starts"] == Json::array({Json::array({name(0), 0}), Json::array({name(1), 6}),
                                      Json::array({name(2), 6})}));
  CHECK(logged(dir, "train_loss").size() == 16);
  check_scalars_match(run["scalars"], dir);
}

TEST_CASE("tfevents: relpos analyze writes each snapshot's invariance and its figures into "
          "DIR/analysis/, replacing an earlier analysis") {
  TempFolder tmp("tfevents_analyze");
  const std::string dir = tmp.str("run");
  REQUIRE(train_here(tb_run_sets(tmp, 8), dir).finished);
  analysis::AnalyzeOptions ao;
  ao.figures = false;
  analysis::analyze_folder(dir, ao, {}, nullptr);  // an earlier analysis, replaced below
  ao.figures = true;
  const auto ex = analysis::analyze_folder(dir, ao, {}, nullptr);
  REQUIRE(ex.runs.size() == 1);
  const analysis::RunResult& r = ex.runs[0];
  REQUIRE(event_files(run_analysis_events_dir(dir)).size() == 1);
  const Json run = read_events({"run", run_analysis_events_dir(dir)});
  REQUIRE(!r.invariance.empty());
  CHECK(run["scalars"].size() == r.invariance.size());
  for (const auto& [quantity, values] : r.invariance) {
    CAPTURE(quantity);
    const Json& got = run["scalars"]["invariance/" + quantity];
    REQUIRE(got.size() == r.steps.size());
    for (size_t k = 0; k < r.steps.size(); ++k) {
      CHECK(got[k][0].get<int64_t>() == r.steps[k]);
      CHECK(got[k][1].get<double>() == static_cast<double>(static_cast<float>(values[k])));
    }
  }
  // Every figure, as drawn, at the last snapshot's step; its size from the PNG itself.
  REQUIRE(!r.figures.empty());
  CHECK(run["images"].size() == r.figures.size());
  for (const auto& f : r.figures) {
    CAPTURE(f.png);
    const Json& got = run["images"]["figures/" + fs::path(f.png).stem().string()];
    REQUIRE(got.size() == 1);
    CHECK(got[0][0].get<int64_t>() == r.steps.back());
    CHECK(got[0][1] == got[0][6]);  // height == the PNG's
    CHECK(got[0][2] == got[0][7]);  // width == the PNG's
    CHECK(got[0][5] == sha256_file(f.png));
  }
}

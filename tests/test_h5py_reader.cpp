// The run file read by an independent program: tests/reference/read_run_file.py, written with h5py
// from docs/hdf5-schema.md alone, checks every path, dtype, shape and axis name of a run.h5. Here
// it reads the files `relpos train` writes for every variant, and must reject a file that breaks
// the schema (so this test can fail). Needs /usr/bin/python3 with h5py (Debian's python3-h5py,
// which scripts/setup.sh installs).
#include <doctest/doctest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "core/io/run_file.h"
#include "core/util/process.h"
#include "tests/child_log.h"
#include "tests/helpers.h"
#include "tests/run_file_sample.h"
#include "tests/tiny_run.h"

using namespace relpos;
using namespace relpos::test;
namespace fs = std::filesystem;

namespace {

std::string reader_script() { return std::string(RELPOS_TEST_DIR) + "/reference/read_run_file.py"; }

// h5py importable by the system Python; the failure says how to get it.
bool have_h5py() {
  const ChildResult r = call_program(kPython, {"-c", "import h5py"});
  if (r.exit_code != 0)
    FAIL_CHECK(kPython << " cannot import h5py (install python3-h5py: scripts/setup.sh does): "
                       << r.err);
  return r.exit_code == 0;
}

ChildResult check_file(const std::string& path) {
  return call_program(kPython, {reader_script(), "check", path});
}

}  // namespace

TEST_CASE("run file: the h5py reader accepts the run.h5 that relpos train writes, for every "
          "variant") {
  if (!have_h5py()) return;
  TempFolder tmp("h5py_variants");
  // Every exporter and score path: tables, kernels, buckets, per-layer matrices, rotary.
  const std::vector<std::string> variants = {
      "none",     "learned+tisa", "sinusoidal", "shaw",    "transformer_xl", "huang_m1",
      "huang_m2", "huang_m3",     "huang_m4",   "t5_bias", "alibi",          "rope",
      "deberta",  "kerple_log",   "kerple_power", "fire",  "xpos",           "cope"};
  for (const auto& v : variants) {
    CAPTURE(v);
    const std::string out = tmp.str(v);
    auto sets = tiny_run(tmp.str("cache"), 10);
    sets.push_back("position.type=" + v);
    const ChildResult t = call_relpos(train_args(sets, out));
    INFO(t.err);
    REQUIRE(t.exit_code == 0);
    const ChildResult c = check_file(out + "/run.h5");
    INFO(c.out);
    INFO(c.err);
    CHECK(c.exit_code == 0);
    CHECK(c.out.find("position_types '" + v + "'") != std::string::npos);
    CHECK(c.out.find("\nOK") != std::string::npos);
  }
}

TEST_CASE("run file: the h5py reader rejects a position tensor of the wrong dtype, and accepts "
          "the round-trip sample") {
  if (!have_h5py()) return;
  TempFolder dir("h5py_reject");
  // The sample of tests/test_run_file.cpp: every documented path, all schema-conformant.
  const std::string good = dir.str("good.h5");
  {
    auto w = RunFileWriter::create(good, sample_attributes());
    write_sample_run(*w);
    w->close();
  }
  const ChildResult ok = check_file(good);
  INFO(ok.out);
  CHECK(ok.exit_code == 0);
  // The schema says every /position tensor is float32: int64 bucket indices are a violation.
  const std::string bad = dir.str("bad.h5");
  {
    auto w = RunFileWriter::create(bad, sample_attributes());
    w->write_probe(sample_tokens(), sample_key_mask());
    std::map<std::string, std::vector<NamedTensor>> position;
    position["t5_bias"] = {{"buckets", torch::arange(11, torch::kInt64) % 4, {"distance"}}};
    w->write_snapshot(0, sample_attention(0), {}, position);
    w->close();
  }
  const ChildResult r = check_file(bad);
  INFO(r.out);
  CHECK(r.exit_code == 1);
  CHECK(r.out.find("VIOLATION /snapshots/step_0/position/t5_bias/buckets: dtype int64") !=
        std::string::npos);
}

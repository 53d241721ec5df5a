// The run file under failure: newer schema versions, missing/non-HDF5/truncated/corrupt files,
// reading while the writer still has the file open, and after the writer was killed (SIGKILL).
#include <H5Cpp.h>
#include <doctest/doctest.h>

#include <chrono>
#include <thread>

#include "core/io/run_file.h"
#include "core/util/errors.h"
#include "tests/io_test_util.h"
#include "tests/run_file_sample.h"

using namespace relpos;
using namespace relpos::test;

namespace {

void write_sample_file(const std::string& path) {
  auto w = RunFileWriter::create(path, sample_attributes());
  write_sample_run(*w);
  w->close();
}

// What a reader sees of the sample content once snapshots 0 and 10 were flushed.
void check_flushed_sample(const std::string& path) {
  auto r = RunFileReader::open(path);
  CHECK(r->snapshot_steps() == std::vector<int64_t>{0, 10});
  CHECK(torch::equal(r->dataset("/snapshots/step_10/attention").value, sample_attention(10)));
  CHECK(torch::equal(r->dataset("/snapshots/step_0/position/tisa/a").value, sample_tisa_a(0)));
  CHECK(torch::equal(r->dataset("/probe/tokens").value, sample_tokens()));
  CHECK(r->metric("loss").first == std::vector<int64_t>{0, 10, 20});
  CHECK(torch::equal(r->dataset("/weights/lm_head.bias").value, sample_bias()));
  CHECK(r->root_attribute("config") == sample_attributes().config_yaml);
}

// Every dataset of the file, read; throws what the reader throws.
int64_t read_everything(const RunFileReader& r, const std::string& group = "/") {
  int64_t n = 0;
  for (const auto& name : r.children(group)) {
    const std::string path = (group == "/" ? "/" : group + "/") + name;
    try {
      r.dataset(path);
      ++n;
    } catch (const SchemaError& e) {
      if (std::string(e.what()).find("has no dataset") == std::string::npos) throw;
      n += read_everything(r, path);  // a group
    }
  }
  return n;
}

}  // namespace

TEST_CASE("run file: a newer schema version is refused, naming the file and both versions") {
  ScratchDir dir("runfile_newer");
  const std::string path = dir.file("future.h5");
  write_sample_file(path);
  {
    H5::H5File f(path, H5F_ACC_RDWR);
    H5::Group root = f.openGroup("/");
    const int64_t v = 2;
    root.openAttribute("schema_version").write(H5::PredType::NATIVE_INT64, &v);
  }
  const std::string expected_start = "run file '" + path + "' has schema version 2, newer than";
  CHECK_THROWS_WITH_AS(RunFileReader::open(path), doctest::Contains(expected_start.c_str()),
                       SchemaError);
  CHECK_THROWS_WITH_AS(RunFileReader::open(path),
                       doctest::Contains("newer than the version this relpos reads (1)"),
                       SchemaError);
  CHECK_THROWS_AS(RunFileWriter::open_append(path), SchemaError);
  CHECK_THROWS_AS(describe_run_file(path), SchemaError);
}

TEST_CASE("run file: missing, non-HDF5, foreign HDF5, truncated and corrupt files give "
          "SchemaError naming the file") {
  ScratchDir dir("runfile_corrupt");
  CHECK_THROWS_WITH_AS(RunFileReader::open(dir.file("absent.h5")),
                       doctest::Contains("does not exist"), SchemaError);
  CHECK_THROWS_AS(RunFileWriter::open_append(dir.file("absent.h5")), SchemaError);

  const std::string text = dir.file("notes.h5");
  write_bytes(text, std::vector<char>(1000, 'x'));
  CHECK_THROWS_WITH_AS(RunFileReader::open(text),
                       doctest::Contains(("'" + text + "' cannot be opened as an HDF5 file").c_str()),
                       SchemaError);
  CHECK_THROWS_WITH_AS(RunFileReader::open(text), doctest::Contains("signature"), SchemaError);

  const std::string foreign = dir.file("foreign.h5");
  { H5::H5File f(foreign, H5F_ACC_TRUNC); }
  CHECK_THROWS_WITH_AS(RunFileReader::open(foreign),
                       doctest::Contains("is not a relpos run file: its root has no "
                                         "'schema_version' attribute"),
                       SchemaError);

  const std::string good = dir.file("good.h5");
  write_sample_file(good);
  const std::vector<char> bytes = read_bytes(good);
  REQUIRE(bytes.size() > 4000);
  for (size_t cut : {size_t{0}, size_t{7}, size_t{96}, size_t{1000}, bytes.size() / 2,
                     bytes.size() - 100, bytes.size() - 1}) {
    CAPTURE(cut);
    const std::string truncated = dir.file("truncated.h5");
    write_bytes(truncated, std::vector<char>(bytes.begin(), bytes.begin() + cut));
    CHECK_THROWS_WITH_AS(RunFileReader::open(truncated), doctest::Contains(truncated.c_str()),
                         SchemaError);
    CHECK_THROWS_AS(describe_run_file(truncated), SchemaError);
  }
  {
    // HDF5's own words for a short file.
    const std::string truncated = dir.file("truncated.h5");
    write_bytes(truncated, std::vector<char>(bytes.begin(), bytes.begin() + bytes.size() / 2));
    CHECK_THROWS_WITH_AS(RunFileReader::open(truncated), doctest::Contains("truncated file"),
                         SchemaError);
  }
  // Garbage over each quarter of the file after the superblock: whatever HDF5 notices is a
  // SchemaError naming the file; what it does not notice reads as data.
  for (int quarter = 0; quarter < 4; ++quarter) {
    CAPTURE(quarter);
    std::vector<char> damaged = bytes;
    const size_t start = 96 + quarter * (bytes.size() - 96) / 4;
    for (size_t i = start; i < std::min(bytes.size(), start + 512); ++i) damaged[i] = char(0xA5);
    const std::string corrupt = dir.file("corrupt.h5");
    write_bytes(corrupt, damaged);
    try {
      auto r = RunFileReader::open(corrupt);
      read_everything(*r);
      describe_run_file(corrupt);
    } catch (const SchemaError& e) {
      CHECK(std::string(e.what()).find(corrupt) != std::string::npos);
    }
  }
}

TEST_CASE("run file: the bytes on disk are a readable file after every flushing write") {
  ScratchDir dir("runfile_open");
  const std::string path = dir.file("run.h5");
  auto w = RunFileWriter::create(path, sample_attributes());
  write_sample_run(*w);
  // The writer is still open: copy what is on disk (not what the HDF5 library caches).
  const std::string copy = dir.file("copy.h5");
  write_bytes(copy, read_bytes(path));
  check_flushed_sample(copy);
  CHECK(read_everything(*RunFileReader::open(copy)) == 22);
  w->close();
}

TEST_CASE("run file: readable while the writer runs and after it is killed with SIGKILL") {
  ScratchDir dir("runfile_kill");
  const std::string path = dir.file("run.h5");
  const bool killed = run_and_kill(
      [&](const std::function<void()>&) {
        auto w = RunFileWriter::create(path, sample_attributes());
        write_sample_run(*w);
        w.release();  // never closed: the child dies with the file open
      },
      [&] { check_flushed_sample(path); });  // another process reads while the writer lives
  CHECK(killed);
  check_flushed_sample(path);

  // --resume appends to the killed run's file.
  auto w = RunFileWriter::open_append(path);
  w->append_metric("loss", 30, 1.5);
  write_sample_snapshot(*w, 30);
  w->close();
  auto r = RunFileReader::open(path);
  CHECK(r->snapshot_steps() == std::vector<int64_t>{0, 10, 30});
  CHECK(r->metric("loss").first == std::vector<int64_t>{0, 10, 20, 30});
  CHECK(torch::equal(r->dataset("/snapshots/step_30/attention").value, sample_attention(30)));
}

TEST_CASE("run file: killed in the middle of writing snapshots, every earlier snapshot reads") {
  ScratchDir dir("runfile_midkill");
  for (int delay_ms : {3, 11, 29}) {
    CAPTURE(delay_ms);
    const std::string path = dir.file("run.h5");
    const bool killed = run_and_kill(
        [&](const std::function<void()>& notify) {
          auto w = RunFileWriter::create(path, sample_attributes());
          w->write_probe(sample_tokens(), {});
          for (int64_t step = 0;; ++step) {
            write_sample_snapshot(*w, step);
            w->append_metric("loss", step, static_cast<double>(step));
            if (step == 1) notify();
          }
        },
        [&] { std::this_thread::sleep_for(std::chrono::milliseconds(delay_ms)); });
    CHECK(killed);
    auto r = RunFileReader::open(path);
    const auto steps = r->snapshot_steps();
    REQUIRE(steps.size() >= 2);
    // The last snapshot may be the one being written; all before it were flushed.
    for (size_t i = 0; i + 1 < steps.size(); ++i) {
      CAPTURE(steps[i]);
      CHECK(steps[i] == static_cast<int64_t>(i));
      CHECK(torch::equal(r->dataset("/snapshots/step_" + std::to_string(i) + "/attention").value,
                         sample_attention(steps[i])));
      CHECK(torch::equal(r->dataset("/snapshots/step_" + std::to_string(i) + "/position/tisa/a")
                             .value,
                         sample_tisa_a(steps[i])));
    }
    const auto loss = r->metric("loss").first;
    CHECK(loss.size() + 1 >= steps.size());
  }
}

// The run file under failure: newer schema versions, missing/non-HDF5/truncated/corrupt files,
// reading while the writer still has the file open, and after the writer was killed (SIGKILL).
#include <H5Cpp.h>
#include <doctest/doctest.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
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

TEST_CASE(
    "run file: missing, non-HDF5, foreign HDF5, truncated and corrupt files give "
    "SchemaError naming the file") {
  ScratchDir dir("runfile_corrupt");
  CHECK_THROWS_WITH_AS(RunFileReader::open(dir.file("absent.h5")),
                       doctest::Contains("does not exist"), SchemaError);
  CHECK_THROWS_AS(RunFileWriter::open_append(dir.file("absent.h5")), SchemaError);

  const std::string text = dir.file("notes.h5");
  write_bytes(text, std::vector<char>(1000, 'x'));
  CHECK_THROWS_WITH_AS(
      RunFileReader::open(text),
      doctest::Contains(("'" + text + "' cannot be opened as an HDF5 file").c_str()), SchemaError);
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

TEST_CASE("run file: killed at any moment of writing, the run file reads complete snapshots") {
  // The child writes back to back — snapshots, metrics, and weights and an eval table that
  // replace their predecessors — so every kill lands inside some write or flush; the kill
  // moments sweep 0..30 ms after the second round.
  ScratchDir dir("runfile_midkill");
  for (int delay_us = 0; delay_us <= 30000; delay_us += 2000) {
    CAPTURE(delay_us);
    const std::string path = dir.file("run.h5");
    const bool killed = run_and_kill(
        [&](const std::function<void()>& notify) {
          auto w = RunFileWriter::create(path, sample_attributes());
          for (int64_t step = 0;; ++step) {
            write_sample_snapshot(*w, step);
            w->append_metric("loss", step, static_cast<double>(step));
            const double v = static_cast<double>(step);
            w->write_weights({{"w", torch::full({32, 32}, v), {}}}, step);
            w->write_eval("table", {{"x", torch::full({5}, v, torch::kFloat64), {}}},
                          {{"step", std::to_string(step)}});
            if (step == 1) notify();
          }
        },
        [&] { std::this_thread::sleep_for(std::chrono::microseconds(delay_us)); });
    CHECK(killed);
    // A few kills in a hundred tear run.h5 and the reader goes to the shadow (tested on purpose in
    // the next test case).
    CHECK_NOTHROW(describe_run_file(path));
    {
      auto r = RunFileReader::open(path);
      const auto steps = r->snapshot_steps();
      REQUIRE(steps.size() >= 2);
      for (size_t i = 0; i < steps.size(); ++i) {
        CAPTURE(i);
        REQUIRE(steps[i] == static_cast<int64_t>(i));  // no gap, no incomplete snapshot listed
        const std::string g = "/snapshots/step_" + std::to_string(i);
        CHECK(torch::equal(r->dataset(g + "/attention").value, sample_attention(steps[i])));
        CHECK(torch::equal(r->dataset(g + "/position/tisa/a").value, sample_tisa_a(steps[i])));
        CHECK(torch::equal(r->dataset(g + "/position_scores/tisa").value,
                           sample_tisa_scores(steps[i])));
      }
      const auto loss = r->metric("loss");
      CHECK(loss.first.size() + 1 >= steps.size());
      for (size_t i = 0; i < loss.first.size(); ++i)
        CHECK(loss.second[i] == static_cast<double>(i));
      // Replaced objects hold their own values, never a mix of two writes. A group without its
      // step attribute was being written when the child died.
      if (r->exists("/weights/w") && !r->children("/weights").empty()) {
        try {
          const double ws = std::stod(r->attribute("/weights", "step"));
          CHECK(torch::equal(r->dataset("/weights/w").value, torch::full({32, 32}, ws)));
        } catch (const SchemaError&) {
        }
      }
      if (r->exists("/eval/table/x")) {
        try {
          const double es = std::stod(r->attribute("/eval/table", "step"));
          CHECK(torch::equal(r->dataset("/eval/table/x").value,
                             torch::full({5}, es, torch::kFloat64)));
        } catch (const SchemaError&) {
        }
      }
    }  // the reader closes: HDF5 refuses to open a file read-write that is open read-only
    // --resume repairs run.h5 and goes on.
    auto w = RunFileWriter::open_append(path);
    write_sample_snapshot(*w, 1000);
    w->close();
    CHECK(RunFileReader::open(path)->snapshot_steps().back() == 1000);
    CHECK(describe_run_file(path).find("is damaged") == std::string::npos);
  }
}

TEST_CASE("run file: a damaged run.h5 is read through its shadow and repaired by open_append") {
  ScratchDir dir("runfile_shadow");
  const std::string path = dir.file("run.h5");
  const std::string shadow = path + ".shadow";
  // A writer killed with both files open (in another process: HDF5 would share files this
  // process still has open instead of reading the disk).
  CHECK(run_and_kill([&](const std::function<void()>&) {
    auto w = RunFileWriter::create(path, sample_attributes());
    write_sample_run(*w);
    w.release();
  }));
  REQUIRE(std::filesystem::exists(shadow));
  const std::vector<char> good = read_bytes(path);
  const std::vector<char> good_shadow = read_bytes(shadow);

  // run.h5 torn, the shadow intact: readers see the shadow.
  write_bytes(path, std::vector<char>(good.begin(), good.begin() + good.size() / 2));
  check_flushed_sample(path);
  const std::string text = describe_run_file(path);
  CHECK(text.find("note: '" + path + "' is damaged") != std::string::npos);
  CHECK(text.find(shadow + ": relpos run file") == 0);

  // open_append restores run.h5 from the shadow.
  auto a = RunFileWriter::open_append(path);
  a->append_metric("loss", 30, 0.5);
  a->close();
  CHECK_FALSE(std::filesystem::exists(shadow));  // a clean close removes it
  CHECK(describe_run_file(path).find("is damaged") == std::string::npos);
  CHECK(RunFileReader::open(path)->metric("loss").first == std::vector<int64_t>{0, 10, 20, 30});

  // Both damaged: the error names run.h5.
  write_bytes(shadow, std::vector<char>(good_shadow.begin(), good_shadow.begin() + 500));
  write_bytes(path, std::vector<char>(good.begin(), good.begin() + 500));
  CHECK_THROWS_WITH_AS(RunFileReader::open(path), doctest::Contains(path.c_str()), SchemaError);
  CHECK_THROWS_WITH_AS(RunFileWriter::open_append(path), doctest::Contains("both damaged"),
                       SchemaError);
}

TEST_CASE("run file: while run.h5.writing exists the shadow is read, whatever run.h5 holds / "
          "open_append restores run.h5 from it") {
  // HDF5 does not always see a torn file: a variable-length string whose heap was half written
  // when the writer died made the library loop forever (found by the kill test above). The
  // marker, not a check of run.h5, says which copy is whole.
  ScratchDir dir("runfile_marker");
  const std::string path = dir.file("run.h5");
  const std::string shadow = path + ".shadow";
  const std::string marker = path + ".writing";
  CHECK(run_and_kill([&](const std::function<void()>&) {
    auto w = RunFileWriter::create(path, sample_attributes());
    write_sample_run(*w);
    w.release();
  }));
  CHECK_FALSE(std::filesystem::exists(marker));  // every write finished
  // run.h5 replaced by a readable file with one snapshot more: what a write the writer did not
  // finish could look like to HDF5.
  {
    const std::string other = dir.file("other.h5");
    auto w = RunFileWriter::create(other, sample_attributes());
    write_sample_run(*w);
    write_sample_snapshot(*w, 20);
    w->close();
    std::filesystem::copy_file(other, path, std::filesystem::copy_options::overwrite_existing);
  }
  CHECK(RunFileReader::open(path)->snapshot_steps() == std::vector<int64_t>{0, 10, 20});
  write_bytes(marker, {'x'});
  check_flushed_sample(path);  // the shadow: snapshots 0 and 10
  CHECK(describe_run_file(path).find(shadow + ": relpos run file") == 0);

  auto a = RunFileWriter::open_append(path);
  CHECK_FALSE(std::filesystem::exists(marker));
  a->append_metric("loss", 30, 0.5);
  a->close();
  CHECK_FALSE(std::filesystem::exists(shadow));
  auto r = RunFileReader::open(path);
  CHECK(r->snapshot_steps() == std::vector<int64_t>{0, 10});
  CHECK(r->metric("loss").first == std::vector<int64_t>{0, 10, 20, 30});
}

TEST_CASE("run file: incomplete writes are not shown as data") {
  ScratchDir dir("runfile_incomplete");
  const std::string path = dir.file("run.h5");
  write_sample_file(path);
  {
    // What a crash in the middle of a write can leave: a snapshot group without its step
    // attribute (written last), a metric with one more step than values.
    H5::H5File f(path, H5F_ACC_RDWR);
    f.openGroup("/snapshots").createGroup("step_30");
    H5::DataSet step = f.openDataSet("/metrics/loss/step");
    const hsize_t n[1] = {4};
    step.extend(n);
  }
  auto r = RunFileReader::open(path);
  CHECK(r->snapshot_steps() == std::vector<int64_t>{0, 10});
  CHECK(r->metric("loss").first == std::vector<int64_t>{0, 10, 20});
  CHECK(r->metric("loss").second == std::vector<double>{2.5, 2.0, 1.75});
}

TEST_CASE("run file: a damaged global heap is an error, not a crash of the reader") {
  // HDF5 keeps variable-length strings (the config and other string attributes) in a global
  // heap collection ("GCOL") and trusts the object sizes written there: a huge size makes it
  // copy far out of bounds. The first read of a file runs in a child process, so this test
  // process survives to see the error (without that, it would die here with SIGSEGV).
  ScratchDir dir("runfile_heap");
  const std::string path = dir.file("run.h5");
  write_sample_file(path);
  std::vector<char> bytes = read_bytes(path);
  const std::string magic = "GCOL";
  const auto at = std::search(bytes.begin(), bytes.end(), magic.begin(), magic.end());
  REQUIRE(at != bytes.end());
  // Collection header: "GCOL", version, 3 reserved, 8-byte collection size (16 bytes); then the
  // first object: 2-byte index, 2-byte reference count, 4 reserved, 8-byte little-endian size.
  const size_t size_field = static_cast<size_t>(at - bytes.begin()) + 16 + 8;
  REQUIRE(size_field + 8 <= bytes.size());
  bytes[size_field + 5] = static_cast<char>(0xc4);  // size += about 2^40 + ...: far out of bounds
  bytes[size_field + 6] = static_cast<char>(0x68);
  write_bytes(path, bytes);

  CHECK_THROWS_WITH_AS(describe_run_file(path),
                       doctest::Contains(("run file '" + path + "' is damaged").c_str()),
                       SchemaError);
  CHECK_THROWS_AS(RunFileReader::open(path), SchemaError);
  // With an intact shadow beside it, readers take the shadow as for any damaged run.h5.
  write_sample_file(path + ".shadow");
  CHECK(describe_run_file(path).find("note: '" + path + "' is damaged") != std::string::npos);
}

TEST_CASE("run file: a damaged tensor value is a read error naming the dataset, not a wrong number") {
  // Every dataset is stored with a Fletcher-32 checksum per chunk: changing one byte of the
  // stored values of /weights/<query weight> must make reading it fail.
  ScratchDir dir("runfile_values");
  const std::string path = dir.file("run.h5");
  write_sample_file(path);
  std::vector<char> bytes = read_bytes(path);
  const torch::Tensor weight = sample_query_weight().contiguous();
  const char* raw = static_cast<const char*>(weight.data_ptr());
  const std::string pattern(raw, raw + weight.numel() * sizeof(float));
  const auto at = std::search(bytes.begin(), bytes.end(), pattern.begin(), pattern.end());
  REQUIRE(at != bytes.end());
  REQUIRE(std::search(at + 1, bytes.end(), pattern.begin(), pattern.end()) == bytes.end());
  at[4 * 5 + 2] ^= 0x10;  // element 5 (0.625) becomes a different finite float
  write_bytes(path, bytes);

  auto r = RunFileReader::open(path);
  const std::string query = std::string("/weights/") + kQueryWeight;
  CHECK_THROWS_WITH_AS(r->dataset(query), doctest::Contains(("cannot read dataset '" + query).c_str()),
                       SchemaError);
  CHECK_THROWS_WITH_AS(r->dataset(query), doctest::Contains("Fletcher32"), SchemaError);
  // Everything else still reads.
  CHECK(torch::equal(r->dataset("/weights/lm_head.bias").value, sample_bias()));
  CHECK(torch::equal(r->dataset("/snapshots/step_10/attention").value, sample_attention(10)));
}

// The HDF5 run file: every documented path, dtype, shape, axis names and value written by
// RunFileWriter and read back by RunFileReader, attribute types checked with the HDF5 API itself,
// metric append/replace/truncate, replacement of snapshots/weights/eval, and `inspect`.
#include <H5Cpp.h>
#include <doctest/doctest.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>

#include "core/io/run_file.h"
#include "core/io/schema.h"
#include "core/util/errors.h"
#include "tests/child_log.h"
#include "tests/helpers.h"
#include "tests/io_test_util.h"
#include "tests/run_file_sample.h"

using namespace relpos;
using namespace relpos::test;
namespace sc = relpos::schema;

namespace {

void check_tensor(const RunFileReader& r, const std::string& path, const torch::Tensor& expected,
                  torch::ScalarType dtype, const std::vector<std::string>& dims) {
  CAPTURE(path);
  const NamedTensor t = r.dataset(path);
  CHECK(t.name == path);
  CHECK(std::string(c10::toString(t.value.scalar_type())) == c10::toString(dtype));
  CHECK(t.value.sizes() == expected.sizes());
  CHECK(t.dims == dims);
  CHECK(torch::equal(t.value, expected.to(dtype)));
}

const std::vector<std::string> kAttentionDims = {"layer", "head", "query", "key"};

std::string run_command(const std::string& cmd, int* status) {
  std::string out;
  FILE* p = ::popen((cmd + " 2>&1").c_str(), "r");
  REQUIRE(p != nullptr);
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
  const int st = ::pclose(p);
  test::ChildLog::instance().note({cmd}, test::wait_status_text(st), out);
  *status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  return out;
}

}  // namespace

TEST_CASE("run file: every documented path round-trips with dtype, shape, dims and value") {
  ScratchDir dir("runfile_paths");
  const std::string path = dir.file("run.h5");
  {
    auto w = RunFileWriter::create(path, sample_attributes());
    write_sample_run(*w);
    w->close();
  }
  CHECK_FALSE(std::filesystem::exists(path + ".shadow"));  // removed by a clean close
  // tests/test_h5py_reader.cpp has tests/reference/read_run_file.py check this sample too.
  if (const char* keep = std::getenv("RELPOS_SAMPLE_RUN_FILE"))
    std::filesystem::copy_file(path, keep, std::filesystem::copy_options::overwrite_existing);
  auto r = RunFileReader::open(path);
  CHECK(r->schema_version() == 1);
  const RunAttributes a = sample_attributes();
  CHECK(r->root_attribute("config") == a.config_yaml);
  CHECK(r->root_attribute("position_types") == "learned+tisa");
  CHECK(r->root_attribute("seed") == "1234");
  CHECK(r->root_attribute("schema_version") == "1");
  CHECK(r->root_attribute("torch_version") == "1.13.0");
  CHECK(r->root_attribute("git_commit") == "0123abcd");
  CHECK(r->root_attribute("created") == "2024-01-02T03:04:05Z");
  CHECK_THROWS_AS(r->root_attribute("nope"), SchemaError);

  CHECK(r->metric_names() == std::vector<std::string>{"accuracy", "loss"});
  CHECK(r->metric("loss").first == std::vector<int64_t>{0, 10, 20});
  CHECK(r->metric("loss").second == std::vector<double>{2.5, 2.0, 1.75});
  CHECK(r->metric("accuracy").first == std::vector<int64_t>{10, 20});
  CHECK(r->metric("accuracy").second == std::vector<double>{0.5, 0.625});
  check_tensor(*r, "/metrics/loss/step", torch::tensor({0, 10, 20}), torch::kInt64, {"point"});
  check_tensor(*r, "/metrics/loss/value", torch::tensor({2.5, 2.0, 1.75}, torch::kFloat64),
               torch::kFloat64, {"point"});

  check_tensor(*r, "/probe/tokens", sample_tokens(), torch::kInt64, {"probe", "token"});
  check_tensor(*r, "/probe/key_mask", sample_key_mask(), torch::kUInt8, {"probe", "token"});

  CHECK(r->snapshot_steps() == std::vector<int64_t>{0, 10});
  for (int64_t step : {0, 10}) {
    const std::string g = "/snapshots/step_" + std::to_string(step);
    CHECK(r->attribute(g, "step") == std::to_string(step));
    CHECK(r->children(g) == std::vector<std::string>{"attention", "position", "position_scores"});
    check_tensor(*r, g + "/attention", sample_attention(step), torch::kFloat32, kAttentionDims);
    // attention rows are probabilities
    const auto rows = r->dataset(g + "/attention").value.sum(-1);  // (L,H,T)
    CHECK(torch::allclose(rows, torch::ones_like(rows), 1e-6, 1e-6));
    CHECK(r->children(g + "/position_scores") == std::vector<std::string>{"learned", "tisa"});
    check_tensor(*r, g + "/position_scores/tisa", sample_tisa_scores(step), torch::kFloat32,
                 kAttentionDims);
    check_tensor(*r, g + "/position_scores/learned", sample_learned_scores(), torch::kFloat32,
                 kAttentionDims);
    CHECK(r->children(g + "/position") == std::vector<std::string>{"t5_bias", "tisa"});
    check_tensor(*r, g + "/position/tisa/distances", sample_distances(), torch::kFloat32,
                 {"distance"});
    check_tensor(*r, g + "/position/tisa/a", sample_tisa_a(step), torch::kFloat32,
                 {"layer", "head", "kernel"});
    check_tensor(*r, g + "/position/t5_bias/buckets", sample_buckets(), torch::kFloat32,
                 {"distance"});
  }
  // The schema helpers spell the same paths and axis names.
  CHECK(sc::axis_names(sc::kDimsAttention) == kAttentionDims);
  CHECK(sc::axis_names("").empty());
  CHECK(sc::attention_path(10) == "/snapshots/step_10/attention");
  CHECK(sc::position_path(10, "tisa", "a") == "/snapshots/step_10/position/tisa/a");
  CHECK(sc::position_scores_path(0, "tisa") == "/snapshots/step_0/position_scores/tisa");
  CHECK(sc::weight_path(kQueryWeight) == std::string("/weights/") + kQueryWeight);
  CHECK(sc::metric_value_path("loss") == "/metrics/loss/value");
  CHECK(sc::eval_column_path("extrapolation", "loss") == "/eval/extrapolation/loss");

  CHECK(r->attribute("/weights", "step") == "10");
  CHECK(r->children("/weights") == std::vector<std::string>{"lm_head.bias", kQueryWeight});
  check_tensor(*r, std::string("/weights/") + kQueryWeight, sample_query_weight(), torch::kFloat32,
               {"output", "input"});
  check_tensor(*r, "/weights/lm_head.bias", sample_bias(), torch::kFloat32, {"dim0"});

  CHECK(r->children("/eval") == std::vector<std::string>{"extrapolation"});
  check_tensor(*r, "/eval/extrapolation/length", torch::tensor({5, 10, 20}), torch::kInt64,
               {"row"});
  check_tensor(*r, "/eval/extrapolation/loss", torch::tensor({1.5, 2.25, 3.125}, torch::kFloat64),
               torch::kFloat64, {"row"});
  CHECK(r->attribute("/eval/extrapolation", "metric") == "loss");
  CHECK(r->attribute("/eval/extrapolation", "note") == "α");

  CHECK(r->exists("/snapshots/step_10/position/tisa/a"));
  CHECK_FALSE(r->exists("/snapshots/step_20"));
  CHECK_FALSE(r->exists("/snapshots/step_10/attention/deeper"));
  CHECK_THROWS_AS(r->dataset("/snapshots/step_20/attention"), SchemaError);
  CHECK_THROWS_AS(r->dataset("/snapshots/step_10"), SchemaError);  // a group
  CHECK_THROWS_AS(r->children("/nope"), SchemaError);
}

TEST_CASE(
    "run file: HDF5-level types: int64 and UTF-8 variable-length attributes, "
    "extensible metrics") {
  ScratchDir dir("runfile_types");
  const std::string path = dir.file("run.h5");
  {
    auto w = RunFileWriter::create(path, sample_attributes());
    write_sample_run(*w);
  }  // the destructor closes
  H5::Exception::dontPrint();
  H5::H5File f(path, H5F_ACC_RDONLY);
  const H5::Group root = f.openGroup("/");
  for (const char* name : {"config", "position_types", "torch_version", "git_commit", "created"}) {
    CAPTURE(name);
    const H5::Attribute a = root.openAttribute(name);
    REQUIRE(a.getTypeClass() == H5T_STRING);
    CHECK(a.getStrType().isVariableStr());
    CHECK(a.getStrType().getCset() == H5T_CSET_UTF8);
    CHECK(a.getSpace().getSimpleExtentType() == H5S_SCALAR);
  }
  for (const char* name : {"schema_version", "seed"}) {
    CAPTURE(name);
    const H5::Attribute a = root.openAttribute(name);
    REQUIRE(a.getTypeClass() == H5T_INTEGER);
    CHECK(a.getIntType().getSize() == 8);
    CHECK(a.getIntType().getSign() == H5T_SGN_2);
  }
  const H5::DataSet step = f.openDataSet("/metrics/loss/step");
  CHECK(step.getCreatePlist().getLayout() == H5D_CHUNKED);
  hsize_t dims[1], maxdims[1];
  step.getSpace().getSimpleExtentDims(dims, maxdims);
  CHECK(dims[0] == 3);
  CHECK(maxdims[0] == H5S_UNLIMITED);
  CHECK(f.openDataSet("/metrics/loss/value").getFloatType().getSize() == 8);
  CHECK(f.openDataSet("/snapshots/step_0/attention").getFloatType().getSize() == 4);
  CHECK(f.openDataSet("/probe/key_mask").getIntType().getSign() == H5T_SGN_NONE);
  CHECK(f.openDataSet("/probe/key_mask").getIntType().getSize() == 1);
  CHECK(f.openGroup("/snapshots/step_10").openAttribute("step").getIntType().getSize() == 8);
}

TEST_CASE("run file: a repeated metric step replaces later points / truncate drops them") {
  ScratchDir dir("runfile_metrics");
  const std::string path = dir.file("run.h5");
  auto w = RunFileWriter::create(path, sample_attributes());
  for (int64_t s : {0, 10, 20, 30}) w->append_metric("loss", s, 1.0 + static_cast<double>(s));
  w->append_metric("lr", 0, 0.5);
  w->append_metric("lr", 30, 0.25);
  w->append_metric("loss", 20, 99.0);  // a resumed run repeating step 20
  {
    auto r = RunFileReader::open(path);
    CHECK(r->metric("loss").first == std::vector<int64_t>{0, 10, 20});
    CHECK(r->metric("loss").second == std::vector<double>{1.0, 11.0, 99.0});
  }
  w->append_metric("loss", 5, -1.0);  // replaces every point at a step >= 5
  w->truncate_metrics_after(0);
  w->append_metric("loss", 7, 8.0);
  w->close();
  {
    auto r = RunFileReader::open(path);
    CHECK(r->metric("loss").first == std::vector<int64_t>{0, 7});
    CHECK(r->metric("loss").second == std::vector<double>{1.0, 8.0});
    CHECK(r->metric("lr").first == std::vector<int64_t>{0});
  }
  // Reopened for --resume: the cached lengths come from the file.
  w = RunFileWriter::open_append(path);
  w->truncate_metrics_after(3);       // keeps step 0 only
  for (int64_t s = 1; s <= 600; ++s)  // crosses chunk boundaries
    w->append_metric("loss", s, 0.25 * static_cast<double>(s));
  w->append_metric("loss", 600, -6.0);
  w->close();
  auto r = RunFileReader::open(path);
  const auto [steps, values] = r->metric("loss");
  REQUIRE(steps.size() == 601);
  for (int64_t s = 0; s <= 600; ++s) {
    CHECK(steps[s] == s);
    CHECK(values[s] == (s == 0 ? 1.0 : s == 600 ? -6.0 : 0.25 * static_cast<double>(s)));
  }
}

TEST_CASE("run file: a snapshot, the weights and an eval group written again are replaced") {
  ScratchDir dir("runfile_replace");
  const std::string path = dir.file("run.h5");
  {
    auto w = RunFileWriter::create(path, sample_attributes());
    write_sample_run(*w);
    // Step 10 again, with the content of step 3 and no position tensors.
    w->write_snapshot(10, sample_attention(3), {}, {});
    w->write_weights({{"other.weight", torch::ones({2, 2}), {}}}, 20);
    w->write_eval("extrapolation", {{"length", torch::tensor({7}), {}}}, {});
    w->close();
  }
  auto r = RunFileReader::open(path);
  CHECK(r->snapshot_steps() == std::vector<int64_t>{0, 10});
  check_tensor(*r, "/snapshots/step_10/attention", sample_attention(3), torch::kFloat32,
               kAttentionDims);
  CHECK(r->children("/snapshots/step_10/position").empty());
  CHECK(r->children("/snapshots/step_10/position_scores").empty());
  CHECK(r->children("/weights") == std::vector<std::string>{"other.weight"});
  CHECK(r->attribute("/weights", "step") == "20");
  CHECK(r->children("/eval/extrapolation") == std::vector<std::string>{"length"});
  CHECK_THROWS_AS(r->attribute("/eval/extrapolation", "metric"), SchemaError);
  // Snapshot 0 is untouched.
  check_tensor(*r, "/snapshots/step_0/position/tisa/a", sample_tisa_a(0), torch::kFloat32,
               {"layer", "head", "kernel"});
}

TEST_CASE("run file: bad arguments are reported, not written") {
  ScratchDir dir("runfile_args");
  auto w = RunFileWriter::create(dir.file("run.h5"), sample_attributes());
  CHECK_THROWS_AS(w->append_metric("valid/loss", 1, 1.0), SchemaError);
  CHECK_THROWS_AS(w->append_metric("", 1, 1.0), SchemaError);
  CHECK_THROWS_AS(w->write_snapshot(1, torch::zeros({2, 3, 4}), {}, {}), c10::Error);
  CHECK_THROWS_AS(w->write_snapshot(1, sample_attention(1), {},
                                    {{"tisa", {{"a", torch::zeros({2, 3}), {"layer"}}}}}),
                  c10::Error);
  CHECK_THROWS_AS(w->write_weights({{"a/b", torch::zeros({2}), {}}}, 1), SchemaError);
  CHECK_THROWS_AS(
      w->write_eval("x", {{"a", torch::zeros({2}), {}}, {"b", torch::zeros({3}), {}}}, {}),
      c10::Error);
  w->close();
  CHECK_THROWS_WITH_AS(w->append_metric("loss", 1, 1.0), doctest::Contains("closed"), RunError);
  CHECK_THROWS_WITH_AS(RunFileWriter::create(dir.file("missing/run.h5"), sample_attributes()),
                       doctest::Contains("missing/run.h5"), RunError);
}

TEST_CASE(
    "run file: describe_run_file and `relpos inspect` list datasets with types and "
    "shapes") {
  ScratchDir dir("runfile_describe");
  const std::string path = dir.file("run.h5");
  {
    auto w = RunFileWriter::create(path, sample_attributes());
    write_sample_run(*w);
    w->write_snapshot(2, sample_attention(2), {}, {});
  }
  const std::string text = describe_run_file(path);
  CAPTURE(text);
  CHECK(text.find("schema version 1") != std::string::npos);
  CHECK(text.find("@seed: int64 1234") != std::string::npos);
  CHECK(text.find("@position_types: string \"learned+tisa\"") != std::string::npos);
  CHECK(text.find("@config: string \"model:…\" (4 lines") != std::string::npos);
  CHECK(text.find("attention  float32 [2,3,5,5]  (layer,head,query,key)") != std::string::npos);
  CHECK(text.find("tokens  int64 [2,5]  (probe,token)") != std::string::npos);
  CHECK(text.find("key_mask  uint8 [2,5]  (probe,token)") != std::string::npos);
  CHECK(text.find("value  float64 [3]  (point)") != std::string::npos);
  CHECK(text.find("buckets  float32 [11]  (distance)") != std::string::npos);
  CHECK(text.find(std::string(kQueryWeight) + "  float32 [4,4]  (output,input)") !=
        std::string::npos);
  CHECK(text.find("@metric: string \"loss\"") != std::string::npos);
  // natural order: step_2 before step_10
  CHECK(text.find("step_2/") < text.find("step_10/"));

  int status = -1;
  const std::string out = run_command(std::string(RELPOS_BINARY) + " inspect " + path, &status);
  CHECK(status == 0);
  CHECK(out == text);
}

TEST_CASE("run file: a file written by h5py (tests/reference/read_run_file.py) reads back") {
  // tests/fixtures/io/h5py_run_v1.h5: `read_run_file.py write-fixture`; L=1, H=2, T=4, alibi.
  const std::string path = fixture_path("io/h5py_run_v1.h5");
  auto r = RunFileReader::open(path);
  CHECK(r->schema_version() == 1);
  CHECK(r->root_attribute("seed") == "7");
  CHECK(r->root_attribute("position_types") == "alibi");
  CHECK(r->root_attribute("config") == "seed: 7\nposition:\n  types: [alibi]\n");
  CHECK(r->root_attribute("created") == "2000-01-01T00:00:00Z");
  CHECK(r->metric_names() == std::vector<std::string>{"loss"});
  const auto [steps, values] = r->metric("loss");
  CHECK(steps == std::vector<int64_t>{0, 5, 10});
  CHECK(values == std::vector<double>{1.0, 1.0 / 6.0, 1.0 / 11.0});
  CHECK(r->snapshot_steps() == std::vector<int64_t>{5});
  CHECK(r->attribute("/snapshots/step_5", "step") == "5");

  const NamedTensor att = r->dataset("/snapshots/step_5/attention");
  CHECK(att.dims == kAttentionDims);
  REQUIRE(att.value.sizes() == torch::IntArrayRef({1, 2, 4, 4}));
  const NamedTensor bias = r->dataset("/snapshots/step_5/position_scores/alibi");
  REQUIRE(bias.value.sizes() == torch::IntArrayRef({1, 2, 4, 4}));
  const float slopes[2] = {0.25f, 0.0625f};
  auto a = att.value.accessor<float, 4>();
  auto b = bias.value.accessor<float, 4>();
  for (int h = 0; h < 2; ++h)
    for (int i = 0; i < 4; ++i)
      for (int j = 0; j < 4; ++j) {
        CHECK(a[0][h][i][j] == (j <= i ? static_cast<float>(1.0 / (i + 1.0)) : 0.0f));
        CHECK(b[0][h][i][j] == -slopes[h] * static_cast<float>(std::abs(i - j)));
      }
  check_tensor(*r, "/snapshots/step_5/position/alibi/slopes", torch::tensor({0.25f, 0.0625f}),
               torch::kFloat32, {"head"});
  check_tensor(*r, "/snapshots/step_5/position/alibi/distances",
               torch::tensor({-3.f, -2.f, -1.f, 0.f, 1.f, 2.f, 3.f}), torch::kFloat32,
               {"distance"});
  check_tensor(*r, "/probe/tokens", torch::tensor({1, 2, 3, 4, 5, 6, 7, 8}).reshape({2, 4}),
               torch::kInt64, {"probe", "token"});
  check_tensor(*r, "/probe/key_mask", torch::tensor({1, 1, 1, 1, 1, 1, 0, 0}).reshape({2, 4}),
               torch::kUInt8, {"probe", "token"});
  check_tensor(*r, "/weights/transformer.token_embedding.weight",
               torch::tensor({0.f, 0.25f, 0.5f, 0.75f, 1.f, 1.25f}).reshape({3, 2}),
               torch::kFloat32, {"vocab", "channel"});
  check_tensor(*r, "/eval/extrapolation/length", torch::tensor({4, 8}), torch::kInt64, {"row"});
  check_tensor(*r, "/eval/extrapolation/loss", torch::tensor({0.5, 0.75}, torch::kFloat64),
               torch::kFloat64, {"row"});
  CHECK(r->attribute("/eval/extrapolation", "metric") == "loss");

  // The relpos writer appends to a file it did not write.
  ScratchDir dir("runfile_h5py");
  const std::string copy = dir.file("run.h5");
  std::filesystem::copy_file(path, copy);
  auto w = RunFileWriter::open_append(copy);
  w->append_metric("loss", 5, 0.125);  // replaces steps >= 5
  w->append_metric("loss", 15, 0.0625);
  w->close();
  CHECK(RunFileReader::open(copy)->metric("loss").first == std::vector<int64_t>{0, 5, 15});
  CHECK(RunFileReader::open(copy)->metric("loss").second ==
        std::vector<double>{1.0, 0.125, 0.0625});
}

// The safetensors header parser and file reader (core/io/safetensors*.h) on files built byte by
// byte here from the format description, so each expected value is known without the code
// under test: every malformed header is a DataError naming the file and the tensor, and F16 /
// BF16 / F32 data convert to the float32 values their bit patterns mean.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>

#include "core/io/safetensors.h"
#include "core/io/safetensors_header.h"
#include "core/util/errors.h"
#include "fuzz/fuzz_safetensors_check.h"
#include "tests/helpers.h"
#include "tests/tiny_run.h"

using namespace relpos;
using namespace relpos::test;
namespace fs = std::filesystem;

namespace {

// 8-byte little-endian length, the header text, the data.
std::string st_bytes(const std::string& header, const std::string& data) {
  std::string out(8, '\0');
  uint64_t n = header.size();
  for (int i = 0; i < 8; ++i, n >>= 8) out[i] = static_cast<char>(n & 0xff);
  return out + header + data;
}

std::string parse_error(const std::string& bytes) {
  try {
    parse_safetensors_header("f.safetensors", bytes.data(), bytes.size());
  } catch (const DataError& e) {
    return e.what();
  }
  return "(no error)";
}

std::string u16le(std::initializer_list<uint16_t> v) {
  std::string s;
  for (auto x : v) s += std::string{static_cast<char>(x & 0xff), static_cast<char>(x >> 8)};
  return s;
}

}  // namespace

TEST_CASE("safetensors: a valid header is read with its entries and metadata") {
  const std::string h =
      R"({"__metadata__":{"format":"pt"},"b":{"dtype":"F16","shape":[2],"data_offsets":[8,12]},)"
      R"("a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"e":{"dtype":"I64","shape":[0],"data_offsets":[12,12]}}   )";
  const std::string bytes = st_bytes(h, std::string(12, '\0'));
  const SafetensorsHeader s = parse_safetensors_header("f", bytes.data(), bytes.size());
  REQUIRE(s.entries.size() == 3);
  CHECK(s.entries[0].name == "a");  // in data order
  CHECK(s.entries[1].name == "b");
  CHECK(s.find("b")->dtype == "F16");
  CHECK(s.find("b")->shape == std::vector<int64_t>{2});
  CHECK(s.find("e")->shape == std::vector<int64_t>{0});
  CHECK(s.metadata.at("format") == "pt");
  CHECK(s.data_start == 8 + h.size());
}

TEST_CASE("safetensors: malformed headers are errors naming the file, the tensor and the rule") {
  const std::string data8(8, '\0');
  auto one = [&](const std::string& entry, const std::string& data) {
    return parse_error(st_bytes("{\"t\":" + entry + "}", data));
  };
  CHECK(parse_error("abc") ==
        "f.safetensors: truncated: 3 bytes, fewer than the 8-byte header length that starts a "
        "safetensors file");
  CHECK(parse_error(st_bytes("{}", "").substr(0, 9)).find(
            "the header length field says 2 bytes, but only 1 bytes follow it (file size 9)") !=
        std::string::npos);
  CHECK(parse_error(st_bytes("[1]", "")).find("does not start with '{'") != std::string::npos);
  CHECK(parse_error(st_bytes("{\"t\":", "")).find("f.safetensors (header):1:6: invalid JSON") !=
        std::string::npos);
  CHECK(one(R"({"dtype":"F12","shape":[2],"data_offsets":[0,8]})", data8) ==
        "f.safetensors: tensor 't': unknown dtype 'F12' (known: BOOL, U8, I8, F8_E5M2, F8_E4M3, "
        "I16, U16, F16, BF16, I32, U32, F32, F64, I64, U64)");
  CHECK(one(R"({"dtype":"F32","shape":[2]})", data8) == "f.safetensors: tensor 't': no \"data_offsets\"");
  CHECK(one(R"({"dtype":"F32","shape":[-2],"data_offsets":[0,8]})", data8).find(
            "shape [-2] has -2 (expected non-negative integers)") != std::string::npos);
  CHECK(one(R"({"dtype":"F32","shape":[2],"data_offsets":[0,16]})", data8).find(
            "f.safetensors: tensor 't': data_offsets [0, 16] run past the data, which is 8 bytes "
            "(file size ") != std::string::npos);
  CHECK(one(R"({"dtype":"F32","shape":[3],"data_offsets":[0,8]})", data8) ==
        "f.safetensors: tensor 't': 8 bytes at data_offsets [0, 8], but dtype F32 and shape [3] need 12");
  CHECK(one(R"({"dtype":"F32","shape":[2],"data_offsets":[8,0]})", data8).find("end before they begin") !=
        std::string::npos);
  CHECK(one(R"({"dtype":"U8","shape":[4294967296,4294967296],"data_offsets":[0,8]})", data8).find(
            "need more than 2^64") != std::string::npos);
  CHECK(one(R"({"dtype":"F32","shape":[1],"data_offsets":[0,4]})", data8) ==
        "f.safetensors: bytes [4, 8) at the end of the data belong to no tensor (the format "
        "allows no gaps)");
  CHECK(parse_error(st_bytes(
            R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"b":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})",
            data8)) ==
        "f.safetensors: tensor 'b' at data_offsets [4, 8] overlaps tensor 'a' at [0, 8]");
  CHECK(parse_error(st_bytes(
            R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})", data8)) ==
        "f.safetensors: bytes [0, 4) of the data belong to no tensor (the next is 'a'; the format "
        "allows no gaps)");
  CHECK(parse_error(st_bytes(R"({"__metadata__":{"format":1}})", "")).find(
            "__metadata__.format is 1 (expected a string)") != std::string::npos);
  CHECK(parse_error(st_bytes(R"({"t":[1]})", "")).find(
            "tensor 't': entry is [1] (expected an object with dtype, shape and data_offsets)") !=
        std::string::npos);
}

TEST_CASE("safetensors: F32, F16 and BF16 data convert to the float32 values of their bits") {
  TempFolder tmp("safetensors");
  // F32 1.5 and -2; F16 0x3C00 = 1, 0xC000 = -2, 0x3555 = 0.333251953125; BF16 0x3F80 = 1,
  // 0x4049 = 3.140625; I64 7.
  std::string f32(8, '\0');
  const float v[2] = {1.5f, -2.0f};
  std::memcpy(&f32[0], v, 8);
  std::string i64(8, '\0');
  i64[0] = 7;
  const std::string data = f32 + u16le({0x3C00, 0xC000, 0x3555}) + u16le({0x3F80, 0x4049}) + i64;
  const std::string h =
      R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
      R"("h":{"dtype":"F16","shape":[3],"data_offsets":[8,14]},)"
      R"("b":{"dtype":"BF16","shape":[1,2],"data_offsets":[14,18]},)"
      R"("i":{"dtype":"I64","shape":[],"data_offsets":[18,26]}})";
  const std::string path = tmp.str("x.safetensors");
  std::ofstream(path, std::ios::binary) << st_bytes(h, data);
  SafetensorsFile f(path);
  auto a = f.to_float(*f.header().find("a"));
  CHECK((a.scalar_type() == torch::kFloat32));
  CHECK(a[0].item<float>() == 1.5f);
  CHECK(a[1].item<float>() == -2.0f);
  auto hh = f.to_float(*f.header().find("h"));
  CHECK(hh[0].item<float>() == 1.0f);
  CHECK(hh[1].item<float>() == -2.0f);
  CHECK(hh[2].item<float>() == 0.333251953125f);
  auto b = f.to_float(*f.header().find("b"));
  CHECK(b.sizes() == torch::IntArrayRef({1, 2}));
  CHECK(b[0][0].item<float>() == 1.0f);
  CHECK(b[0][1].item<float>() == 3.140625f);
  try {
    f.to_float(*f.header().find("i"));
    FAIL("an I64 tensor converted");
  } catch (const DataError& e) {
    CHECK(std::string(e.what()) == path + ": tensor 'i' has dtype I64 (expected a floating-point "
                                          "one: F32, F16, BF16 or F64)");
  }
  CHECK_THROWS_AS(SafetensorsFile(tmp.str("missing.safetensors")), DataError);
}

TEST_CASE("safetensors: the writer's file is read back exactly, header padded to 8 bytes") {
  TempFolder tmp("safetensors_w");
  const auto a = torch::randn({3, 5});
  const auto b = torch::arange(4, torch::kFloat32);
  const std::string path = tmp.str("w.safetensors");
  write_safetensors(path, {{"a", a}, {"b", b}}, {{"format", "pt"}});
  SafetensorsFile f(path);
  CHECK(f.header().data_start % 8 == 0);
  CHECK(f.header().metadata.at("format") == "pt");
  CHECK(torch::equal(f.to_float(*f.header().find("a")), a));
  CHECK(torch::equal(f.to_float(*f.header().find("b")), b));
}

TEST_CASE("safetensors: the fuzzer's findings and seeds parse or fail cleanly") {
  // tests/fixtures/fuzz/safetensors (inputs kept from scripts/fuzz.sh) and the harness's seeds
  // (fuzz/corpus/safetensors) through the harness's own check (fuzz/fuzz_safetensors_check.h).
  int n = 0;
  for (const fs::path dir : {fs::path(fixture_path("fuzz/safetensors")),
                             fs::path(RELPOS_SOURCE_DIR) / "fuzz" / "corpus" / "safetensors"}) {
    for (const auto& e : fs::directory_iterator(dir)) {
      CAPTURE(e.path().string());
      std::ifstream in(e.path(), std::ios::binary);
      const std::string b{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
      try {
        fuzz::check_safetensors(reinterpret_cast<const uint8_t*>(b.data()), b.size());
      } catch (const fuzz::FuzzFinding& f) {
        FAIL_CHECK("fuzz finding: " << std::string(f.what()));
      } catch (const std::exception& x) {
        FAIL_CHECK("an exception that is not a DataError escaped: " << std::string(x.what()));
      }
      ++n;
    }
  }
  CHECK(n >= 9);
}

// docs/hdf5-schema.md against the code: the table "Position tensors by variant" must list every
// dataset each registered variant exports, with its axis names and its shape (the shape
// formulas of the document evaluated for a concrete config), and every real export must round-
// trip through a run-file snapshot; the table "Groups and datasets" must list the /split and
// /init_from records with the types and axis names the writer gives them.
#include <doctest/doctest.h>

#include <algorithm>
#include <cctype>
#include <cstring>
#include <fstream>
#include <map>
#include <sstream>
#include <tuple>

#include "core/config/config.h"
#include "core/io/run_file.h"
#include "core/io/schema.h"
#include "core/model/model.h"
#include "tests/helpers.h"
#include "tests/io_test_util.h"

using namespace relpos;

namespace {

struct DocRow {
  std::string dataset, shape, dims;
  bool optional = false;
};

// Table cells of a Markdown row; "\|" inside a cell is a literal bar.
std::vector<std::string> cells(const std::string& line) {
  std::vector<std::string> out;
  std::string cell;
  for (size_t i = 1; i < line.size(); ++i) {
    if (line[i] == '\\' && i + 1 < line.size() && line[i + 1] == '|') {
      cell += '|';
      ++i;
    } else if (line[i] == '|') {
      const size_t a = cell.find_first_not_of(' '), b = cell.find_last_not_of(' ');
      out.push_back(a == std::string::npos ? "" : cell.substr(a, b - a + 1));
      cell.clear();
    } else {
      cell += line[i];
    }
  }
  return out;
}

std::string unquote(std::string s) {
  if (s.size() >= 2 && s.front() == '`' && s.back() == '`') s = s.substr(1, s.size() - 2);
  return s;
}

std::map<std::string, std::vector<DocRow>> documented_exports() {
  std::ifstream in(std::string(RELPOS_SOURCE_DIR) + "/docs/hdf5-schema.md");
  REQUIRE(in.good());
  std::map<std::string, std::vector<DocRow>> out;
  std::string line;
  bool in_section = false;
  while (std::getline(in, line)) {
    if (line.rfind("## ", 0) == 0) in_section = line == "## Position tensors by variant";
    if (!in_section || line.rfind("| `", 0) != 0) continue;
    const auto c = cells(line);
    REQUIRE(c.size() >= 5);
    auto& rows = out[unquote(c[0])];
    if (c[1] == "—") continue;  // the variant exports nothing
    rows.push_back({unquote(c[1]), c[2], c[3], c[4].find("(only when") != std::string::npos});
  }
  return out;
}

// Evaluates a shape formula of the document ("2K+1", "H·d", "rd/2", "Lp") with `sym`.
class ShapeExpr {
 public:
  ShapeExpr(std::string text, const std::map<std::string, int64_t>& sym) : sym_(sym) {
    for (size_t p; (p = text.find("·")) != std::string::npos;) text.replace(p, strlen("·"), "*");
    for (char ch : text)
      if (ch != ' ') s_ += ch;
  }
  int64_t value() {
    const int64_t v = sum();
    REQUIRE_MESSAGE(i_ == s_.size(), "cannot parse shape formula '" << s_ << "'");
    return v;
  }

 private:
  int64_t sum() {
    int64_t v = product();
    while (i_ < s_.size() && (s_[i_] == '+' || s_[i_] == '-')) {
      const char op = s_[i_++];
      v = op == '+' ? v + product() : v - product();
    }
    return v;
  }
  int64_t product() {
    int64_t v = factor();
    while (i_ < s_.size() &&
           (s_[i_] == '*' || s_[i_] == '/' || std::isalpha(static_cast<unsigned char>(s_[i_])))) {
      if (std::isalpha(static_cast<unsigned char>(s_[i_]))) {
        v *= factor();  // implicit product: 2K
      } else {
        const char op = s_[i_++];
        v = op == '*' ? v * factor() : v / factor();
      }
    }
    return v;
  }
  int64_t factor() {
    REQUIRE_MESSAGE(i_ < s_.size(), "incomplete shape formula '" << s_ << "'");
    if (std::isdigit(static_cast<unsigned char>(s_[i_]))) {
      int64_t v = 0;
      while (i_ < s_.size() && std::isdigit(static_cast<unsigned char>(s_[i_])))
        v = v * 10 + (s_[i_++] - '0');
      return v;
    }
    std::string name;
    while (i_ < s_.size() && std::isalnum(static_cast<unsigned char>(s_[i_]))) name += s_[i_++];
    REQUIRE_MESSAGE(sym_.count(name), "unknown symbol '" << name << "' in '" << s_ << "'");
    return sym_.at(name);
  }

  std::string s_;
  size_t i_ = 0;
  const std::map<std::string, int64_t>& sym_;
};

std::vector<int64_t> evaluate_shape(const std::string& shape,
                                    const std::map<std::string, int64_t>& sym) {
  const bool parenthesized = shape.size() >= 2 && shape.front() == '(' && shape.back() == ')';
  REQUIRE_MESSAGE(parenthesized, "shape '" << shape << "' is not (a, b, ...)");
  std::vector<int64_t> out;
  std::stringstream ss(shape.substr(1, shape.size() - 2));
  std::string part;
  while (std::getline(ss, part, ',')) out.push_back(ShapeExpr(part, sym).value());
  return out;
}

}  // namespace

TEST_CASE(
    "schema doc: every variant's exported position tensors are documented with their "
    "dims and shapes") {
  const auto doc = documented_exports();
  // Per-variant values that differ from every other size, so a wrong symbol shows.
  const std::map<std::string, std::vector<std::string>> params = {
      {"shaw", {"position.shaw.clip=3"}},
      {"huang", {"position.huang.clip=3"}},
      {"huang_m1", {"position.huang_m1.clip=3"}},
      {"huang_m2", {"position.huang_m2.clip=3"}},
      {"huang_m3", {"position.huang_m3.clip=3"}},
      {"huang_m4", {"position.huang_m4.clip=3"}},
      {"t5_bias", {"position.t5_bias.buckets=8", "position.t5_bias.max_distance=16"}},
      {"learned", {"position.learned.max_len=20"}},
      {"tisa", {"position.tisa.kernels=3"}},
      {"rope", {"position.rope.rotary_dim=6"}},
      {"deberta", {"position.deberta.clip=3"}},
      {"fire", {"position.fire.mlp_width=10"}},
      {"xpos", {"position.xpos.rotary_dim=6"}},
      {"cope", {"position.cope.n_pos=7"}}};
  test::ScratchDir dir("schema_doc");
  for (bool shared : {false, true}) {
    const std::map<std::string, int64_t> sym = {{"L", 2},  {"Lp", shared ? 1 : 2},
                                                {"H", 4},  {"d", 8},
                                                {"D", 32}, {"E", 32},
                                                {"T", 12}, {"R", 5},
                                                {"K", 3},  {"S", 3},
                                                {"N", 8},  {"M", 20},
                                                {"rd", 6},  {"W", 10},
                                                {"P", 7}};
    for (const auto& name : Registry::get().names()) {
      CAPTURE(name);
      CAPTURE(shared);
      REQUIRE_MESSAGE(doc.count(name), "variant " << name
                                                  << " is missing from the table "
                                                     "\"Position tensors by variant\"");
      std::vector<std::string> sets = {
          "model.width=32",  "model.heads=4",
          "model.layers=2",  "model.ff_width=64",
          "task.seq_len=12", std::string("model.share_layers=") + (shared ? "true" : "false")};
      if (params.count(name))
        for (const auto& s : params.at(name)) sets.push_back(s);
      const Config cfg = load_config({test::config_path("base.yaml"),
                                      test::config_path("position/" + name + ".yaml")},
                                     sets)
                             .config;
      Model model(cfg, 50);
      const auto& encodings = model->transformer->position->encodings();
      REQUIRE(encodings.size() == 1);
      ExportOptions opts;
      opts.length = 12;
      opts.radius = 5;
      const auto exported = encodings[0]->export_tensors(opts);
      const auto& rows = doc.at(name);
      std::vector<NamedTensor> tensors;
      const VariantInfo& info = Registry::get().at(name);
      for (const auto& x : exported) {
        CAPTURE(x.name);
        // What the registry says the variant exports (when it says).
        if (!info.exports.empty())
          CHECK(std::find(info.exports.begin(), info.exports.end(), x.name) != info.exports.end());
        auto row = std::find_if(rows.begin(), rows.end(),
                                [&](const DocRow& r) { return r.dataset == x.name; });
        REQUIRE_MESSAGE(row != rows.end(),
                        "dataset position/" << name << "/" << x.name << " is not documented");
        std::string dims;
        for (size_t i = 0; i < x.dims.size(); ++i) dims += (i ? "," : "") + x.dims[i];
        CHECK(dims == row->dims);
        CHECK(x.value.sizes().vec() == evaluate_shape(row->shape, sym));
        CHECK(std::string(c10::toString(x.value.scalar_type())) == "Float");
        tensors.push_back({x.name, x.value, x.dims});
      }
      for (const auto& r : rows) {
        CAPTURE(r.dataset);
        if (!info.exports.empty())
          CHECK(std::find(info.exports.begin(), info.exports.end(), r.dataset) !=
                info.exports.end());
        if (r.optional) continue;
        CHECK(std::any_of(exported.begin(), exported.end(),
                          [&](const ExportedTensor& x) { return x.name == r.dataset; }));
      }
      // The real export as a snapshot, read back.
      const std::string path = dir.file(name + ".h5");
      {
        auto w = RunFileWriter::create(path, RunAttributes{});
        w->write_snapshot(0, torch::full({2, 4, 12, 12}, 1.0 / 12), {}, {{name, tensors}});
      }
      auto r = RunFileReader::open(path);
      for (const auto& t : tensors) {
        const NamedTensor back = r->dataset(schema::position_path(0, name, t.name));
        CHECK(torch::equal(back.value, t.value));
        CHECK(back.dims == t.dims);
      }
    }
  }
}

namespace {

// The rows of the table under "## Groups and datasets": path -> {type, shape, dims}.
std::map<std::string, std::vector<std::string>> documented_paths() {
  std::ifstream in(std::string(RELPOS_SOURCE_DIR) + "/docs/hdf5-schema.md");
  REQUIRE(in.good());
  std::map<std::string, std::vector<std::string>> out;
  bool in_section = false;
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("## ", 0) == 0) in_section = line == "## Groups and datasets";
    if (!in_section || line.rfind("| `", 0) != 0) continue;
    const auto c = cells(line);
    REQUIRE(c.size() >= 4);
    out[unquote(c[0])] = {c[1], c[2], unquote(c[3])};
  }
  return out;
}

}  // namespace

TEST_CASE(
    "schema doc: the split and --init-from records are documented as the writer writes them") {
  const auto doc = documented_paths();
  const std::string any_split = schema::split_group("<split>");
  const std::vector<std::tuple<std::string, std::string, std::string>> expected = {
      {schema::join(any_split, schema::kSplitIds), "int64", schema::kDimsDocument},
      {schema::join(any_split, schema::kSplitNames), "string", schema::kDimsDocument},
      {schema::init_from_path(schema::kInitLoaded), "string", schema::kDimsParameter},
      {schema::init_from_path(schema::kInitInitialised), "string", schema::kDimsParameter},
      {schema::init_from_path(schema::kInitShapeMismatched), "string", schema::kDimsParameter},
      {schema::init_from_path(schema::kInitUnused), "string", schema::kDimsParameter}};
  for (const auto& [path, type, dims] : expected) {
    CAPTURE(path);
    REQUIRE_MESSAGE(doc.count(path), path << " is missing from \"Groups and datasets\"");
    CHECK(doc.at(path)[0] == type);
    CHECK(doc.at(path)[1] == "(N)");
    CHECK(doc.at(path)[2] == dims);
  }
  for (const char* group : {schema::kSplit, schema::kInitFrom}) {
    CAPTURE(group);
    REQUIRE(doc.count(std::string(group) + "/"));
    CHECK(doc.at(std::string(group) + "/")[0] == "group");
  }

  // What the writer writes has those dims, and reads back.
  test::ScratchDir dir("schema_doc_records");
  const std::string path = dir.file("records.h5");
  {
    auto w = RunFileWriter::create(path, RunAttributes{});
    w->write_split({7, "corpus.txt", {{"train", {0, 2}, {"a", "c"}}, {"test", {1}, {"b"}}}});
    w->write_init_from({"pre", {"x.weight"}, {"p.table", "q"}, {"p.table"}, {}});
  }
  auto r = RunFileReader::open(path);
  CHECK(r->attribute(schema::kSplit, schema::kAttrSplitSeed) == "7");
  CHECK(r->attribute(schema::kSplit, schema::kAttrSplitCorpus) == "corpus.txt");
  CHECK(r->dataset(schema::split_ids_path("train")).dims ==
        std::vector<std::string>{schema::kDimsDocument});
  CHECK(r->attribute(schema::split_names_path("test"), schema::kAttrDims) == schema::kDimsDocument);
  CHECK(r->strings(schema::split_names_path("train")) == std::vector<std::string>{"a", "c"});
  CHECK(r->attribute(schema::kInitFrom, schema::kAttrInitSource) == "pre");
  CHECK(r->strings(schema::init_from_path(schema::kInitInitialised)) ==
        std::vector<std::string>{"p.table", "q"});
  CHECK(r->strings(schema::init_from_path(schema::kInitUnused)).empty());
  CHECK(r->attribute(schema::init_from_path(schema::kInitUnused), schema::kAttrDims) ==
        schema::kDimsParameter);
}

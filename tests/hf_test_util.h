// Helpers of the Hugging Face import/export tests: the committed tiny model folders
// (tests/fixtures/hf/, written by tests/reference/make_hf_checkpoints.py) and their golden
// outputs, the `relpos` executable as a child process, and a run's model evaluated in-process.
#pragma once

#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/io/checkpoint.h"
#include "core/model/model.h"
#include "core/train/trainer.h"
#include "core/util/process.h"
#include "tests/child_log.h"
#include "tests/helpers.h"
#include "tests/tensor_compare.h"
#include "tests/text_file.h"
#include "tests/tiny_run.h"

namespace relpos::test {


inline std::string hf_fixture(const std::string& name) { return fixture_path("hf/" + name); }

inline nlohmann::json golden(const std::string& name) {
  return read_json(hf_fixture(name) + "/golden.json");
}

inline ChildResult relpos_cli(const std::vector<std::string>& args) { return call_relpos(args); }

// `relpos import DIR --out OUT [extra...]`, required to succeed.
inline ChildResult import_ok(const std::string& dir, const std::string& out,
                             std::vector<std::string> extra = {}) {
  std::vector<std::string> args{"import", dir, "--out", out};
  args.insert(args.end(), extra.begin(), extra.end());
  const ChildResult r = relpos_cli(args);
  INFO(r.out << r.err);
  REQUIRE(r.exit_code == 0);
  return r;
}

// The rows of a JSON matrix as a float64 tensor.
inline torch::Tensor json_matrix(const nlohmann::json& rows) {
  std::vector<double> flat;
  for (const auto& row : rows)
    for (const auto& v : row) flat.push_back(v.get<double>());
  return torch::tensor(flat, torch::kFloat64).view({static_cast<int64_t>(rows.size()), -1});
}

struct RunOutputs {
  torch::Tensor hidden, logits;  // (T,D), (T,V) float64
};

// The run's model (config.yaml + checkpoint.pt) on one sequence, in eval mode.
inline RunOutputs run_forward(const std::string& run, const std::vector<int64_t>& ids,
                              const std::vector<int64_t>& segments, int64_t vocab) {
  const Config cfg = load_run_config(run).config;
  Model model(cfg, vocab);
  load_model_parameters(run_checkpoint_path(run), *model);
  model->eval();
  torch::NoGradGuard guard;
  const auto tokens = torch::tensor(ids, torch::kLong).unsqueeze(0);  // (1,T)
  ForwardOptions o;
  if (!segments.empty()) o.segments = torch::tensor(segments, torch::kLong).unsqueeze(0);  // (1,T)
  const auto h = model->hidden(tokens, o);  // (1,T,D)
  RunOutputs out;
  out.hidden = h[0].to(torch::kFloat64);
  if (model->lm_head) out.logits = model->lm_logits(h)[0].to(torch::kFloat64);  // (T,V)
  return out;
}

// relpos's id of each line of a BERT vocab.txt, by the rule docs/pretrained.md states ([PAD]
// [UNK] [CLS] [SEP] [MASK] are 0..4, every other line follows in file order), written here
// independently of the importer: hf_of_relpos[i] is the file line of relpos id i.
inline std::vector<int64_t> bert_line_of_relpos_id(const std::string& vocab_txt) {
  std::ifstream in(vocab_txt);
  std::vector<std::string> lines;
  for (std::string l; std::getline(in, l);) lines.push_back(l);
  const std::vector<std::string> specials = {"[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"};
  std::vector<int64_t> out;
  for (const auto& s : specials)
    for (size_t i = 0; i < lines.size(); ++i)
      if (lines[i] == s) out.push_back(static_cast<int64_t>(i));
  for (size_t i = 0; i < lines.size(); ++i)
    if (std::find(specials.begin(), specials.end(), lines[i]) == specials.end())
      out.push_back(static_cast<int64_t>(i));
  return out;
}

// No folder left by a failed command: neither `out` nor a hidden staging folder beside it.
inline void check_no_partial_folder(const std::string& out) {
  namespace fs = std::filesystem;
  CHECK_MESSAGE(!fs::exists(out), out << " exists after a failed command");
  const fs::path parent = fs::path(out).parent_path();
  if (!fs::exists(parent)) return;
  for (const auto& e : fs::directory_iterator(parent))
    CHECK_MESSAGE(e.path().filename().string().find(".partial-") == std::string::npos,
                  "staging folder left behind: " << e.path());
}

}  // namespace relpos::test

#include "analysis/run_source.h"

#include "core/util/sampling_stats.h"

#include <fmt/format.h>
#include <fmt/ranges.h>  // fmt::join (in fmt/format.h only before fmt 11)
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <map>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "analysis/claims_folder.h"
#include "analysis/gnuplot.h"
#include "analysis/run_checks.h"
#include "core/config/fields.h"
#include "core/io/run_paths.h"
#include "core/io/schema.h"
#include "core/util/errors.h"

namespace relpos::analysis {
namespace fs = std::filesystem;
namespace {

std::vector<double> to_doubles(const torch::Tensor& t) {
  const auto c = t.to(torch::kFloat64).contiguous().reshape({-1});  // (n)
  return {c.data_ptr<double>(), c.data_ptr<double>() + c.numel()};
}

// train_seconds of DIR/result.json (written by `relpos train` when a run finishes); NaN when
// absent or unreadable.
double result_seconds(const std::string& dir) {
  std::ifstream f(fs::path(dir) / "result.json");
  if (!f) return std::nan("");
  const nlohmann::json j = nlohmann::json::parse(f, nullptr, /*allow_exceptions=*/false);
  if (j.is_object() && j.contains("train_seconds") && j["train_seconds"].is_number())
    return j["train_seconds"].get<double>();
  return std::nan("");
}

// /eval/<table>: `length`, metric columns (NaN where `applicable` is 0), the counts and spreads
// that set the metrics' sampling error (`tokens*`, `examples`, `*_sd`), and the attributes
// shown under the tables.
EvalTable read_eval_table(const RunFileReader& r, const std::string& table) {
  EvalTable t;
  const std::string eval = schema::eval_group(table);
  if (!r.exists(eval)) return t;
  std::vector<double> applicable;
  for (const auto& col : r.children(eval)) {
    const auto values = to_doubles(r.dataset(schema::eval_column_path(table, col)).value);
    const bool aux = col.rfind("tokens", 0) == 0 || col == "examples" || is_sampling_statistic(col);
    if (col == "length")
      t.length = values;
    else if (col == "applicable")
      applicable = values;  // 0: the variant cannot run there
    else
      (aux ? t.counts : t.columns).push_back({col, values});
  }
  for (auto* cols : {&t.columns, &t.counts})
    for (auto& [name, v] : *cols)
      for (size_t k = 0; k < v.size() && k < applicable.size(); ++k)
        if (applicable[k] == 0) v[k] = std::nan("");
  // Attribute names are up to the code that wrote the table; these are the ones shown.
  for (const char* a : {"task", "split", "stride", "not_applicable", "clamped", "metric", "note"}) {
    try {
      const std::string v = r.attribute(eval, a);
      if (!v.empty()) t.attrs[a] = v;
    } catch (const SchemaError&) {
    }
  }
  if (t.length.empty()) t.columns.clear(), t.counts.clear();
  return t;
}

}  // namespace

bool yaml_has(const std::string& yaml, const std::string& dotted_key) {
  try {
    YAML::Node node = YAML::Load(yaml);
    std::stringstream keys(dotted_key);
    for (std::string k; std::getline(keys, k, '.');) {
      if (k.empty() || !node.IsMap() || !node[k]) return false;
      node = node[k];
    }
    return true;
  } catch (const YAML::Exception&) {
    return false;
  }
}

std::string yaml_value(const std::string& yaml, const std::string& dotted_key) {
  try {
    YAML::Node node = YAML::Load(yaml);
    std::stringstream keys(dotted_key);
    for (std::string k; std::getline(keys, k, '.');) {
      if (!node.IsMap() || !node[k]) return "";
      node = node[k];
    }
    if (node.IsScalar()) return node.Scalar();
    YAML::Emitter out;
    out << YAML::Flow << node;
    return out.c_str();
  } catch (const YAML::Exception&) {
    return "";
  }
}

std::string newer_than_tables(const std::vector<std::string>& run_dirs, const std::string& tables) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const auto written = fs::last_write_time(tables, ec);  // the folder is made anew by analyze
  if (ec) return "no tables yet";
  for (const auto& d : run_dirs)
    for (const char* f : {"run.h5", "result.json"}) {
      const fs::path p = fs::path(d) / f;
      const auto t = fs::last_write_time(p, ec);
      if (!ec && t > written) return p.string() + " is newer than the tables";
    }
  return "";
}

std::vector<std::string> find_run_dirs(const std::string& dir) {
  std::vector<std::string> out;
  if (!fs::is_directory(dir)) return out;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.is_directory() && is_run_folder(e.path().string())) out.push_back(e.path().string());
  std::sort(out.begin(), out.end());
  // The order the runs were started in (`relpos sweep` writes one `--out DIR` command per run
  // into commands.txt), so tables list variants in the order of the sweep's grid.
  const std::vector<std::string> names = sweep_run_names(dir).value_or(std::vector<std::string>{});
  const auto rank = [&](const std::string& d) {
    const auto it = std::find(names.begin(), names.end(), fs::path(d).filename().string());
    return it - names.begin();  // not listed: after every listed run, by name
  };
  std::stable_sort(out.begin(), out.end(),
                   [&](const std::string& a, const std::string& b) { return rank(a) < rank(b); });
  return out;
}

RunFileSource::RunFileSource(const std::string& run_dir, const std::vector<std::string>& group_by) {
  const std::string path = (fs::path(run_dir) / "run.h5").string();
  reader_ = RunFileReader::open(path);
  RunFileReader& r = *reader_;
  RunInfo& i = info_;
  i.dir = run_dir;
  i.name = fs::path(run_dir).lexically_normal().filename().string();
  if (i.name.empty() || i.name == ".")
    i.name = fs::absolute(run_dir).lexically_normal().filename().string();
  const auto attr = [&](const char* name) {
    try {
      return r.root_attribute(name);
    } catch (const SchemaError&) {
      return std::string();  // optional for the analysis
    }
  };
  i.config_yaml = attr(schema::kAttrConfig);
  i.position_types = attr(schema::kAttrPositionTypes);
  i.git_commit = attr(schema::kAttrGitCommit);
  i.created = attr(schema::kAttrCreated);
  i.torch_version = attr(schema::kAttrTorchVersion);
  const std::string seed = attr(schema::kAttrSeed);
  i.seed = seed.empty() ? 0 : std::stoll(seed);
  i.causal = yaml_value(i.config_yaml, "model.mode") == "decoder";
  i.task = yaml_value(i.config_yaml, "task.type");
  i.tokenizer = yaml_value(i.config_yaml, "data.tokenizer");
  const std::string seq_len = yaml_value(i.config_yaml, "task.seq_len");
  i.train_length = seq_len.empty() ? 0 : std::stoll(seq_len);
  i.figure_size = yaml_value(i.config_yaml, "figures.size");
  // Written by the trainer; a run file from before it has none: unknown (-1).
  const std::string params = attr(schema::kAttrPositionalParameters);
  i.positional_parameters = params.empty() ? -1 : std::stoll(params);
  i.group = variant_group(i);
  if (!group_by.empty()) {
    std::vector<std::string> parts;
    for (const auto& k : group_by) parts.push_back(k + "=" + yaml_value(i.config_yaml, k));
    i.group = fmt::format("{}", fmt::join(parts, ", "));
  }
  for (const auto& name : r.metric_names()) {
    const auto [steps, values] = r.metric(name);
    Series s;
    for (int64_t st : steps) s.x.push_back(static_cast<double>(st));
    s.y = values;
    i.metrics[name] = s;
  }
  i.snapshot_steps = r.snapshot_steps();
  if (r.exists(schema::probe_key_mask_path()))
    key_mask_ = r.dataset(schema::probe_key_mask_path()).value;
  if (r.exists(schema::probe_tokens_path()))
    probe_count_ = r.dataset(schema::probe_tokens_path()).value.size(0);  // (P,T)
  i.train_seconds = result_seconds(run_dir);
  i.finished = run_finished(run_dir);  // result.json with its step count, beside run.h5
  i.extrapolation = read_eval_table(r, schema::kEvalExtrapolation);
  // Further tables of the same kind (`extrapolation_clamped`: learned evaluated with
  // position.learned.beyond=clamp) are rows of their own in the experiment's tables.
  if (r.exists("/eval"))
    for (const auto& name : r.children("/eval"))
      if (name.rfind(std::string(schema::kEvalExtrapolation) + "_", 0) == 0)
        if (EvalTable t = read_eval_table(r, name); !t.empty())
          i.extra_evaluations[name.substr(std::string(schema::kEvalExtrapolation).size() + 1)] =
              std::move(t);
}

SnapshotData RunFileSource::snapshot(int64_t step) const {
  const RunFileReader& r = *reader_;
  SnapshotData s;
  s.step = step;
  s.key_mask = key_mask_;
  s.probe_count = probe_count_;
  if (r.exists(schema::attention_path(step)))
    s.attention = r.dataset(schema::attention_path(step)).value;
  const std::string scores = schema::position_scores_group(step);
  if (r.exists(scores))
    for (const auto& v : r.children(scores))
      s.position_scores[v] = r.dataset(schema::position_scores_path(step, v)).value;
  const std::string position = schema::position_group(step);
  if (r.exists(position))
    for (const auto& v : r.children(position))
      for (const auto& name : r.children(schema::position_variant_group(step, v))) {
        NamedTensor t = r.dataset(schema::position_path(step, v, name));
        t.name = name;
        s.position[v][name] = std::move(t);
      }
  return s;
}

namespace {

// --group-by keys: each once, and each in the config of at least one run (a key no run has
// would label every run alike and put them all in one row).
void check_group_by(const std::vector<std::string>& group_by) {
  for (size_t i = 0; i < group_by.size(); ++i)
    if (std::find(group_by.begin(), group_by.begin() + i, group_by[i]) != group_by.begin() + i)
      throw ConfigError(
          fmt::format("--group-by: the key '{}' is listed twice (expected each key once)", group_by[i]),
          "for example --group-by position.type,model.layers");
}

void check_group_by_keys(const std::vector<std::string>& group_by,
                         const std::vector<const RunInfo*>& runs) {
  for (const auto& k : group_by) {
    bool found = false;
    for (const RunInfo* r : runs) found = found || yaml_has(r->config_yaml, k);
    if (!found)
      throw ConfigError(
          fmt::format("--group-by: no run's config has the key '{}' (expected a dotted config "
                      "key such as model.layers or position.type)",
                      k),
          "`relpos config` prints every key of a config");
  }
}

}  // namespace

void check_one_task(const std::vector<const RunInfo*>& runs, const std::string& dir) {
  std::map<std::string, std::vector<std::string>> by_task;  // task -> run folder names
  for (const RunInfo* r : runs) by_task[r->task.empty() ? "unknown" : r->task].push_back(r->name);
  if (by_task.size() <= 1) return;
  std::vector<std::string> parts;
  for (const auto& [task, names] : by_task)
    parts.push_back(fmt::format("{} ({} run{}: {})", task, names.size(), names.size() == 1 ? "" : "s",
                                join_names(names)));
  throw ConfigError(
      fmt::format("{} holds runs of {} tasks: {}; their metrics do not share a table (an "
                  "accuracy of one task is not comparable to another's)",
                  dir, by_task.size(), join_names(parts, "; ")),
      "put the runs of each task in a folder of their own and analyze each (an experiment "
      "keeps one stage folder per task), or analyze one run folder at a time");
}

std::vector<std::string> run_dirs_of(const std::string& dir) {
  const char* hint =
      "give a run folder written by `relpos train --out DIR` or an experiment folder of them";
  std::error_code ec;
  if (!fs::exists(dir, ec)) throw ConfigError(fmt::format("{} does not exist", dir), hint);
  if (!fs::is_directory(dir, ec))
    throw ConfigError(fmt::format("{} is not a folder", dir),
                      "give the run folder that holds run.h5, not the file");
  if (is_run_folder(dir)) return {dir};
  auto dirs = find_run_dirs(dir);
  if (dirs.empty())
    throw ConfigError(
        fmt::format("{} holds no run.h5 and no run folders (folders with a run.h5)", dir), hint);
  return dirs;
}

ExperimentResult analyze_folder(const std::string& dir, const AnalyzeOptions& o,
                                const std::vector<std::string>& group_by, bool* experiment) {
  // The folder is checked before gnuplot is looked for: a wrong folder is the error to report
  // first; a missing gnuplot is then found before any work is done.
  const auto dirs = run_dirs_of(dir);
  check_group_by(group_by);
  if (is_run_folder(dir)) {
    RunFileSource src(dir, group_by);
    check_group_by_keys(group_by, {&src.info()});
    if (o.figures) require_gnuplot();
    if (experiment) *experiment = false;
    ExperimentResult ex;
    ex.runs.push_back(analyze_run(src, dir, o));
    ex.metric = ex.runs.back().metric;
    return ex;
  }
  std::vector<std::unique_ptr<RunFileSource>> sources;
  std::vector<const RunSource*> ptrs;
  std::vector<const RunInfo*> infos;
  for (const auto& d : dirs) {
    sources.push_back(std::make_unique<RunFileSource>(d, group_by));
    ptrs.push_back(sources.back().get());
    infos.push_back(&sources.back()->info());
  }
  check_group_by_keys(group_by, infos);
  check_one_task(infos, dir);
  if (o.figures) require_gnuplot();
  if (experiment) *experiment = true;
  ExperimentResult ex = analyze_experiment(ptrs, dir, o);
  std::vector<RunInfo> run_infos;
  for (const RunInfo* i : infos) run_infos.push_back(*i);
  ex.warnings = experiment_warnings(run_infos, dir);
  judge_folder_claims(dir, ex);
  return ex;
}

}  // namespace relpos::analysis

#include "experiments/experiment_context.h"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <iostream>
#include <sstream>

#include "analysis/claims_folder.h"
#include "analysis/claims_report.h"
#include "analysis/report.h"
#include "analysis/run_source.h"
#include "core/position/position_registry.h"
#include "core/position/eval_settings.h"
#include "core/task/task_registry.h"
#include "core/train/trainer.h"
#include "core/util/child_pool.h"
#include "core/util/errors.h"
#include "core/util/paths.h"
#include "core/util/signals.h"
#include "core/util/system.h"
#include "core/util/threads.h"
#include "core/io/run_paths.h"
#include "experiments/run_evaluation.h"

namespace relpos {
namespace fs = std::filesystem;

// One registration function per experiment file.
ExperimentInfo quickstart_experiment();
ExperimentInfo huang2020_experiment();
ExperimentInfo extrapolation_experiment();
ExperimentInfo invariance_experiment();
ExperimentInfo tisa2021_experiment();
ExperimentInfo synthetic_experiment();

const std::vector<ExperimentInfo>& experiment_list() {
  static const std::vector<ExperimentInfo> list = {
      quickstart_experiment(),   huang2020_experiment(), extrapolation_experiment(),
      invariance_experiment(),   tisa2021_experiment(),  synthetic_experiment(),
  };
  return list;
}

std::vector<std::string> run_dirs(const std::vector<SweepRunStatus>& runs) {
  std::vector<std::string> out;
  for (const auto& r : runs) out.push_back(r.dir);
  return out;
}

namespace {

std::vector<std::string> available_scales(const std::string& name) {
  std::vector<std::string> scales;
  const fs::path dir = fs::path(config_dir()) / "experiments" / name;
  if (fs::is_directory(dir))
    for (const auto& e : fs::directory_iterator(dir)) {
      const std::string stem = e.path().stem().string();
      if (e.path().extension() == ".yaml" && stem.find('-') == std::string::npos)
        scales.push_back(stem);
    }
  std::sort(scales.begin(), scales.end());
  return scales;
}

}  // namespace

ExperimentContext::ExperimentContext(const ReproduceOptions& opts,
                                     const std::vector<std::string>& stages,
                                     bool stages_selectable)
    : opts_(opts), stages_(stages) {
  for (const auto& set : opts.sets) {
    // STAGE[,STAGE...]:key=value; a ':' after the '=' belongs to the value.
    const size_t colon = set.find(':');
    if (colon == std::string::npos || colon > set.find('=')) {
      global_sets_.push_back(set);
      continue;
    }
    std::vector<std::string> named;
    const std::string stage_list = set.substr(0, colon);
    std::stringstream list(stage_list);
    std::vector<std::string> items;
    for (std::string st; std::getline(list, st, ',');) items.push_back(st);
    if (stage_list.empty() || stage_list.back() == ',') items.push_back("");
    for (const std::string& st : items) {
      if (st.empty())
        throw ConfigError(
            fmt::format("--set {}: empty stage name before ':' (expected STAGE:key=value)", set),
            stages.empty() ? "this experiment has one stage: write --set key=value"
                           : "its stages: " + join_names(stages) +
                                 "; write --set key=value for every stage");
      if (std::find(stages.begin(), stages.end(), st) == stages.end())
        throw ConfigError(
            fmt::format("--set {}: reproduce {} has no stage '{}'", set, opts.name, st),
            stages.empty() ? "this experiment has one stage: write --set key=value"
                           : "its stages: " + join_names(stages));
      named.push_back(st);
    }
    stage_sets_.emplace_back(named, set.substr(colon + 1));
  }
  const fs::path cfg = fs::path(config_dir()) / "experiments" / opts.name / (opts.scale + ".yaml");
  if (!fs::exists(cfg))
    throw ConfigError(fmt::format("reproduce {}: no scale '{}' (no {})", opts.name, opts.scale,
                                  cfg.string()),
                      "known scales: " + join_names(available_scales(opts.name)));
  config_file_ = cfg.string();
  config_ = load_config({config_file_}, global_sets_).config;
  for (const auto& st : config_.sweep.stages) {
    if (!stages_selectable)
      throw ConfigError(
          fmt::format("{}: sweep.stages: reproduce {} runs all of its stages{}", config_file_,
                      opts.name, stages.empty() ? " (it has one)" : ", each from the one before"),
          "remove sweep.stages (it chooses tasks of an experiment whose stages are independent, "
          "e.g. synthetic)");
    if (std::find(stages.begin(), stages.end(), st) == stages.end())
      throw ConfigError(
          fmt::format("{}: sweep.stages: reproduce {} has no stage '{}'", config_file_, opts.name, st),
          "its stages: " + join_names(stages));
  }
  for (const auto& c : config_.claims)
    if (!c.stage.empty() && c.stage != "*" &&
        std::find(stages.begin(), stages.end(), c.stage) == stages.end())
      throw ConfigError(fmt::format("{}: claims: {}: reproduce {} has no stage '{}'", config_file_,
                                    c.id, opts.name, c.stage),
                        stages.empty() ? "this experiment has one stage: leave `stage` out"
                                       : "its stages: " + join_names(stages));
  dir_ = opts.out_dir.empty()
             ? (fs::path(source_dir()) / "results" /
                (opts.scale == "mini" ? opts.name : opts.name + "-" + opts.scale))
                   .string()
             : opts.out_dir;
  create_output_folder(dir_, "experiment folder");
  std::ofstream cmds(fs::path(dir_) / "commands.txt", std::ios::app);
  cmds << "# " << utc_timestamp() << "  commit " << git_commit() << "  on " << machine_summary()
       << "  (paths relative to the repository root)\n"
       << (opts.command_line.empty() ? "relpos reproduce " + opts.name : opts.command_line) << "\n";
}

std::vector<std::string> ExperimentContext::sets_for(const std::string& stage) const {
  std::vector<std::string> out = global_sets_;
  for (const auto& [stages, set] : stage_sets_)
    if (std::find(stages.begin(), stages.end(), stage) != stages.end()) out.push_back(set);
  return out;
}

bool stage_chosen(const Config& cfg, const std::string& stage) {
  const auto& chosen = cfg.sweep.stages;
  return chosen.empty() || std::find(chosen.begin(), chosen.end(), stage) != chosen.end();
}

bool ExperimentContext::runs_stage(const std::string& stage) const {
  return stage_chosen(config_, stage);
}

std::string classification_stage() {
  for (const auto& name : TaskRegistry::get().names())
    if (task_info(name).head == HeadKind::Classifier) return name;
  throw std::logic_error("no classification task registered");
}

std::string ExperimentContext::part_path(const std::string& part) const {
  return (fs::path(config_file_).parent_path() / (opts_.scale + "-" + part + ".yaml")).string();
}

std::string ExperimentContext::part_config(const std::string& part) const {
  if (part.empty()) return config_file_;
  const std::string p = part_path(part);
  if (!fs::exists(p))
    throw ConfigError(fmt::format("reproduce {}: missing config {}", opts_.name, p));
  return p;
}

std::string ExperimentContext::part_config_or_main(const std::string& part) const {
  const std::string p = part_path(part);
  return fs::exists(p) ? p : config_file_;
}

void ExperimentContext::stop_if_interrupted(const std::string& stage) const {
  if (!interrupt_requested()) return;
  throw Interrupted(interrupt_signal(),
                    fmt::format("reproduce {} interrupted by {} before {}: finished runs, their "
                                "evaluations and checkpoints are kept in {}",
                                opts_.name, interrupt_signal_name(), stage, dir_),
                    "run the same command again to continue: finished runs and evaluations are "
                    "skipped, stopped runs resume");
}

void ExperimentContext::log(const std::string& message) const {
  if (!opts_.quiet) std::cerr << "[" << opts_.name << "] " << message << "\n";
}

std::vector<SweepRunStatus> ExperimentContext::sweep(const std::string& sub,
                                                     const std::vector<std::string>& configs,
                                                     const std::vector<std::string>& grid,
                                                     const std::vector<std::string>& sets,
                                                     const std::string& init_from) const {
  stop_if_interrupted("a sweep");
  SweepOptions o;
  o.configs = configs;
  o.sets = sets_for(sub);
  o.sets.insert(o.sets.end(), sets.begin(), sets.end());
  for (const auto& g : grid) o.grid.push_back(parse_grid_axis(g));
  o.out_dir = sub.empty() ? dir_ : (fs::path(dir_) / sub).string();
  const Config c = load_config(configs, o.sets).config;
  o.jobs = opts_.jobs > 0 ? opts_.jobs : c.sweep.jobs;
  o.relpos_binary = opts_.relpos_binary;
  o.init_from = init_from;
  o.quiet = opts_.quiet;
  log(fmt::format("sweep -> {} ({} runs)", o.out_dir, expand_grid(o.grid).size()));
  return run_sweep(o);
}

void ExperimentContext::evaluate_lengths(const std::vector<std::string>& dirs,
                                         const std::vector<std::string>& extra_sets,
                                         const std::string& suffix) const {
  const std::string table = suffix.empty() ? "extrapolation" : "extrapolation_" + suffix;
  // One `relpos eval` child per run, `jobs` at a time (as the sweep trains them), each with its
  // share of the CPUs: a run's evaluation is small matrices, which one thread runs best.
  const int64_t jobs = std::max<int64_t>(1, opts_.jobs > 0 ? opts_.jobs : config_.sweep.jobs);
  std::vector<std::string> todo;  // the runs whose table is missing or older than the run
  for (const auto& d : dirs) {
    const fs::path csv = fs::path(d) / ("eval_" + table + ".csv");
    if (!fs::exists(csv) || fs::last_write_time(csv) < fs::last_write_time(run_result_path(d)))
      todo.push_back(d);
  }
  if (todo.empty()) return;
  const auto options_of = [&](const std::string& d) {
    // The run's stage is its folder's parent below dir() (none for runs at the top). Only the
    // evaluation settings among its overrides matter: the others are in the run's config.yaml.
    const fs::path rel = fs::path(d).lexically_relative(dir_);
    const std::string stage =
        std::distance(rel.begin(), rel.end()) > 1 ? rel.begin()->string() : std::string();
    std::vector<std::string> options{"--set",
                                     fmt::format("threads={}", automatic_threads_shared(jobs))};
    std::vector<std::string> sets = sets_for(stage);
    sets.insert(sets.end(), extra_sets.begin(), extra_sets.end());
    for (const auto& s : sets)
      if (is_eval_setting(s)) options.insert(options.end(), {"--set", s});
    if (!suffix.empty()) options.insert(options.end(), {"--suffix", suffix});
    // The experiment chooses its past-the-bound evaluations itself (extrapolation.cpp).
    options.push_back("--no-past-bound");
    return options;
  };
  stop_if_interrupted("the length evaluation of " + todo[0] +
                      (todo.size() > 1 ? fmt::format(" and {} more runs", todo.size() - 1) : ""));
  log(fmt::format("length evaluation of {} run{}{}, {} at a time", todo.size(),
                  todo.size() == 1 ? "" : "s",
                  extra_sets.empty() ? "" : " with " + join_names(extra_sets),
                  std::min<int64_t>(jobs, static_cast<int64_t>(todo.size()))));
  const std::vector<ChildResult> results = evaluate_runs(
      todo, options_of, jobs, opts_.relpos_binary,
      [&](size_t i, size_t finished, const ChildResult& r) {
        log(fmt::format("  [{}/{}] {} {}", finished, todo.size(),
                        fs::path(todo[i]).filename().string(),
                        r.ok() ? fmt::format("({:.0f} s)", r.wall_s) : "FAILED: " + r.describe(0)));
      },
      interrupt_requested);
  stop_if_interrupted("the end of the length evaluation");
  for (size_t i = 0; i < todo.size(); ++i)
    if (!results[i].ok()) {
      const std::string& out = results[i].out;
      throw RunError(fmt::format("length evaluation of {} failed ({}):\n{}", todo[i],
                                 results[i].describe(0),
                                 out.size() > 2000 ? "..." + out.substr(out.size() - 2000) : out));
    }
}

analysis::ExperimentResult ExperimentContext::analyze(const std::string& folder,
                                                      const std::vector<std::string>& group_by) const {
  stop_if_interrupted("the analysis of " + folder);
  log("analysis of " + folder);
  analysis::AnalyzeOptions ao;
  ao.encoder_notes = encoder_notes();
  ao.figures = opts_.figures;
  auto result = analysis::analyze_folder(folder, ao, group_by, nullptr);
  for (const auto& w : result.warnings) log("warning: " + w);
  return result;
}

std::string ExperimentContext::report(const std::string& folder,
                                      const analysis::ExperimentResult& result) const {
  analysis::ReportInputs in;
  in.dir = folder;
  in.experiment = !is_run_folder(folder);
  for (const auto& r : result.runs) in.runs.push_back(r.info);
  analysis::write_report(in);
  return (fs::path(folder) / "report.md").string();
}

std::string ExperimentContext::analyze_and_report(const std::string& folder) const {
  return report(folder, analyze(folder));
}

std::vector<ClaimConfig> ExperimentContext::claims() const {
  const auto values = analysis::claim_placeholders(config_);
  std::vector<ClaimConfig> out;
  for (const auto& c : config_.claims) {
    if (c.stage != "*") {
      if (c.stage.empty() || runs_stage(c.stage)) out.push_back(analysis::expand_placeholders(c, values));
      continue;
    }
    // stage "*": one claim per stage that runs, {stage} naming it.
    for (const auto& st : stages_) {
      if (!runs_stage(st)) continue;
      auto v = values;
      v["stage"] = st;
      ClaimConfig each = c;
      each.stage = st;
      for (std::string* text : {&each.id, &each.metric}) *text = analysis::expand_text(*text, v);
      for (auto& id : each.requires_ids) id = analysis::expand_text(id, v);
      out.push_back(analysis::expand_placeholders(each, v));
    }
  }
  return out;
}

std::vector<analysis::ClaimResult> ExperimentContext::judge_claims(
    const std::vector<analysis::RunRecord>& records) const {
  // Provenance naming a per-stage claim ("synthetic-{stage}-nope") names it for every stage.
  std::vector<ProvenanceConfig> provenance = config_.provenance;
  for (auto& p : provenance) {
    std::vector<std::string> ids;
    for (const auto& id : p.claims) {
      if (id.find("{stage}") == std::string::npos) {
        ids.push_back(id);
        continue;
      }
      for (const auto& st : stages_)
        if (runs_stage(st)) ids.push_back(analysis::expand_text(id, {{"stage", st}}));
    }
    p.claims = ids;
  }
  // ... and names only the claims judged here (the others' stages do not run).
  const std::vector<ClaimConfig> judged = claims();
  for (auto& p : provenance) {
    std::vector<std::string> kept;
    for (const auto& id : p.claims)
      if (std::any_of(judged.begin(), judged.end(), [&](const ClaimConfig& c) { return c.id == id; }))
        kept.push_back(id);
    p.claims = kept;
  }
  auto out = analysis::judge(judged, records, opts_.name, provenance);
  analysis::write_claims(dir_, opts_.name, out);
  return out;
}

std::string reproduce(const ReproduceOptions& opts) {
  // SIGINT/SIGTERM: a running sweep checkpoints its runs (run_sweep); otherwise the experiment
  // stops before its next stage (stop_if_interrupted). Either way: Interrupted, exit 128 + signal.
  install_interrupt_handlers();
  for (const auto& e : experiment_list()) {
    if (e.name != opts.name) continue;
    ExperimentContext ctx(opts, e.stages, e.stages_selectable);
    ctx.log(fmt::format("{} ({} scale) -> {}", e.summary, opts.scale, ctx.dir()));
    return e.run(ctx);
  }
  std::vector<std::string> names;
  for (const auto& e : experiment_list()) names.push_back(e.name);
  throw ConfigError(fmt::format("reproduce: unknown experiment '{}'", opts.name),
                    "known: " + join_names(names));
}

}  // namespace relpos

// relpos eval: length extrapolation of a trained run (core/train/extrapolation.h).
#include <fmt/format.h>

#include <cctype>
#include <filesystem>

#include "app/commands.h"
#include "core/io/run_paths.h"
#include "experiments/run_evaluation.h"

namespace relpos::app {

Command add_eval(CLI::App& app) {
  auto* cmd = app.add_subcommand("eval", "evaluate a trained run on its test split at several sequence lengths");
  struct Args {
    std::string run;
    std::vector<std::string> lengths;  // as given: split by integer_items
    std::vector<std::string> sets;
    std::string device, suffix;
    int64_t stride = -1, max_tokens = -1, batch = -1, jobs = 1;
    bool no_past_bound = false;
  };
  auto a = std::make_shared<Args>();
  cmd->add_option("--run,-r", a->run,
                  "run folder (written by relpos train), or a sweep or experiment folder: every "
                  "finished run below it")
      ->required();
  cmd->add_option("--lengths,-l", a->lengths,
                  "evaluation lengths, e.g. 64,128,256 (default: the run's eval.lengths; when "
                  "empty, 1x, 2x and 4x task.seq_len, and a synthetic task's own test lengths)");
  cmd->add_option("--suffix", a->suffix,
                  "write the table as /eval/extrapolation_SUFFIX and eval_extrapolation_SUFFIX.csv "
                  "beside the run's own (e.g. clamped, with --set position.learned.beyond=clamp); "
                  "analyze reads it as a further row of the run named SUFFIX")
      ->check([](const std::string& v) -> std::string {
        if (v.empty()) return "an empty suffix (expected letters, digits and _)";
        for (char c : v)
          if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_')
            return "'" + v + "' (expected letters, digits and _ only)";
        return "";
      });
  cmd->add_flag("--no-past-bound", a->no_past_bound,
                "only the table as trained: no second evaluation of an encoding past its length "
                "bound (by default a learned table is also evaluated with "
                "position.learned.beyond=clamp, as /eval/extrapolation_clamped: the row "
                "'learned (clamped)')");
  cmd->add_option("--jobs,-j", a->jobs,
                  "with a sweep or experiment folder: runs evaluated at once (default 1)")
      ->check(integer_in(1));
  cmd->add_option("--stride", a->stride,
                  "clm runs only: also a sliding-window perplexity with this stride, 0 = off "
                  "(default: eval.stride)")
      ->check(integer_in(0));
  cmd->add_option("--max-tokens", a->max_tokens,
                  "tokens per length: clm scored targets, mlm window tokens; classify and span_qa "
                  "score every test example (default: eval.max_tokens)")
      ->check(integer_in(1));
  cmd->add_option("--batch", a->batch, "sequences per batch at the training length (default: eval.batch_size)")
      ->check(integer_in(1));
  cmd->add_option("--set,-s", a->sets,
                  "override an evaluation setting of the run's config: eval.*, device, threads, "
                  "cpu_allocator, precision, position.learned.beyond=clamp (the model and data "
                  "are the run's)");
  cmd->add_option("--device", a->device, "cpu, cuda or cuda:N (same as --set device=...)")
      ->check(non_empty("cpu, cuda or cuda:N"));  // "" used to mean "not given"
  return {cmd, [a]() {
            const std::vector<int64_t> lengths = integer_items(
                "--lengths", a->lengths, "relpos eval --help lists the options and their values",
                2);
            for (const auto& s : a->sets) check_eval_override(s);
            if (!is_run_folder(a->run) && std::filesystem::is_directory(a->run)) {
              std::vector<std::string> options;
              if (!a->lengths.empty())
                options.insert(options.end(), {"--lengths", join_names(a->lengths, ",")});
              if (a->stride != -1)
                options.insert(options.end(), {"--stride", std::to_string(a->stride)});
              if (a->max_tokens != -1)
                options.insert(options.end(), {"--max-tokens", std::to_string(a->max_tokens)});
              if (a->batch != -1)
                options.insert(options.end(), {"--batch", std::to_string(a->batch)});
              for (const auto& s : a->sets) options.insert(options.end(), {"--set", s});
              if (!a->device.empty()) options.insert(options.end(), {"--device", a->device});
              if (!a->suffix.empty()) options.insert(options.end(), {"--suffix", a->suffix});
              if (a->no_past_bound) options.push_back("--no-past-bound");
              return evaluate_runs_below(a->run, options, a->jobs);
            }
            EvalRunOptions e;
            e.sets = a->sets;
            if (!a->device.empty()) e.sets.push_back("device=" + a->device);
            e.suffix = a->suffix;
            e.stride = a->stride;
            e.max_tokens = a->max_tokens;
            e.batch = a->batch;
            e.lengths = lengths;
            e.past_bound = !a->no_past_bound;
            evaluate_run(a->run, e);
            return 0;
          }};
}

}  // namespace relpos::app

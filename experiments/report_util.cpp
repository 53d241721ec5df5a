#include "experiments/report_util.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>

#include "analysis/claims_report.h"
#include "analysis/report.h"
#include "core/util/errors.h"
#include "core/util/paths.h"
#include "core/util/system.h"

namespace relpos {
namespace fs = std::filesystem;

std::string write_experiment_report(const ExperimentContext& ctx, const std::string& title,
                                    const std::string& intro,
                                    const std::vector<ReportSection>& sections) {
  const fs::path dir(ctx.dir());
  fs::create_directories(dir / "tables");
  fs::create_directories(dir / "figures");
  std::string md = "# " + title + "\n\n" + intro + "\n\n";
  for (const auto& sec : sections) {
    md += "## " + sec.heading + "\n\n";
    if (!sec.text.empty()) md += sec.text + "\n\n";
    for (size_t i = 0; i < sec.tables.size(); ++i) {
      const std::string stem = i < sec.table_stems.size() ? sec.table_stems[i] : fmt::format("table{}", i);
      md += analysis::write_table(sec.tables[i], (dir / "tables").string(), stem) + "\n";
      md += fmt::format("(also [CSV](tables/{0}.csv) and [LaTeX](tables/{0}.tex))\n\n", stem);
    }
    for (const auto& [png, caption] : sec.figures) {
      if (!ctx.options().figures) {
        md += fmt::format("*({}: not drawn, this invocation ran with --no-figures)*\n\n", caption);
        continue;
      }
      if (!fs::exists(png)) {
        md += fmt::format("*(figure missing: {})*\n\n", repo_relative(png));
        continue;
      }
      // Keep the stage's file name but make it unique within figures/.
      const fs::path rel = fs::relative(png, dir);
      std::string name = rel.string();
      for (char& c : name)
        if (c == '/') c = '_';
      fs::copy_file(png, dir / "figures" / name, fs::copy_options::overwrite_existing);
      md += fmt::format("![{0}](figures/{1})\n\n*{0}*\n\n", caption, name);
    }
  }
  md += "## Provenance\n\n";
  md += fmt::format("Produced by `relpos reproduce {} --scale {}` on {}, commit `{}`, {}.\n",
                    ctx.options().name, ctx.options().scale, machine_summary(), git_commit(),
                    utc_timestamp());
  // A reproduce run again over finished runs trains nothing: their numbers come from the
  // commits of the earlier invocations, which commands.txt records ("# <time>  commit <hash>").
  std::vector<std::string> earlier;
  {
    std::ifstream log(dir / "commands.txt");
    for (std::string line; std::getline(log, line);) {
      const size_t at = line.rfind("# ", 0) == 0 ? line.find("  commit ") : std::string::npos;
      if (at == std::string::npos) continue;
      const std::string hash = line.substr(at + 9, line.find(' ', at + 9) - (at + 9));
      if (hash != git_commit() && std::find(earlier.begin(), earlier.end(), hash) == earlier.end())
        earlier.push_back(hash);
    }
  }
  if (!earlier.empty())
    md += fmt::format("Earlier invocations in commands.txt ran at commit(s) `{}`: runs they "
                      "finished were not trained again, so their numbers come from that code "
                      "(each stage's run table names the commit of every run).\n",
                      fmt::join(earlier, "`, `"));
  md += ctx.options().figures
            ? "Every command run is listed in [commands.txt](commands.txt); each stage folder has "
              "its own report.md with per-run figures.\n"
            : "Every command run is listed in [commands.txt](commands.txt); each stage folder has "
              "its own report.md. No figures were drawn (--no-figures): run the same command "
              "again where gnuplot and the runs' run.h5 files are, without --no-figures, to draw "
              "them (finished runs are not trained again).\n";
  // The claims (judge_claims) end the report; the index beside the experiment gathers them.
  const bool claims = fs::exists(dir / "claims.md");
  if (claims) {
    std::ifstream in(dir / "claims.md");
    md += "\n" + std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  const fs::path md_path = dir / "report.md";
  std::ofstream(md_path) << md;
  std::ofstream(dir / "report.html") << analysis::markdown_to_html(md, dir.string(), title);
  if (claims && fs::exists(dir / "claims.json"))
    analysis::write_claims_index(fs::absolute(dir).lexically_normal().parent_path().string());
  return md_path.string();
}

std::string corpus_in_words(const std::string& corpus) {
  if (corpus == "sotu") return "the State of the Union corpus";
  if (corpus == "sentiment") return "UCI Sentiment Labelled Sentences";
  if (corpus == "wordnet_qa") return "the generated WordNet span-QA set (docs/data.md), not SQuAD";
  return "'" + corpus + "'";
}

std::string training_data(const ExperimentContext& ctx, const std::string& stage,
                          const std::string& config_file) {
  return corpus_in_words(load_config({config_file}, ctx.sets_for(stage)).config.data.corpus);
}

std::string validation_data(const ExperimentContext& ctx, const std::string& stage,
                            const std::string& config_file) {
  const DataConfig d = load_config({config_file}, ctx.sets_for(stage)).config.data;
  if (!d.valid_corpus.empty()) return corpus_in_words(d.valid_corpus);
  return fmt::format("a held-out {:g}% of {}", 100 * d.valid_fraction, corpus_in_words(d.corpus));
}

}  // namespace relpos

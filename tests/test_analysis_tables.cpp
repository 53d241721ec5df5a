// Result tables: mean ± the half-width of the 95% Student-t interval over seeds for hand-made
// numbers, as exact strings (t quantiles from a printed table: t_{0.975,2} = 4.3027,
// t_{0.975,3} = 3.1824), per-seed columns, and the legend that says which is shown.
#include <doctest/doctest.h>

#include <cmath>

#include "analysis/experiment.h"
#include "analysis/tables.h"
#include "core/position/position_registry.h"

using namespace relpos::analysis;

TEST_CASE("cells: mean ± 95% interval, single values, missing values, per seed") {
  // (0.80, 0.82, 0.84): mean 0.82, sample std 0.02, half-width 4.3027 · 0.02 / √3 = 0.0497
  CHECK(format_cell(Cell::values({0.80, 0.82, 0.84}), 3, CellFormat::markdown) == "0.820 ± 0.050");
  CHECK(format_cell(Cell::values({0.80, 0.82, 0.84}), 3, CellFormat::latex) ==
        "$0.820 \\pm 0.050$");
  // (1,2,3,4): mean 2.5, sample std sqrt(5/3) = 1.2910, half-width 3.1824 · 1.2910 / 2 = 2.054
  CHECK(format_cell(Cell::values({1, 2, 3, 4}), 2, CellFormat::plain) == "2.50 ± 2.05");
  CHECK(ci_half_width({1, 2, 3, 4}) == doctest::Approx(3.182446305 * std::sqrt(5.0 / 3) / 2));
  CHECK(std::isnan(ci_half_width({1.0})));
  CHECK(format_cell(Cell::value(0.5), 3, CellFormat::markdown) == "0.500");
  CHECK(format_cell(Cell::value(12288), 0, CellFormat::markdown) == "12288");
  CHECK(format_cell(Cell{}, 3, CellFormat::markdown) == "—");
  CHECK(format_cell(Cell::values({NAN, NAN}), 3, CellFormat::latex) == "--");
  CHECK(format_cell(Cell::values({NAN, 0.7}), 2, CellFormat::markdown) == "0.70");  // NaN skipped
  CHECK(format_cell(Cell::value(-0.0001), 2, CellFormat::markdown) == "0.00");
  CHECK(format_cell(Cell::label("n/a"), 2, CellFormat::markdown) == "n/a");
  CHECK(format_cell(Cell::values({3, 3}), 0, CellFormat::markdown, false) == "3");
  // Per seed: every run's value in order (a split outcome), NaN as the dash.
  CHECK(format_cell(Cell::values({0.96, 0.0, NAN}), 2, CellFormat::markdown, true, true) ==
        "0.96, 0.00, —");
}

namespace {
std::vector<RunRecord> records() {
  return {
      {"learned", {{"acc", 0.80}, {"params", 16384}, {"time", 60.0}}},
      {"tisa", {{"acc", 0.85}, {"params", 120}, {"time", 70.0}}},
      {"learned", {{"acc", 0.82}, {"params", 16384}, {"time", 62.0}}},
      {"learned", {{"acc", 0.84}, {"params", 16384}, {"time", 61.0}}},
      {"none", {{"params", 0}}},
  };
}
std::vector<ColumnSpec> specs() {
  return {
      {"acc", "accuracy", 3}, {"params", "pos. params", 0, false}, {"time", "train time (s)", 1}};
}
}  // namespace

TEST_CASE("a table grouped by variant renders in Markdown, CSV and LaTeX") {
  // learned: acc (0.80, 0.82, 0.84) -> 0.820 ± 0.050 (interval 0.7703..0.8697);
  // time (60, 62, 61) -> 61.0 ± 2.5 (4.3027 / √3 = 2.484)
  Table t = group_table(records(), specs(), "variant", {"none"});
  t.title = "Accuracy";
  const std::string legend =
      "± : half-width of the 95% confidence interval of the mean over the row's runs (Student t "
      "with n − 1 degrees of freedom, n = the runs with a value). A value without ± comes from "
      "one run (n = 1): no interval.";
  CHECK(to_markdown(t) ==
        "**Accuracy**\n\n"
        "| variant | runs | accuracy | pos. params | train time (s) |\n"
        "|:---|---:|---:|---:|---:|\n"
        "| none | 1 | — | 0 | — |\n"
        "| learned | 3 | 0.820 ± 0.050 | 16384 | 61.0 ± 2.5 |\n"
        "| tisa | 1 | 0.850 | 120 | 70.0 |\n\n" +
            legend + "\n");
  CHECK(to_csv(t) ==
        "variant,runs,accuracy,accuracy_ci_low,accuracy_ci_high,accuracy_std,accuracy_n,"
        "accuracy_values,pos. params,train time (s),train time (s)_ci_low,train time (s)_ci_high,"
        "train time (s)_std,train time (s)_n,train time (s)_values\n"
        "none,1,,,,,0,,0,,,,,0,\n"
        "learned,3,0.82,0.7703172458,0.8696827542,0.02,3,0.8;0.82;0.84,16384,61,58.51586229,"
        "63.48413771,1,3,60;62;61\n"
        "tisa,1,0.85,,,,1,0.85,120,70,,,,1,70\n");
  const std::string latex = to_latex(t);
  CHECK(latex.find("learned & $3$ & $0.820 \\pm 0.050$ & $16384$ & $61.0 \\pm 2.5$ \\\\\n") !=
        std::string::npos);
  CHECK(latex.find("tisa & $1$ & $0.850$ & $120$ & $70.0$ \\\\\n") != std::string::npos);
  CHECK(latex.find("\\caption{Accuracy $\\pm$ : half-width of the 95\\% confidence interval") !=
        std::string::npos);
  // A table of single runs (not pooled) has no legend.
  Table single;
  single.columns = {{"run", 0}, {"acc", 3}};
  single.rows = {{Cell::label("a"), Cell::value(0.5)}};
  CHECK(cell_legend(single).empty());
  // Per-seed columns: every value, and the legend says so.
  Table split = group_table({{"tisa", {{"copy", 0.96}}, 1}, {"tisa", {{"copy", 0.0}}, 2}},
                            {{"copy", "copy N (0–1, per seed)", 2, true, true}});
  CHECK(to_markdown(split).find("| tisa | 2 | 0.96, 0.00 |") != std::string::npos);
  CHECK(cell_legend(split).find("Per-seed columns list every run's value") == 0);
}

TEST_CASE("a table names the data split its numbers come from, after its title") {
  CHECK(split_label({"valid_loss", "valid_accuracy"}) == "validation split");
  CHECK(split_label({"test_loss"}) == "test split");
  CHECK(split_label({"train_loss"}) == "training split");
  CHECK(split_label({"valid_loss", "test_accuracy@64"}) ==
        "validation and test splits (column prefixes valid_, test_)");
  CHECK(split_label({"params", "loss@64"}).empty());
  Table t;
  t.title = "Results";
  t.columns = {{"variant", 0}, {"valid_loss", 2}};
  t.rows = {{Cell::label("rope"), Cell::value(1.5)}};
  t.split = split_label({"valid_loss"});
  CHECK(to_markdown(t).rfind("**Results — validation split**\n", 0) == 0);
  CHECK(to_latex(t).find("\\caption{Results -- validation split}") != std::string::npos);
  t.split.clear();
  CHECK(to_markdown(t).rfind("**Results**\n", 0) == 0);
}

TEST_CASE("text is escaped for each format") {
  Table t;
  t.columns = {{"variant", 0}, {"note", 0}};
  t.rows = {{Cell::label("huang_m4"), Cell::label("a|b, \"c\"")}};
  CHECK(to_markdown(t).find("| huang_m4 | a\\|b, \"c\" |") != std::string::npos);
  CHECK(to_csv(t) == "variant,note\nhuang_m4,\"a|b, \"\"c\"\"\"\n");
  CHECK(to_latex(t).find("huang\\_m4 & a|b, \"c\" \\\\") != std::string::npos);
  // LaTeX without Unicode set-up: the symbols the project's labels and notes use become ASCII.
  Table u;
  u.columns = {{"Spearman ρ", 0}, {"note", 0}};
  u.rows = {{Cell::label("P·Pᵀ ± —"), Cell::label("j − i ≥ 1 × 2 ≤ 3…")}};
  const std::string latex = to_latex(u);
  CHECK(latex.find("Spearman $\\rho$") != std::string::npos);
  CHECK(latex.find("P$\\cdot$P$^\\top$ $\\pm$ --") != std::string::npos);
  CHECK(latex.find("j $-$ i $\\geq$ 1 $\\times$ 2 $\\leq$ 3\\ldots{}") != std::string::npos);
  for (unsigned char c : latex) CHECK_MESSAGE(c < 0x80, latex);
  t.rows[0].pop_back();
  CHECK_THROWS_WITH(to_markdown(t), doctest::Contains("row 1 has 1 cells for 2 columns"));
}

TEST_CASE("a results table of encoder runs with alibi says that alibi is symmetric there") {
  const auto run = [](const std::string& types, bool causal) {
    RunResult r;
    r.info.position_types = types;
    r.info.causal = causal;
    return r;
  };
  const std::string alibi_note =
      " In an encoder alibi is symmetric, −m_h·|i − j|: alone it cannot tell left from right, "
      "and its symmetry metric is 1 by construction (docs/variants.md).";
  // The registry's notes, as the commands pass them down.
  const auto notes = relpos::encoder_notes();
  REQUIRE(notes.count("alibi") == 1);
  // Once, whether alone or in a stack, however many runs use it.
  CHECK(encoder_notes({run("none", false), run("alibi", false), run("learned+alibi", false)},
                      notes) == alibi_note);
  // Decoders: one-sided, nothing to say; other variants: no note.
  CHECK(encoder_notes({run("alibi", true), run("learned", false), run("rope", false)}, notes)
            .empty());
}

// Result tables: mean ± sample std over seeds for hand-made numbers, as exact strings.
#include <doctest/doctest.h>

#include <cmath>

#include "analysis/tables.h"

using namespace relpos::analysis;

TEST_CASE("cells: mean ± sample std, single values, missing values") {
  // (0.80, 0.82, 0.84): mean 0.82, sample std sqrt((0.02^2 + 0 + 0.02^2) / 2) = 0.02
  CHECK(format_cell(Cell::values({0.80, 0.82, 0.84}), 3, CellFormat::markdown) == "0.820 ± 0.020");
  CHECK(format_cell(Cell::values({0.80, 0.82, 0.84}), 3, CellFormat::latex) ==
        "$0.820 \\pm 0.020$");
  // (1,2,3,4): mean 2.5, sample std sqrt(5/3) = 1.2910
  CHECK(format_cell(Cell::values({1, 2, 3, 4}), 2, CellFormat::plain) == "2.50 ± 1.29");
  CHECK(format_cell(Cell::value(0.5), 3, CellFormat::markdown) == "0.500");
  CHECK(format_cell(Cell::value(12288), 0, CellFormat::markdown) == "12288");
  CHECK(format_cell(Cell{}, 3, CellFormat::markdown) == "—");
  CHECK(format_cell(Cell::values({NAN, NAN}), 3, CellFormat::latex) == "--");
  CHECK(format_cell(Cell::values({NAN, 0.7}), 2, CellFormat::markdown) == "0.70");  // NaN skipped
  CHECK(format_cell(Cell::value(-0.0001), 2, CellFormat::markdown) == "0.00");
  CHECK(format_cell(Cell::label("n/a"), 2, CellFormat::markdown) == "n/a");
  CHECK(format_cell(Cell::values({3, 3}), 0, CellFormat::markdown, false) == "3");
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
  // learned: acc (0.80, 0.82, 0.84) -> 0.820 ± 0.020; time (60, 62, 61) -> 61.0 ± 1.0
  Table t = group_table(records(), specs(), "variant", {"none"});
  t.title = "Accuracy";
  CHECK(to_markdown(t) ==
        "**Accuracy**\n\n"
        "| variant | runs | accuracy | pos. params | train time (s) |\n"
        "|:---|---:|---:|---:|---:|\n"
        "| none | 1 | — | 0 | — |\n"
        "| learned | 3 | 0.820 ± 0.020 | 16384 | 61.0 ± 1.0 |\n"
        "| tisa | 1 | 0.850 | 120 | 70.0 |\n");
  CHECK(to_csv(t) ==
        "variant,runs,accuracy,accuracy_std,accuracy_n,pos. params,"
        "train time (s),train time (s)_std,train time (s)_n\n"
        "none,1,,,0,0,,,0\n"
        "learned,3,0.82,0.02,3,16384,61,1,3\n"
        "tisa,1,0.85,,1,120,70,,1\n");
  CHECK(to_latex(t) ==
        "% needs \\usepackage{booktabs}\n\\begin{table}[t]\n\\centering\n"
        "\\begin{tabular}{lrrrr}\n\\toprule\n"
        "variant & runs & accuracy & pos. params & train time (s) \\\\\n\\midrule\n"
        "none & $1$ & -- & $0$ & -- \\\\\n"
        "learned & $3$ & $0.820 \\pm 0.020$ & $16384$ & $61.0 \\pm 1.0$ \\\\\n"
        "tisa & $1$ & $0.850$ & $120$ & $70.0$ \\\\\n"
        "\\bottomrule\n\\end{tabular}\n\\caption{Accuracy}\n\\end{table}\n");
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

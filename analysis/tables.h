// Result tables in Markdown, CSV and LaTeX: one row per group (a variant), numeric cells shown
// as mean ± the half-width of the 95% Student-t confidence interval of the mean over the group's
// runs (seeds; inference.h). A cell with one value shows the value alone (n = 1: no interval);
// a column of split outcomes (solved by some seeds, not by others) lists every run's value
// instead (per_seed); a cell without values (or only NaN: not applicable) shows "—" / "--" /
// empty. The Markdown and LaTeX notes say which of these the table holds.
//
// group_table() builds a Table-1-style table from per-run records, so an experiment only says
// which keys become which columns.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace relpos::analysis {

struct Cell {
  std::vector<double> samples;  // one value per run; NaN values are ignored
  std::string text;             // shown instead of the samples when not empty

  static Cell value(double v) { return Cell{{v}, {}}; }
  static Cell values(std::vector<double> v) { return Cell{std::move(v), {}}; }
  static Cell label(std::string s) { return Cell{{}, std::move(s)}; }
};

struct Column {
  std::string header;
  int precision = 3;   // digits after the decimal point, for the mean and the interval alike
  bool spread = true;  // false: the mean alone (e.g. a parameter count, equal across seeds)
  // Every run's value in run order ("0.96, 0.00, 0.00") instead of mean ± interval: for
  // outcomes that split between seeds, whose mean describes no run.
  bool per_seed = false;
};

struct Table {
  std::string title;
  std::vector<Column> columns;          // the first column holds the row labels
  std::vector<std::vector<Cell>> rows;  // each row has one cell per column
  std::string note;                     // printed under the table (Markdown, LaTeX caption)
  // The data split its numbers come from ("validation split", "test split"; split_label()),
  // written after the title (Markdown, LaTeX) so that a report that puts tables of different
  // splits side by side says so in each; empty: the table reads no data (parameters alone).
  std::string split;
  // Rows pool runs (group_table): cell_legend() then says what ± and a lone value mean.
  bool pooled = false;
};

// "training split", "validation split", "test split", or "validation and test splits (column
// prefixes valid_, test_)" for metric names with those prefixes (valid_loss, test_accuracy@64);
// "" for none.
std::string split_label(const std::vector<std::string>& metrics);
// The title as tables print it: "Results (mean over runs) — validation split".
std::string titled(const Table& t);

// The half-width of the 95% Student-t interval of the mean of the finite samples; NaN for
// fewer than two.
double ci_half_width(const std::vector<double>& samples);

// What the cells of a table mean ("± : half-width of the 95% ..."), for the cells it holds;
// empty when it has no pooled cells. to_markdown and to_latex print it after the note.
std::string cell_legend(const Table& t);

// One CSV field: quoted (with doubled quotes) when it holds a comma, a quote or a newline.
std::string csv_field(const std::string& s);
// Text for a Markdown table cell: '|' escaped.
std::string markdown_escape(const std::string& s);

enum class CellFormat { markdown, latex, plain };

// "0.123 ± 0.004" (markdown, plain; ± the 95% interval's half-width), "$0.123 \pm 0.004$"
// (latex); a single value "0.123"; no finite value "—" (markdown), "--" (latex), "" (plain);
// per_seed: "0.12, 0.40" (NaN values as "—").
std::string format_cell(const Cell& cell, int precision, CellFormat format, bool spread = true,
                        bool per_seed = false);

std::string to_markdown(const Table& t);
// A column whose cells ever hold more than one value becomes six CSV columns:
// <header> (mean), <header>_ci_low, <header>_ci_high (95% Student-t), <header>_std (sample
// standard deviation), <header>_n, <header>_values (every run's value, ';'-separated).
std::string to_csv(const Table& t);
std::string to_latex(const Table& t);  // booktabs tabular inside a table environment

// Writes <dir>/<stem>.md, .csv and .tex; returns the Markdown.
std::string write_table(const Table& t, const std::string& dir, const std::string& stem);

// One run's numbers, keyed by column key.
struct RunRecord {
  std::string group;  // row label, e.g. "learned+tisa"
  std::map<std::string, double> values;
  int64_t seed = 0;   // the run's seed: paired comparisons match runs by it (claims.h)
  std::string stage;  // the experiment stage the run belongs to ("" for one stage)
  // The run's varied settings other than position.type and seed ("train.steps" -> "800"):
  // paired comparisons match runs with the same seed and settings.
  std::map<std::string, std::string> settings;
};

struct ColumnSpec {
  std::string key;     // key in RunRecord::values
  std::string header;  // column header, with its unit
  int precision = 3;
  bool spread = true;  // show ± the 95% interval
  bool per_seed = false;  // every run's value (Column::per_seed)
};

// One row per group in order of first appearance (or `order`, then the rest), a "runs" column
// with the number of records in the group, then one column per spec with the values of every
// record in the group that has the key.
Table group_table(const std::vector<RunRecord>& records, const std::vector<ColumnSpec>& columns,
                  const std::string& group_header = "variant",
                  const std::vector<std::string>& order = {});

}  // namespace relpos::analysis

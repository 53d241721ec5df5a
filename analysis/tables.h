// Result tables in Markdown, CSV and LaTeX: one row per group (a variant), numeric cells shown
// as mean ± sample standard deviation over the group's runs (seeds). A cell with one value shows
// no ±; a cell without values (or only NaN: not applicable) shows "—" / "--" / empty.
//
// group_table() builds a Table-1-style table from per-run records, so an experiment only says
// which keys become which columns.
#pragma once

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
  int precision = 3;   // digits after the decimal point, for the mean and the std alike
  bool spread = true;  // false: the mean alone (e.g. a parameter count, equal across seeds)
};

struct Table {
  std::string title;
  std::vector<Column> columns;          // the first column holds the row labels
  std::vector<std::vector<Cell>> rows;  // each row has one cell per column
  std::string note;                     // printed under the table (Markdown, LaTeX caption)
};

// One CSV field: quoted (with doubled quotes) when it holds a comma, a quote or a newline.
std::string csv_field(const std::string& s);
// Text for a Markdown table cell: '|' escaped.
std::string markdown_escape(const std::string& s);

enum class CellFormat { markdown, latex, plain };

// "0.123 ± 0.004" (markdown, plain), "$0.123 \pm 0.004$" (latex); a single value "0.123";
// no finite value "—" (markdown), "--" (latex), "" (plain).
std::string format_cell(const Cell& cell, int precision, CellFormat format, bool spread = true);

std::string to_markdown(const Table& t);
// A column whose cells ever hold more than one value becomes three CSV columns:
// <header> (mean), <header>_std, <header>_n.
std::string to_csv(const Table& t);
std::string to_latex(const Table& t);  // booktabs tabular inside a table environment

// Writes <dir>/<stem>.md, .csv and .tex; returns the Markdown.
std::string write_table(const Table& t, const std::string& dir, const std::string& stem);

// One run's numbers, keyed by column key.
struct RunRecord {
  std::string group;  // row label, e.g. "learned+tisa"
  std::map<std::string, double> values;
};

struct ColumnSpec {
  std::string key;     // key in RunRecord::values
  std::string header;  // column header
  int precision = 3;
  bool spread = true;  // show ± std
};

// One row per group in order of first appearance (or `order`, then the rest), a "runs" column
// with the number of records in the group, then one column per spec with the values of every
// record in the group that has the key.
Table group_table(const std::vector<RunRecord>& records, const std::vector<ColumnSpec>& columns,
                  const std::string& group_header = "variant",
                  const std::vector<std::string>& order = {});

}  // namespace relpos::analysis

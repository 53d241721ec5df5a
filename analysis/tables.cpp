#include "analysis/tables.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "analysis/inference.h"
#include "analysis/stats.h"
#include "core/util/errors.h"

namespace relpos::analysis {
namespace {

std::vector<double> finite(const std::vector<double>& v) {
  std::vector<double> out;
  for (double x : v)
    if (!std::isnan(x)) out.push_back(x);
  return out;
}

std::string fixed(double v, int precision) {
  std::string s = fmt::format("{:.{}f}", v, std::max(0, precision));
  // No "-0.000" for a tiny negative mean.
  if (s[0] == '-' && s.find_first_not_of("-0.") == std::string::npos) s.erase(0, 1);
  return s;
}

std::string latex_escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '_':
      case '&':
      case '%':
      case '#':
      case '$':
      case '{':
      case '}':
        out += '\\';
        out += c;
        break;
      case '~':
        out += "\\textasciitilde{}";
        break;
      case '^':
        out += "\\textasciicircum{}";
        break;
      case '\\':
        out += "\\textbackslash{}";
        break;
      default:
        out += c;
    }
  }
  // The project writes these in labels and notes; LaTeX without Unicode set-up gets math or
  // dash versions.
  for (const auto& [from, to] : std::vector<std::pair<std::string, std::string>>{
           {"±", "$\\pm$"}, {"·", "$\\cdot$"}, {"ᵀ", "$^\\top$"}, {"—", "--"},
           {"ρ", "$\\rho$"}, {"−", "$-$"}, {"×", "$\\times$"}, {"≥", "$\\geq$"},
           {"≤", "$\\leq$"}, {"…", "\\ldots{}"}}) {
    for (size_t p = out.find(from); p != std::string::npos; p = out.find(from, p + to.size()))
      out.replace(p, from.size(), to);
  }
  return out;
}

void check_shape(const Table& t) {
  for (size_t r = 0; r < t.rows.size(); ++r)
    if (t.rows[r].size() != t.columns.size())
      throw Error(fmt::format("table \"{}\": row {} has {} cells for {} columns", t.title, r + 1,
                              t.rows[r].size(), t.columns.size()));
}

}  // namespace

std::string csv_field(const std::string& s) {
  if (s.find_first_of(",\"\n") == std::string::npos) return s;
  std::string out = "\"";
  for (char c : s) out += c == '"' ? std::string("\"\"") : std::string(1, c);
  return out + "\"";
}

std::string markdown_escape(const std::string& s) {
  std::string out;
  for (char c : s) out += c == '|' ? std::string("\\|") : std::string(1, c);
  return out;
}

double ci_half_width(const std::vector<double>& samples) {
  const MeanCI c = mean_ci(finite(samples));
  return c.n >= 2 ? c.half() : std::nan("");
}

std::string format_cell(const Cell& cell, int precision, CellFormat format, bool spread,
                        bool per_seed) {
  if (!cell.text.empty()) return format == CellFormat::latex ? latex_escape(cell.text) : cell.text;
  const std::string dash =
      format == CellFormat::markdown ? "—" : format == CellFormat::latex ? "--" : "";
  const std::vector<double> v = finite(cell.samples);
  if (v.empty()) return dash;
  if (spread && per_seed) {
    std::string out;
    for (double x : cell.samples)
      out += (out.empty() ? "" : ", ") + (std::isnan(x) ? dash : fixed(x, precision));
    return out;
  }
  const std::string m = fixed(mean(v), precision);
  if (v.size() == 1 || !spread) return format == CellFormat::latex ? "$" + m + "$" : m;
  const std::string h = fixed(ci_half_width(v), precision);
  if (format == CellFormat::latex) return "$" + m + " \\pm " + h + "$";
  return m + " ± " + h;
}

std::string cell_legend(const Table& t) {
  if (!t.pooled) return "";
  bool interval = false, single = false, seeds = false;
  for (const auto& row : t.rows)
    for (size_t c = 0; c < row.size() && c < t.columns.size(); ++c) {
      if (!t.columns[c].spread || !row[c].text.empty()) continue;
      const size_t n = finite(row[c].samples).size();
      if (t.columns[c].per_seed && n > 0) seeds = true;
      else if (n >= 2) interval = true;
      else if (n == 1) single = true;
    }
  std::string out;
  if (interval)
    out += "± : half-width of the 95% confidence interval of the mean over the row's runs "
           "(Student t with n − 1 degrees of freedom, n = the runs with a value).";
  if (single)
    out += std::string(out.empty() ? "" : " ") +
           "A value without ± comes from one run (n = 1): no interval.";
  if (seeds)
    out += std::string(out.empty() ? "" : " ") +
           "Per-seed columns list every run's value in run order (outcomes that split between "
           "seeds, whose mean describes no run).";
  return out;
}

std::string split_label(const std::vector<std::string>& metrics) {
  bool train = false, valid = false, test = false;
  for (const auto& m : metrics) {
    train = train || m.rfind("train_", 0) == 0;
    valid = valid || m.rfind("valid_", 0) == 0;
    test = test || m.rfind("test_", 0) == 0;
  }
  std::vector<std::string> names, prefixes;
  if (train) names.push_back("training"), prefixes.push_back("train_");
  if (valid) names.push_back("validation"), prefixes.push_back("valid_");
  if (test) names.push_back("test"), prefixes.push_back("test_");
  if (names.empty()) return "";
  if (names.size() == 1) return names[0] + " split";
  return fmt::format("{} splits (column prefixes {})", fmt::join(names, " and "),
                     fmt::join(prefixes, ", "));
}

std::string titled(const Table& t) {
  if (t.split.empty()) return t.title;
  return t.title.empty() ? t.split : t.title + " — " + t.split;
}

std::string to_markdown(const Table& t) {
  check_shape(t);
  std::ostringstream o;
  if (const std::string title = titled(t); !title.empty()) o << "**" << title << "**\n\n";
  o << "|";
  for (const auto& c : t.columns) o << ' ' << markdown_escape(c.header) << " |";
  o << "\n|";
  // Labels (the first column, and any column of text only) left, numbers right.
  for (size_t c = 0; c < t.columns.size(); ++c) {
    bool text = c == 0 || !t.rows.empty();
    for (const auto& row : t.rows) text = text && (c == 0 || !row[c].text.empty());
    o << (text ? ":---|" : "---:|");
  }
  o << '\n';
  for (const auto& row : t.rows) {
    o << "|";
    for (size_t c = 0; c < row.size(); ++c)
      o << ' '
        << markdown_escape(format_cell(row[c], t.columns[c].precision, CellFormat::markdown,
                                       t.columns[c].spread, t.columns[c].per_seed))
        << " |";
    o << '\n';
  }
  const std::string legend = cell_legend(t);
  if (!t.note.empty() || !legend.empty())
    o << "\n" << t.note << (t.note.empty() || legend.empty() ? "" : " ") << legend << "\n";
  return o.str();
}

std::string to_csv(const Table& t) {
  check_shape(t);
  std::vector<bool> spread(t.columns.size(), false);
  for (const auto& row : t.rows)
    for (size_t c = 0; c < row.size(); ++c)
      if (t.columns[c].spread && row[c].text.empty() && finite(row[c].samples).size() > 1)
        spread[c] = true;
  std::ostringstream o;
  const char* parts[] = {"_ci_low", "_ci_high", "_std", "_n", "_values"};
  for (size_t c = 0; c < t.columns.size(); ++c) {
    o << (c ? "," : "") << csv_field(t.columns[c].header);
    if (spread[c])
      for (const char* p : parts) o << ',' << csv_field(t.columns[c].header + p);
  }
  o << '\n';
  // Full precision: the CSV is for machines.
  const auto g = [](double v) {
    return std::isfinite(v) ? fmt::format("{:.10g}", v) : std::string();
  };
  for (const auto& row : t.rows) {
    for (size_t c = 0; c < row.size(); ++c) {
      const Cell& cell = row[c];
      const std::vector<double> v = finite(cell.samples);
      o << (c ? "," : "");
      if (!cell.text.empty())
        o << csv_field(cell.text);
      else if (!v.empty())
        o << g(mean(v));
      if (!spread[c]) continue;
      if (!cell.text.empty()) {
        o << ",,,,,";
        continue;
      }
      const MeanCI ci = mean_ci(v);
      std::string values;
      for (double x : cell.samples) values += (values.empty() ? "" : ";") + g(x);
      o << ',' << g(ci.lo) << ',' << g(ci.hi) << ',' << g(ci.sd) << ',' << v.size() << ','
        << values;
    }
    o << '\n';
  }
  return o.str();
}

std::string to_latex(const Table& t) {
  check_shape(t);
  std::ostringstream o;
  o << "% needs \\usepackage{booktabs}\n\\begin{table}[t]\n\\centering\n\\begin{tabular}{l";
  for (size_t c = 1; c < t.columns.size(); ++c) o << 'r';
  o << "}\n\\toprule\n";
  for (size_t c = 0; c < t.columns.size(); ++c)
    o << (c ? " & " : "") << latex_escape(t.columns[c].header);
  o << " \\\\\n\\midrule\n";
  for (const auto& row : t.rows) {
    for (size_t c = 0; c < row.size(); ++c)
      o << (c ? " & " : "")
        << format_cell(row[c], t.columns[c].precision, CellFormat::latex, t.columns[c].spread,
                       t.columns[c].per_seed);
    o << " \\\\\n";
  }
  o << "\\bottomrule\n\\end{tabular}\n";
  std::string caption = t.note;
  if (const std::string legend = cell_legend(t); !legend.empty())
    caption += (caption.empty() ? "" : " ") + legend;
  const std::string title = titled(t);
  if (!title.empty() || !caption.empty())
    o << "\\caption{" << latex_escape(title) << (title.empty() || caption.empty() ? "" : " ")
      << latex_escape(caption) << "}\n";
  o << "\\end{table}\n";
  return o.str();
}

std::string write_table(const Table& t, const std::string& dir, const std::string& stem) {
  std::filesystem::create_directories(dir);
  const std::string md = to_markdown(t);
  for (const auto& [ext, text] : std::vector<std::pair<std::string, std::string>>{
           {".md", md}, {".csv", to_csv(t)}, {".tex", to_latex(t)}}) {
    const std::string path = (std::filesystem::path(dir) / (stem + ext)).string();
    std::ofstream f(path);
    f << text;
    if (!f) throw Error("cannot write " + path);
  }
  return md;
}

Table group_table(const std::vector<RunRecord>& records, const std::vector<ColumnSpec>& columns,
                  const std::string& group_header, const std::vector<std::string>& order) {
  std::vector<std::string> groups;
  for (const auto& g : order)
    if (std::any_of(records.begin(), records.end(),
                    [&](const RunRecord& r) { return r.group == g; }))
      groups.push_back(g);
  for (const auto& r : records)
    if (std::find(groups.begin(), groups.end(), r.group) == groups.end()) groups.push_back(r.group);

  Table t;
  t.pooled = true;
  t.columns.push_back({group_header, 0, false});
  t.columns.push_back({"runs", 0, false});
  for (const auto& c : columns) t.columns.push_back({c.header, c.precision, c.spread, c.per_seed});
  for (const auto& g : groups) {
    std::vector<Cell> row{Cell::label(g)};
    double n = 0;
    for (const auto& r : records) n += r.group == g;
    row.push_back(Cell::value(n));
    for (const auto& c : columns) {
      Cell cell;
      for (const auto& r : records)
        if (r.group == g)
          if (auto it = r.values.find(c.key); it != r.values.end())
            cell.samples.push_back(it->second);
      row.push_back(cell);
    }
    t.rows.push_back(std::move(row));
  }
  return t;
}

}  // namespace relpos::analysis

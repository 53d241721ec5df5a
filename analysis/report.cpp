#include "core/io/run_paths.h"
#include "analysis/report.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <thread>

#include "analysis/claims_report.h"
#include "analysis/committed_files.h"
#include "analysis/experiment.h"
#include "analysis/explorer.h"
#include "analysis/figures.h"
#include "analysis/run_source.h"
#include "analysis/run_checks.h"
#include "core/util/errors.h"
#include "core/util/paths.h"
#include "core/util/system.h"

namespace relpos::analysis {
namespace fs = std::filesystem;
namespace {

std::string slurp(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

void write_text(const fs::path& p, const std::string& text) {
  std::ofstream f(p, std::ios::binary);
  f << text;
  if (!f) throw Error("cannot write " + p.string());
}

// "host (CPU, N cores, GPUs)": the machine that wrote the report.
std::string machine() {
  char host[256] = {0};
  gethostname(host, sizeof host - 1);
  return fmt::format("{} ({})", host, machine_summary());
}

// Table files of a folder in reading order: results and extrapolation first.
std::vector<fs::path> table_files(const fs::path& dir) {
  std::vector<fs::path> files;
  if (!fs::is_directory(dir)) return files;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.path().extension() == ".md") files.push_back(e.path());
  const auto rank = [](const fs::path& p) {
    const std::string s = p.stem().string();
    const char* order[] = {"results", "extrapolation", "final_invariance_correlation",
                           "final_invariance", "invariance_correlation"};
    for (int k = 0; k < 5; ++k)
      if (s.rfind(order[k], 0) == 0) return k;
    return 9;
  };
  std::sort(files.begin(), files.end(), [&](const fs::path& a, const fs::path& b) {
    return std::make_pair(rank(a), a.filename().string()) <
           std::make_pair(rank(b), b.filename().string());
  });
  return files;
}

// The figures of an index, linked relative to `base`; figures .gitignore leaves out of a
// committed report's folder are named in one line instead of linked (committed_files.h).
void add_figures(std::ostringstream& md, const fs::path& figures_dir, const fs::path& base) {
  std::vector<FigureInfo> figs;
  std::vector<std::string> pngs;
  for (const auto& f : read_figure_index(figures_dir.string()))
    if (fs::exists(f.png)) figs.push_back(f), pngs.push_back(f.png);
  const std::set<std::string> left_out = unlinkable(base.string(), pngs);
  for (const auto& f : figs)
    if (!left_out.count(f.png))
      md << "![" << f.caption << "](" << fs::relative(f.png, base).generic_string() << ")\n\n*"
         << f.caption << "*\n\n";
  if (!left_out.empty())
    md << fmt::format("*{} figure(s) of `{}` are not committed (.gitignore keeps the repository "
                      "small); the command that made this folder draws them again.*\n\n",
                      left_out.size(), repo_relative(figures_dir.string()));
}

std::string escape_html(const std::string& s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '&':
        out += "&amp;";
        break;
      case '"':
        out += "&quot;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

// **bold**, *italic* and `code` in one escaped line.
std::string inline_html(const std::string& text) {
  std::string s = escape_html(text), out;
  bool code = false, strong = false, em = false;
  for (size_t k = 0; k < s.size(); ++k) {
    if (s[k] == '`') {
      out += code ? "</code>" : "<code>";
      code = !code;
    } else if (!code && s.compare(k, 2, "**") == 0) {
      out += strong ? "</strong>" : "<strong>";
      strong = !strong;
      ++k;
    } else if (!code && s[k] == '*' && (em || (k + 1 < s.size() && s[k + 1] != ' '))) {
      out += em ? "</em>" : "<em>";
      em = !em;
    } else if (!code && s[k] == '\\' && k + 1 < s.size() && s[k + 1] == '|') {
      out += '|';
      ++k;
    } else {
      out += s[k];
    }
  }
  if (code) out += "</code>";
  if (strong) out += "</strong>";
  if (em) out += "</em>";
  return out;
}

std::vector<std::string> table_cells(const std::string& line) {
  std::vector<std::string> cells;
  std::string cur;
  for (size_t k = 1; k < line.size(); ++k) {
    if (line[k] == '\\' && k + 1 < line.size() && line[k + 1] == '|') {
      cur += "\\|";
      ++k;
    } else if (line[k] == '|') {
      const auto a = cur.find_first_not_of(' '), b = cur.find_last_not_of(' ');
      cells.push_back(a == std::string::npos ? "" : cur.substr(a, b - a + 1));
      cur.clear();
    } else {
      cur += line[k];
    }
  }
  return cells;
}

// The explorer of report.html (explorer.h) over the first run of each variant whose run.h5 is
// here (a committed results/ folder has none: the page then says so).
std::string report_explorer(const ReportInputs& in) {
  std::vector<std::unique_ptr<RunFileSource>> sources;
  std::set<std::string> seen;
  for (const auto& r : in.runs) {
    if (!is_run_folder(r.dir) || !seen.insert(r.group).second) continue;
    try {
      sources.push_back(std::make_unique<RunFileSource>(r.dir));
    } catch (const Error&) {
      seen.erase(r.group);  // unreadable: the next run of the variant, if any
    }
  }
  std::vector<const RunSource*> ptrs;
  for (const auto& s : sources) ptrs.push_back(s.get());
  return explorer_html(ptrs, report_palette(in.runs));
}

}  // namespace

std::string base64(const std::string& bytes) {
  static const char* a = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  size_t k = 0;
  for (; k + 2 < bytes.size(); k += 3) {
    const uint32_t v =
        (uint8_t(bytes[k]) << 16) | (uint8_t(bytes[k + 1]) << 8) | uint8_t(bytes[k + 2]);
    out += {a[v >> 18], a[(v >> 12) & 63], a[(v >> 6) & 63], a[v & 63]};
  }
  if (k + 1 == bytes.size()) {
    const uint32_t v = uint8_t(bytes[k]) << 16;
    out += {a[v >> 18], a[(v >> 12) & 63], '=', '='};
  } else if (k + 2 == bytes.size()) {
    const uint32_t v = (uint8_t(bytes[k]) << 16) | (uint8_t(bytes[k + 1]) << 8);
    out += {a[v >> 18], a[(v >> 12) & 63], a[(v >> 6) & 63], '='};
  }
  return out;
}

std::string markdown_to_html(const std::string& markdown, const std::string& base_dir,
                             const std::string& title) {
  std::ostringstream h;
  h << "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>" << escape_html(title)
    << "</title>\n<style>\n"
       "body{font-family:sans-serif;max-width:1100px;margin:2em auto;padding:0 1em;color:#222}\n"
       "table{border-collapse:collapse;margin:1em 0;font-size:0.92em}\n"
       "th,td{border:1px solid #ccc;padding:0.25em 0.6em}th{background:#f2f2f2}\n"
       "td.r{text-align:right;font-variant-numeric:tabular-nums}\n"
       "figure{margin:1.5em 0}figure img{max-width:100%;border:1px solid #eee}\n"
       "figcaption{font-size:0.9em;color:#555}pre{background:#f6f6f6;padding:0.8em;overflow-x:auto}"
       "\n"
       "</style></head><body>\n";
  std::istringstream in(markdown);
  std::vector<std::string> lines;
  for (std::string l; std::getline(in, l);) lines.push_back(l);
  for (size_t k = 0; k < lines.size();) {
    const std::string& l = lines[k];
    if (l.rfind("```", 0) == 0) {
      h << "<pre><code>";
      for (++k; k < lines.size() && lines[k].rfind("```", 0) != 0; ++k)
        h << escape_html(lines[k]) << "\n";
      h << "</code></pre>\n";
      ++k;
    } else if (l.rfind("#", 0) == 0) {
      const size_t level = l.find_first_not_of('#');
      h << fmt::format("<h{0}>{1}</h{0}>\n", level, inline_html(l.substr(level + 1)));
      ++k;
    } else if (l.rfind("|", 0) == 0) {
      std::vector<std::string> rows;
      for (; k < lines.size() && lines[k].rfind("|", 0) == 0; ++k) rows.push_back(lines[k]);
      h << "<table>\n";
      for (size_t r = 0; r < rows.size(); ++r) {
        if (r == 1 && rows[r].find("---") != std::string::npos) continue;
        h << "<tr>";
        const auto cells = table_cells(rows[r]);
        for (size_t c = 0; c < cells.size(); ++c)
          h << (r == 0   ? "<th>"
                : c == 0 ? "<td>"
                         : "<td class=\"r\">")
            << inline_html(cells[c]) << (r == 0 ? "</th>" : "</td>");
        h << "</tr>\n";
      }
      h << "</table>\n";
    } else if (l.rfind("![", 0) == 0 && l.find("](") != std::string::npos && l.back() == ')') {
      const size_t mid = l.find("](");
      const std::string cap = l.substr(2, mid - 2), path = l.substr(mid + 2, l.size() - mid - 3);
      const fs::path file = fs::path(base_dir) / path;
      if (fs::exists(file))
        h << "<figure><img alt=\"" << escape_html(cap) << "\" src=\"data:image/png;base64,"
          << base64(slurp(file)) << "\"></figure>\n";
      ++k;
    } else if (l.rfind("- ", 0) == 0) {
      h << "<ul>\n";
      for (; k < lines.size() && lines[k].rfind("- ", 0) == 0; ++k)
        h << "<li>" << inline_html(lines[k].substr(2)) << "</li>\n";
      h << "</ul>\n";
    } else if (l.empty()) {
      ++k;
    } else {
      h << "<p>";
      for (bool first = true;
           k < lines.size() && !lines[k].empty() && lines[k][0] != '|' && lines[k][0] != '#' &&
           lines[k].rfind("![", 0) != 0 && lines[k].rfind("```", 0) != 0;
           ++k, first = false)
        h << (first ? "" : "\n") << inline_html(lines[k]);
      h << "</p>\n";
    }
  }
  h << "</body></html>\n";
  return h.str();
}

std::string write_report(const ReportInputs& in) {
  const fs::path dir(in.dir);
  std::ostringstream md;
  const std::string name = fs::absolute(dir).lexically_normal().filename().string();
  md << "# relpos report — " << name << "\n\n";
  std::set<std::string> groups;
  for (const auto& r : in.runs) groups.insert(r.group);
  // The folder as the repository names it: a committed report names no machine's folders.
  const std::string shown = repo_relative(in.dir);
  md << (in.experiment ? fmt::format("Experiment folder `{}`: {} run{} of {} variant{}.", shown,
                                     in.runs.size(), in.runs.size() == 1 ? "" : "s", groups.size(),
                                     groups.size() == 1 ? "" : "s")
                       : fmt::format("Run folder `{}`.", shown))
     << "\n\n## How it was produced\n\n";
  if (fs::exists(dir / "commands.txt")) {
    md << "Commands (from `commands.txt`):\n\n```\n" << slurp(dir / "commands.txt");
    if (md.str().back() != '\n') md << "\n";
    md << "```\n\n";
  } else {
    md << "No `commands.txt` in this folder; each run's resolved config is stored in its "
          "`run.h5` (attribute `config`).\n\n";
  }
  std::set<std::string> commits;
  for (const auto& r : in.runs) commits.insert(r.git_commit.empty() ? "(unknown)" : r.git_commit);
  md << "Code: relpos commit" << (commits.size() > 1 ? "s " : " ");
  for (auto it = commits.begin(); it != commits.end(); ++it)
    md << (it == commits.begin() ? "" : ", ") << "`" << *it << "`";
  md << ". Report written by `relpos report` at " << utc_timestamp() << " on " << machine() << ".\n\n";
  std::vector<std::string> unfinished;
  for (const auto& r : in.runs)
    if (!r.finished) unfinished.push_back("`" + r.name + "`");
  if (!unfinished.empty())
    md << fmt::format(
        "**Warning: {} of {} runs did not finish** (no `result.json`: stopped, interrupted or "
        "still running): {}. Their numbers are those of their last logged step and snapshot, "
        "and they count in the means below like the others; `relpos train --resume --out DIR` "
        "finishes them.\n\n",
        unfinished.size(), in.runs.size(), fmt::join(unfinished, ", "));
  if (in.experiment)
    for (const auto& w : experiment_warnings(in.runs, in.dir)) md << "**Warning:** " << w << ".\n\n";
  if (!in.runs.empty()) {
    md << "| run | variant | seed | git commit | created | LibTorch "
          "|\n|:---|:---|---:|:---|:---|:---|\n";
    for (const auto& r : in.runs)
      md << fmt::format("| {}{} | {} | {} | {} | {} | {} |\n", r.name,
                        r.finished ? "" : " (unfinished)", r.group, r.seed,
                        r.git_commit.empty() ? "—" : r.git_commit.substr(0, 12), r.created,
                        r.torch_version);
    md << "\n";
  }
  const auto tables = table_files(dir / "tables");
  if (!tables.empty()) {
    md << "## Tables\n\n"
       << "Each table's title names the data split of its numbers: validation (the evaluations "
          "during training, and the snapshot probe) or test (`relpos eval`'s lengths).\n\n";
    for (const auto& t : tables) md << slurp(t) << "\n";
  }
  if (!read_figure_index((dir / "figures").string()).empty()) {
    md << "## Figures\n\n";
    add_figures(md, dir / "figures", dir);
  }
  if (in.experiment) {
    const bool any_figures = std::any_of(in.runs.begin(), in.runs.end(), [](const RunInfo& r) {
      return !read_figure_index((fs::path(r.dir) / "figures").string()).empty();
    });
    md << (any_figures ? "## Runs\n\nFigures of the first run of each variant; every run folder "
                         "holds its own tables/ and figures/.\n\n"
                       : "## Runs\n\nNo figures: the analysis ran without them (--no-figures); "
                         "every run folder holds its own tables/.\n\n");
    std::set<std::string> shown;
    for (const auto& r : in.runs) {
      const fs::path rd(r.dir);
      md << "### " << r.name << " — " << r.group << ", seed " << r.seed << "\n\n";
      if (fs::exists(rd / "tables" / "invariance_correlation.md"))
        md << slurp(rd / "tables" / "invariance_correlation.md") << "\n";
      if (shown.insert(r.group).second) add_figures(md, rd / "figures", dir);
    }
  }
  // A named experiment's claims (claims_report.h) end its report; the index of every
  // experiment's claims beside it is brought up to date.
  const bool claims = fs::exists(dir / "claims.md");
  if (claims) md << "\n" << slurp(dir / "claims.md");
  const std::string text = md.str();
  write_text(dir / "report.md", text);
  // The HTML report ends with the interactive explorer (explorer.h), which Markdown cannot hold.
  std::string html = markdown_to_html(text, dir.string(), "relpos report — " + name);
  html.insert(html.rfind("</body>"), report_explorer(in));
  write_text(dir / "report.html", html);
  if (claims && fs::exists(dir / "claims.json"))
    write_claims_index(fs::absolute(dir).lexically_normal().parent_path().string());
  return text;
}

}  // namespace relpos::analysis

#include "analysis/gnuplot.h"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "core/util/errors.h"
#include "core/util/process.h"
#include "core/util/system.h"

namespace relpos::analysis {
namespace fs = std::filesystem;
namespace {

// A gnuplot double-quoted string.
std::string quote(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out += c;
  }
  return out + "\"";
}

std::string gnuplot_num(double v) { return std::isfinite(v) ? fmt::format("{:.7g}", v) : "NaN"; }

// Tableau-10 line colours, then dash types once they repeat.
constexpr const char* kLineColours[] = {"#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd",
                                        "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"};

// Markers, cycled independently of the colours: 7 is prime to the 10 colours, so the first 70
// curves of a panel each get a distinct (colour, marker) pair. Filled circle, square, triangle,
// diamond, downward triangle, pentagon, asterisk.
constexpr int kPointTypes[] = {7, 5, 9, 13, 11, 15, 3};

std::string palette_line(Palette p) {
  if (p == Palette::viridis)
    return "set palette defined (0 '#440154', 0.13 '#482878', 0.25 '#3e4989', 0.38 '#31688e', "
           "0.5 '#26828e', 0.63 '#1f9e89', 0.75 '#35b779', 0.88 '#6ece58', 1 '#fde725')";
  return "set palette defined (0 '#2166ac', 0.25 '#67a9cf', 0.5 '#f7f7f7', 0.75 '#ef8a62', "
         "1 '#b2182b')";
}

// The length of a UTF-8 string in code points.
int code_points(const std::string& w) {
  int n = 0;
  for (unsigned char c : w) n += (c & 0xC0) != 0x80;
  return n;
}

// Breaks `text` at spaces into lines of at most about `max_chars` characters (UTF-8 code points),
// so that a long title stays inside its figure instead of being clipped at both edges. A short
// parenthesised group ("(step 600)") is never split, and a title of the form "WHAT — WHOSE"
// that fits in two lines is broken before its dash.
std::string wrap_title(const std::string& text, int max_chars) {
  if (code_points(text) <= max_chars) return text;
  const std::string dash = " — ";
  if (const size_t at = text.find(dash); at != std::string::npos) {
    const std::string head = text.substr(0, at), tail = text.substr(at + 1);
    if (code_points(head) <= max_chars && code_points(tail) <= max_chars) return head + "\n" + tail;
  }
  // Words, with a parenthesised group of up to 24 code points glued into one.
  std::vector<std::string> words;
  std::istringstream in(text);
  for (std::string w; in >> w;) {
    const bool open = !words.empty() && words.back().front() == '(' &&
                      words.back().find(')') == std::string::npos;
    if (open && code_points(words.back()) + 1 + code_points(w) <= 24)
      words.back() += " " + w;
    else
      words.push_back(w);
  }
  std::string out, line;
  for (const std::string& w : words) {
    if (!line.empty() && code_points(line) + 1 + code_points(w) > max_chars) {
      out += line + "\n";
      line.clear();
    }
    line += (line.empty() ? "" : " ") + w;
  }
  return out + line;
}

struct Script {
  std::ostringstream body;  // the panels, drawn once per output format
  std::string stem, title;
  size_t panels = 0;
  int columns = 1;
  FigureSize size;
  std::string preamble;  // settings made once, before the loop
  std::string layout;    // appended to the multiplot layout (margins and spacing)
  double panel_margins_px = 170;  // a panel's width outside its plot area (labels, colour bar)
  double key_px = 0;  // the height legends under the plots take from each panel (print)

  // A paper's size (figures.size column or page): no figure title (the paper's caption says it;
  // the script's first line keeps it), fonts of 7 to 9 pt, fewer tics, wrapped axis labels.
  bool print() const { return size.preset != FigurePreset::screen; }
  // The font size for a size given for the screen (13, 12, 10, 9 pt).
  int font(int screen_pt) const {
    if (!print()) return screen_pt;
    return screen_pt >= 12 ? 9 : screen_pt >= 10 ? 8 : 7;
  }
  // Width of a character of the base font, in layout pixels (8 pt in print at 100 px an inch).
  double char_px() const { return print() ? 7.5 : 6.0; }

  std::string text(const std::string& data_note) const {
    const int rows = static_cast<int>((panels + columns - 1) / columns);
    std::ostringstream s;
    s << "# " << title << "\n"
      << "# Written by relpos (figures.size: " << preset_name(size.preset) << "). Data: " << stem
      << ".dat (" << data_note << ").\n"
      << "# Redraw " << stem << ".png, " << stem << ".pdf and " << stem
      << ".svg with: gnuplot " << stem << ".gp\n"
      << "set encoding utf8\n";
    for (size_t k = 0; k < std::size(kLineColours); ++k)
      s << fmt::format("set linetype {} lc rgb '{}' lw 2 pt 7 ps 1.1\n", k + 1, kLineColours[k]);
    s << "set linetype cycle " << std::size(kLineColours) << "\n" << preamble;
    // On screen the PNG is the layout itself (pngcairo: about a pixel a point). For print the
    // PDF is the reference: its width in inches, 8 pt text; the PNG the same page at 300 dots an
    // inch (text scaled by 300/72, lines by 3), the SVG at 72 units an inch, 8-unit text.
    const double in_w = size.width / 100.0, in_h = size.height / 100.0;
    s << "do for [fmt in \"png pdf svg\"] {\n"
      << "  if (fmt eq \"png\") {\n"
      << (print() ? fmt::format("    set terminal pngcairo size {},{} fontscale 4.1667 "
                                "linewidth 3 noenhanced font \"Sans,8\"\n",
                                std::lround(300 * in_w), std::lround(300 * in_h))
                  : fmt::format("    set terminal pngcairo size {},{} noenhanced font \"Sans,10\"\n",
                                size.width, size.height))
      << "  }\n"
      << "  if (fmt eq \"pdf\") {\n"
      << fmt::format("    set terminal pdfcairo size {:.2f}in,{:.2f}in noenhanced font \"Sans,8\"\n",
                     in_w, in_h)
      << "  }\n"
      << "  if (fmt eq \"svg\") {\n"
      << (print() ? fmt::format("    set terminal svg size {},{} noenhanced font \"Sans,8\"\n",
                                std::lround(72 * in_w), std::lround(72 * in_h))
                  : fmt::format("    set terminal svg size {},{} noenhanced font \"Sans,10\"\n",
                                size.width, size.height))
      << "  }\n"
      << "  set output " << quote(stem + ".") << " . fmt\n";
    if (panels > 1 && print())
      s << fmt::format("  set multiplot layout {},{}{}\n", rows, columns, layout);
    else if (panels > 1)
      s << fmt::format("  set multiplot layout {},{} title {} font \",13\"{}\n", rows, columns,
                       quote(wrap_title(title, static_cast<int>(size.width / (0.8 * 13)))),
                       layout);
    s << body.str();
    if (panels > 1) s << "  unset multiplot\n";
    s << "  set output\n}\n";
    return s.str();
  }
};

// A panel's title: its own, or the figure's for a figure of one panel; wrapped to the width of
// the plot area, over which gnuplot centres it (the panel's width less about 170 px of margins
// and colour bar), at its font size (12 pt alone, 10 pt in a grid; about 0.8 px per pt per
// character).
std::string panel_title(const std::string& panel, const std::string& figure, const Script& s) {
  // In print a figure of one panel has no title: the paper's caption is its title.
  if (s.print() && s.panels == 1) return "";
  const std::string t = s.panels > 1 || !panel.empty() ? panel : figure;
  const double font = s.font(s.panels > 1 ? 10 : 12);
  const double plot_px = s.size.width / static_cast<double>(s.columns) - s.panel_margins_px;
  return wrap_title(t, std::max(24, static_cast<int>(plot_px / (0.8 * font))));
}

// An axis label, in print wrapped to the length of its axis (x: a panel's width, y and the
// colour bar: the figure's height less the room of the x axis), about 60 % of that at least.
// below_px: what else a y axis shares the panel's height with (the x label's lines).
std::string print_label(const std::string& label, const Script& s, bool x_axis,
                        double below_px = 14) {
  if (!s.print()) return label;
  const double rows = std::ceil(static_cast<double>(s.panels) / s.columns);
  const double along = x_axis ? s.size.width / static_cast<double>(s.columns) - 70
                              : s.size.height / rows - 75 - below_px - s.key_px;
  return wrap_title(label, std::max(14, static_cast<int>(along / s.char_px())));
}

// Rows of a legend under a panel: as many entries side by side as the panel's width holds
// (about 7 px a character at 9 pt on screen, 6 at 7 pt in print, and room for the sample).
size_t key_rows(const CurvesPanel& p, const Script& s) {
  size_t longest = 0;
  for (const auto& cv : p.curves) longest = std::max<size_t>(longest, code_points(cv.label));
  const double panel_px = s.size.width / static_cast<double>(s.columns) - 40;
  const double entry_px = (s.print() ? 6.5 : 7.0) * static_cast<double>(longest) + (s.print() ? 55 : 60);
  const size_t n = std::max<size_t>(1, p.curves.size());
  const size_t per_row = std::min(n, static_cast<size_t>(std::max(1.0, panel_px / entry_px)));
  return (n + per_row - 1) / per_row;
}

// A tic step for [lo, hi] with at most `most` intervals: 1, 2, 2.5 or 5 times a power of 10.
double tic_step(double lo, double hi, int most) {
  const double raw = (hi - lo) / most;
  if (!(raw > 0) || !std::isfinite(raw)) return 0;
  const double mag = std::pow(10.0, std::floor(std::log10(raw)));
  for (double f : {1.0, 2.0, 2.5, 5.0, 10.0})
    if (f * mag >= raw * (1 - 1e-9)) return f * mag;
  return 10 * mag;
}

// "  set xtics STEP", or gnuplot's own choice for no step (an empty or degenerate range).
std::string tics_line(const char* axis, double step) {
  return step > 0 ? fmt::format("  set {} {}\n", axis, gnuplot_num(step))
                  : fmt::format("  set {} autofreq\n", axis);
}

// Print: tics a few to an axis (a small plot with gnuplot's own choice crowds its labels into
// each other), from the axis range when set, else the data's; screen: gnuplot's choice.
std::string curve_tics(const CurvesPanel& p, const Script& s) {
  if (!s.print()) return "  set xtics autofreq\n  set ytics autofreq\n";
  double lo[3] = {INFINITY, INFINITY, INFINITY}, hi[3] = {-INFINITY, -INFINITY, -INFINITY};
  const auto add = [&](int axis, double v) {
    if (std::isfinite(v)) lo[axis] = std::min(lo[axis], v), hi[axis] = std::max(hi[axis], v);
  };
  for (const auto& c : p.curves)
    for (size_t k = 0; k < c.x.size() && k < c.y.size(); ++k)
      if (std::isfinite(c.y[k])) add(0, c.x[k]), add(c.y2 ? 2 : 1, c.y[k]);
  for (const auto& [y, label] : p.hlines) add(1, y);
  if (p.xrange) lo[0] = p.xrange->first, hi[0] = p.xrange->second;
  if (p.yrange) lo[1] = p.yrange->first, hi[1] = p.yrange->second;
  std::string out;
  const char* names[] = {"xtics", "ytics", "y2tics"};
  // x: as many tics as labels of the range's width fit along the plot, side by side with room.
  int most[] = {5, 4, 4};
  if (std::isfinite(lo[0]) && hi[0] > lo[0]) {
    const double step = tic_step(lo[0], hi[0], 5);
    const size_t chars = std::max(gnuplot_num(lo[0] - step).size(), gnuplot_num(hi[0]).size());
    const double plot_px = s.size.width / static_cast<double>(s.columns) - 100;
    most[0] = std::clamp(static_cast<int>(plot_px / (1.7 * s.char_px() * static_cast<double>(chars))), 2, 5);
  }
  for (int a = 0; a < 3; ++a) {
    if (std::isfinite(lo[a]) && hi[a] <= lo[a]) {  // a constant: gnuplot widens it by about 1 %
      const double d = lo[a] != 0 ? 0.012 * std::abs(lo[a]) : 1.0;
      lo[a] -= d, hi[a] += d;
    }
    const double step = a == 0 && p.logx ? 0 : tic_step(lo[a], hi[a], most[a]);
    if (a == 2 && !std::isfinite(lo[2])) continue;  // no right axis
    out += step > 0 ? fmt::format("  set {} {}\n", names[a], gnuplot_num(step))
                    : fmt::format("  set {} autofreq\n", names[a]);
  }
  return out;
}

// A panel's legend: off, right of the plot, under it in rows (the bottom margin made room for
// the rows and the x label's lines), or at a gnuplot position. In print a legend right of the
// plot would take most of a column's width: under it.
std::string key_settings(const CurvesPanel& p, const Script& s) {
  std::ostringstream b;
  const bool print = s.print();
  const std::string key = p.key.empty() && print ? "below" : p.key;
  if (key == "off")
    b << "  unset key\n";
  else if (key.empty())  // outside the plot: a legend never hides a curve
    b << "  set key outside right top vertical Left reverse font \","
      << (p.curves.size() > 8 ? 8 : 9) << "\" samplen 3 spacing 0.9\n";
  else if (key == "below") {  // under the plot, in rows: the plot keeps the figure's width
    // gnuplot does not make room for both the x label and a key in the bottom margin: the
    // margin is set here from the rows the entries need.
    const size_t rows = key_rows(p, s);
    const std::string xlabel = print_label(p.xlabel, s, true);  // wrapped: lines of its own
    const double xlabel_lines = static_cast<double>(std::count(xlabel.begin(), xlabel.end(), '\n'));
    b << fmt::format("  set key bmargin center horizontal Left reverse font \",{}\" samplen "
                     "{} spacing 1 width 1 maxrows {}\n  set bmargin {:.2f}\n",
                     s.font(9), print ? 1.5 : 2.5, rows,
                     (print ? 3.8 : 3.5) + 1.3 * xlabel_lines +
                         (print ? 1.05 : 1.25) * static_cast<double>(rows));
  } else {
    b << "  set key " << key << fmt::format(" font \",{}\"\n", s.font(9));
  }
  return b.str();
}

// The dashed vertical lines of a panel with their labels, behind the curves (a point at the
// marked x stays visible); a label beside its line on the side with room (left of a line near
// the right edge).
std::string vertical_lines(const CurvesPanel& p) {
  std::ostringstream b;
  for (const auto& [x, label] : p.vlines) {
    b << fmt::format("  set arrow from {0}, graph 0 to {0}, graph 1 nohead dt 2 lw 1.5 lc "
                     "rgb '#444444' back\n",
                     gnuplot_num(x));
    const bool right_edge = p.xrange && p.xrange->second > p.xrange->first &&
                            (x - p.xrange->first) / (p.xrange->second - p.xrange->first) > 0.6;
    if (!label.empty())
      b << fmt::format("  set label {} at {}, graph 0.04 offset {},0 {} tc rgb '#444444' front\n",
                       quote(label), gnuplot_num(x), right_edge ? "-0.5" : "0.5",
                       right_edge ? "right" : "left");
  }
  return b.str();
}

// In print the legends go under the plots: the figure grows by their rows (13 px each).
void make_room_for_keys(Script& s, const std::vector<CurvesPanel>& panels) {
  size_t most = 0;
  for (const auto& p : panels)
    if (p.key.empty() || p.key == "below") most = std::max(most, key_rows(p, s));
  const int rows = static_cast<int>((panels.size() + s.columns - 1) / s.columns);
  s.key_px = 13.0 * static_cast<double>(most);
  s.size.height += rows * static_cast<int>(s.key_px);
}

void write_file(const fs::path& path, const std::string& text) {
  std::ofstream f(path);
  f << text;
  if (!f) throw Error(fmt::format("cannot write {}", path.string()));
}

FigureFiles render(const fs::path& dir, const std::string& stem, const std::string& script,
                   const std::string& data) {
  const std::string gnuplot = require_gnuplot();
  fs::create_directories(dir);
  FigureFiles files{(dir / (stem + ".png")).string(), (dir / (stem + ".pdf")).string(),
                    (dir / (stem + ".svg")).string(), (dir / (stem + ".gp")).string(),
                    (dir / (stem + ".dat")).string()};
  write_file(files.data, data);
  write_file(files.script, script);
  for (const std::string* f : {&files.png, &files.pdf, &files.svg}) fs::remove(*f);
  SpawnOptions in_dir;
  in_dir.cwd = dir.string();
  const ChildResult run = run_child({gnuplot, stem + ".gp"}, in_dir, /*merge_output=*/true);
  const int status = run.status();
  const std::string& output = run.out;
  if (status != 0 || !fs::exists(files.png) || fs::file_size(files.png) == 0 ||
      !fs::exists(files.svg))
    throw Error(
        fmt::format("gnuplot failed on {} (exit status {}):\n{}", files.script, status, output),
        "run `gnuplot " + stem + ".gp` in " + dir.string() + " to see the problem");
  return files;
}

// A curves panel's reference marks: the shaded band (clipped to the x range when one is set),
// and the dotted horizontal lines with their labels at the left.
void draw_marks(std::ostringstream& b, const CurvesPanel& p, const std::string& font) {
  if (p.band) {
    double lo = p.band->first, hi = p.band->second;
    if (p.xrange) lo = std::max(lo, p.xrange->first), hi = std::min(hi, p.xrange->second);
    if (hi >= lo) {
      // A band of one point (a trained range of r = 0 alone) still shows as a thin strip.
      const double pad = hi > lo ? 0.0 : 0.5;
      b << fmt::format("  set object 1 rect from {}, graph 0 to {}, graph 1 back fc rgb "
                       "'#e3ebf5' fs solid 1.0 noborder\n",
                       gnuplot_num(lo - pad), gnuplot_num(hi + pad))
        << fmt::format("  set label {} at {}, graph 0.97 center tc rgb '#35608f' front\n",
                       quote(p.band_label), gnuplot_num((lo + hi) / 2));
    }
  }
  for (const auto& [y, label] : p.hlines)
    b << fmt::format("  set arrow from graph 0, first {0} to graph 1, first {0} nohead dt 3 lw 2 "
                     "lc rgb '#555555' back\n",
                     gnuplot_num(y))
      << fmt::format("  set label {} at graph 0.02, first {} offset 0,0.7 left tc rgb '#333333' "
                     "front{}\n",
                     quote(label), gnuplot_num(y), font.empty() ? "" : " font \"" + font + "\"");
}

}  // namespace

Palette palette_for(const Matrix& m) {
  bool neg = false, pos = false;
  for (double v : m.data) neg |= v<0, pos |= v> 0;
  return neg && pos ? Palette::diverging : Palette::viridis;
}

std::string line_colour(int line) {
  const int n = static_cast<int>(std::size(kLineColours));
  return kLineColours[((line % n) + n) % n];
}

FigurePreset figure_preset(const std::string& name, const std::string& key) {
  if (name == "screen") return FigurePreset::screen;
  if (name == "column") return FigurePreset::column;
  if (name == "page") return FigurePreset::page;
  throw ConfigError(fmt::format("{}: unknown figure size (got '{}'; expected screen, column or "
                                "page)",
                                key, name),
                    "screen: the figures' own sizes; column: about 3.3 in wide (one column of a "
                    "two-column paper); page: about 6.9 in (the text width)");
}

const char* preset_name(FigurePreset p) {
  return p == FigurePreset::column ? "column" : p == FigurePreset::page ? "page" : "screen";
}

FigureSize layout_size(const FigureSize& size, int columns) {
  if (size.preset == FigurePreset::screen) return size;
  const int width = size.preset == FigurePreset::column && columns <= 1 ? 330 : 690;
  // Print figures are short: a little taller than the screen aspect where that is wide, so
  // that titles, labels and a legend below leave room for the plot.
  const double aspect =
      std::max(0.75, static_cast<double>(size.height) / std::max(1, size.width));
  return {width, static_cast<int>(std::lround(width * aspect)), size.preset};
}

namespace {

std::pair<double, double> colour_range(const HeatmapPanel& p) {
  if (p.cbrange) return *p.cbrange;
  double lo = INFINITY, hi = -INFINITY;
  for (double v : p.values.data)
    if (std::isfinite(v)) lo = std::min(lo, v), hi = std::max(hi, v);
  if (!std::isfinite(lo)) return {0.0, 1.0};
  if (p.palette == Palette::diverging) {
    const double m = std::max(std::abs(lo), std::abs(hi));
    return m > 0 ? std::make_pair(-m, m) : std::make_pair(-1.0, 1.0);
  }
  if (hi <= lo) return {lo - 0.5, hi + 0.5};
  return {lo, hi};
}

// Axis range that shows every cell of a coordinate vector fully.
std::pair<double, double> cell_range(const std::vector<double>& c) {
  const double step =
      c.size() > 1 ? (c.back() - c.front()) / static_cast<double>(c.size() - 1) : 1.0;
  return {c.front() - step / 2, c.back() + step / 2};
}

}  // namespace

std::string find_gnuplot() {
  if (const char* env = std::getenv("RELPOS_GNUPLOT"); env && *env)
    return access(env, X_OK) == 0 ? std::string(env) : std::string();
  return find_on_path("gnuplot");
}

std::string require_gnuplot() {
  std::string g = find_gnuplot();
  if (g.empty())
    throw Error("gnuplot not found (looked at $RELPOS_GNUPLOT and on PATH); figures need it",
                "install it with `apt-get install gnuplot-nox` (scripts/setup.sh does), or run "
                "`relpos analyze --no-figures` (or `relpos reproduce --no-figures`)");
  return g;
}

HeatmapPanel downsample(const HeatmapPanel& p, int64_t max_cells) {
  const int64_t n = std::max(p.values.rows, p.values.cols);
  if (n <= max_cells || max_cells < 1) return p;
  const int64_t f = (n + max_cells - 1) / max_cells;
  const auto coords = [f](const std::vector<double>& c) {
    std::vector<double> out;
    for (size_t k = 0; k < c.size(); k += f) {
      double sum = 0;
      size_t m = 0;
      for (; m < static_cast<size_t>(f) && k + m < c.size(); ++m) sum += c[k + m];
      out.push_back(sum / static_cast<double>(m));
    }
    return out;
  };
  HeatmapPanel q = p;
  q.x = coords(p.x);
  q.y = coords(p.y);
  q.values = Matrix(static_cast<int64_t>(q.y.size()), static_cast<int64_t>(q.x.size()));
  for (int64_t i = 0; i < q.values.rows; ++i)
    for (int64_t j = 0; j < q.values.cols; ++j) {
      double sum = 0;
      int64_t m = 0;
      for (int64_t a = i * f; a < std::min((i + 1) * f, p.values.rows); ++a)
        for (int64_t b = j * f; b < std::min((j + 1) * f, p.values.cols); ++b)
          if (!std::isnan(p.values(a, b))) sum += p.values(a, b), ++m;
      q.values(i, j) = m ? sum / static_cast<double>(m) : NAN;
    }
  q.title += fmt::format(" (means of {0}×{0} blocks)", f);
  return q;
}

namespace {

// One colour bar for a grid of heatmaps (Error when the panels' scales differ): fixed margins
// in pixels around the grid, the bar right of it, so the panels are as large as the figure
// allows and axis labels sit on the outer panels only. Sets s.layout and the label of the bar;
// returns the bar's placement, drawn with the last panel.
std::string shared_colour_bar(Script& s, const std::vector<HeatmapPanel>& panels,
                              std::string& cblabel) {
  for (size_t k = 1; k < panels.size(); ++k)
    if (colour_range(panels[k]) != colour_range(panels[0]) ||
        panels[k].palette != panels[0].palette)
      throw Error(fmt::format("heatmap {}: one colour bar for panels with different colour "
                              "scales (panel {} differs from panel 1)",
                              s.stem, k + 1));
  for (const auto& p : panels)
    if (cblabel.empty()) cblabel = p.cblabel;
  const double w = s.size.width, h = s.size.height;
  const std::string wrapped = wrap_title(s.title, static_cast<int>(w / (0.8 * 13)));
  // In print the grid has no title (Script::print).
  const int title_lines =
      s.print() ? 0 : 1 + static_cast<int>(std::count(wrapped.begin(), wrapped.end(), '\n'));
  const double left = 75 / w, right = 1 - 135 / w, bottom = 65 / h,
               top = 1 - (38.0 + 22.0 * title_lines) / h;
  s.layout = fmt::format(" margins screen {:.4f}, {:.4f}, {:.4f}, {:.4f} spacing screen {:.4f}, "
                         "screen {:.4f}",
                         left, right, bottom, top, 50 / w, 60 / h);
  s.panel_margins_px = 175.0 / s.columns + 50;
  return fmt::format(
      "  set colorbox user origin screen {:.4f}, screen {:.4f} size screen {:.4f}, screen {:.4f}\n",
      right + 20 / w, bottom + 0.15 * (top - bottom), 18 / w, 0.7 * (top - bottom));
}

}  // namespace

FigureFiles plot_heatmaps(const std::string& dir, const std::string& stem, const std::string& title,
                          const std::vector<HeatmapPanel>& input, int columns, FigureSize size,
                          bool one_colour_bar) {
  if (input.empty()) throw Error("plot_heatmaps: no panels for " + stem);
  std::vector<HeatmapPanel> panels;
  for (size_t k = 0; k < input.size(); ++k) {
    const HeatmapPanel& p = input[k];
    if (p.values.rows != static_cast<int64_t>(p.y.size()) ||
        p.values.cols != static_cast<int64_t>(p.x.size()) || p.x.empty() || p.y.empty())
      throw Error(fmt::format("heatmap {} panel {}: values {}x{} but {} y and {} x coordinates",
                              stem, k, p.values.rows, p.values.cols, p.y.size(), p.x.size()));
    panels.push_back(downsample(p, input.size() > 1 ? 128 : 256));
  }
  Script s;
  s.stem = stem, s.title = title, s.panels = panels.size();
  s.columns = std::max(1, std::min<int>(columns, static_cast<int>(panels.size())));
  size = layout_size(size, s.columns);
  s.size = size;
  const bool shared = one_colour_bar && panels.size() > 1;
  std::string cblabel, colour_bar;
  if (shared) colour_bar = shared_colour_bar(s, panels, cblabel);
  std::ostringstream data;
  for (size_t k = 0; k < panels.size(); ++k) {
    const HeatmapPanel& p = panels[k];
    // gnuplot "nonuniform matrix": <ncols> x..., then per row: y v...
    data << "# panel " << k + 1 << ": " << (p.title.empty() ? title : p.title) << "\n"
         << p.x.size();
    for (double x : p.x) data << ' ' << gnuplot_num(x);
    data << '\n';
    for (int64_t i = 0; i < p.values.rows; ++i) {
      data << gnuplot_num(p.y[i]);
      for (int64_t j = 0; j < p.values.cols; ++j) data << ' ' << gnuplot_num(p.values(i, j));
      data << '\n';
    }
    data << "\n\n";
    const auto [cb_lo, cb_hi] = colour_range(p);
    const auto [x_lo, x_hi] = cell_range(p.x);
    const auto [y_lo, y_hi] = cell_range(p.y);
    // With one colour bar: y label on the first column, x label where no panel is below, and
    // the bar, placed right of the grid, drawn with the last panel.
    const bool first_column = k % static_cast<size_t>(s.columns) == 0;
    const bool bottom_row = k + static_cast<size_t>(s.columns) >= panels.size();
    const bool last = k + 1 == panels.size();
    auto& b = s.body;
    b << "  # panel " << k + 1 << "\n"
      << "  set title " << quote(panel_title(p.title, title, s))
      << fmt::format(" font \",{}\"", s.font(panels.size() > 1 ? 10 : 12)) << "\n"
      << "  set xlabel " << quote(!shared || bottom_row ? print_label(p.xlabel, s, true) : "")
      << "\n"
      << "  set ylabel " << quote(!shared || first_column ? print_label(p.ylabel, s, false) : "")
      << "\n"
      // A panel's own colour bar: its label a little right, clear of the tick labels.
      << "  set cblabel " << quote(print_label(shared ? cblabel : p.cblabel, s, false))
      << (shared ? "" : " offset char 1.5,0") << "\n"
      << "  " << palette_line(p.palette) << "\n"
      << fmt::format("  set cbrange [{}:{}]\n", gnuplot_num(cb_lo), gnuplot_num(cb_hi))
      << "  set format cb \"%g\"\n"
      << fmt::format("  set xrange [{}:{}]\n", gnuplot_num(x_lo), gnuplot_num(x_hi))
      << (p.top_down ? fmt::format("  set yrange [{}:{}]\n", gnuplot_num(y_hi), gnuplot_num(y_lo))
                     : fmt::format("  set yrange [{}:{}]\n", gnuplot_num(y_lo), gnuplot_num(y_hi)))
      << (p.square ? "  set size ratio -1\n" : "  set size noratio\n")
      // Print: four or five tics an axis, the colour bar's too (small maps crowd their labels).
      << (s.print() ? tics_line("xtics", tic_step(x_lo, x_hi, 4)) +
                          tics_line("ytics", tic_step(y_lo, y_hi, 4)) +
                          tics_line("cbtics", tic_step(cb_lo, cb_hi, 4))
                    : std::string())
      << "  set tics out\n  unset key\n  unset grid\n  set offsets 0, 0, 0, 0\n";
    if (shared)
      b << (last ? colour_bar : std::string("  unset colorbox\n"));
    else
      // Room right of the plot for the colour bar's tick labels and its label (automatic
      // margins let them run into the next panel or off the figure).
      b << "  set colorbox\n  set rmargin 12\n";
    b << "  unset arrow\n"
      << "  unset label\n  unset logscale\n  unset y2tics\n  unset y2label\n";
    for (const auto& [x, label] : p.vlines) {
      b << fmt::format("  set arrow from {0}, graph 0 to {0}, graph 1 nohead dt 2 lw 1.5 lc "
                       "rgb '#000000' front\n",
                       gnuplot_num(x));
      if (!label.empty())
        b << fmt::format("  set label {} at {}, graph 1 offset 0.4,-0.9 left tc rgb '#000000' "
                         "front\n",
                         quote(label), gnuplot_num(x));
    }
    b << "  plot " << quote(stem + ".dat") << " index " << k
      << " nonuniform matrix with image notitle\n";
  }
  return render(dir, stem,
                s.text("one block per panel in gnuplot's nonuniform matrix format: first line "
                       "= column count and x of each column, then per row its y and values"),
                data.str());
}

FigureFiles plot_curves(const std::string& dir, const std::string& stem, const std::string& title,
                        const std::vector<CurvesPanel>& panels, int columns, FigureSize size) {
  if (panels.empty()) throw Error("plot_curves: no panels for " + stem);
  Script s;
  s.stem = stem, s.title = title, s.panels = panels.size();
  s.columns = std::max(1, std::min<int>(columns, static_cast<int>(panels.size())));
  s.size = layout_size(size, s.columns);
  const bool print = s.print();
  if (print) make_room_for_keys(s, panels);
  std::ostringstream data;
  size_t block = 0;
  for (size_t k = 0; k < panels.size(); ++k) {
    const CurvesPanel& p = panels[k];
    const bool any_y2 =
        std::any_of(p.curves.begin(), p.curves.end(), [](const Curve& c) { return c.y2; });
    const std::string wrapped_x = print_label(p.xlabel, s, true);
    const double xlabel_px =
        14.0 * (1 + static_cast<double>(std::count(wrapped_x.begin(), wrapped_x.end(), '\n')));
    auto& b = s.body;
    b << "  # panel " << k + 1 << "\n"
      << "  set title " << quote(panel_title(p.title, title, s))
      << fmt::format(" font \",{}\"", s.font(panels.size() > 1 ? 10 : 12)) << "\n"
      << "  set xlabel " << quote(print_label(p.xlabel, s, true)) << "\n"
      << "  set ylabel " << quote(print_label(p.ylabel, s, false, xlabel_px)) << "\n"
      << "  set size noratio\n  unset colorbox\n  unset arrow\n  unset label\n  unset object\n"
      << "  set bmargin -1\n"
      << "  set grid lc rgb '#d0d0d0' dt 3\n  set offsets 0, 0, graph 0.04, graph 0.04\n  set tics "
         "out\n  set autoscale y2\n"
      << (p.yrange ? fmt::format("  set yrange [{}:{}]\n", gnuplot_num(p.yrange->first),
                                 gnuplot_num(p.yrange->second))
                   : std::string("  set autoscale y\n"))
      << (p.xrange ? fmt::format("  set xrange [{}:{}]\n", gnuplot_num(p.xrange->first),
                                 gnuplot_num(p.xrange->second))
                   : std::string("  set autoscale x\n"))
      << (p.logx ? "  set logscale x 2\n" : "  unset logscale x\n");
    if (any_y2)
      b << "  set y2label " << quote(print_label(p.y2label, s, false, xlabel_px))
        << "\n  set y2tics\n  set ytics nomirror\n";
    else
      b << "  unset y2label\n  unset y2tics\n  set ytics mirror\n";
    b << curve_tics(p, s);
    b << key_settings(p, s);
    draw_marks(b, p, print ? ",7" : "");
    b << vertical_lines(p);
    b << "  plot ";
    // A function is clipped to the plot, unlike an arrow.
    if (p.zero_line)
      b << "0 with lines lc rgb '#999999' lw 1 dt 1 notitle"
        << (p.curves.empty() ? "" : ", \\\n       ");
    else if (p.curves.empty())
      b << "NaN notitle";
    std::string lone;  // curves of one finite point, drawn again on top
    for (size_t c = 0; c < p.curves.size(); ++c, ++block) {
      const Curve& cv = p.curves[c];
      if (cv.x.size() != cv.y.size())
        throw Error(fmt::format("curve {} of {}: {} x values but {} y values", cv.label, stem,
                                cv.x.size(), cv.y.size()));
      data << "# panel " << k + 1 << ", curve " << c + 1 << ": " << cv.label << "\n# x y\n";
      for (size_t i = 0; i < cv.x.size(); ++i)
        data << gnuplot_num(cv.x[i]) << ' ' << gnuplot_num(cv.y[i]) << '\n';
      data << "\n\n";
      const size_t colours = std::size(kLineColours), markers = std::size(kPointTypes);
      const size_t line = cv.line >= 0 ? static_cast<size_t>(cv.line) : c;
      const std::string where = quote(stem + ".dat") + fmt::format(" index {} using 1:2", block) +
                                (cv.y2 ? " axes x1y2" : "");
      const std::string marker = fmt::format("pt {}", kPointTypes[line % markers]);
      b << (c ? ", \\\n       " : "") << where
        << (cv.style == CurveStyle::lines         ? " with lines"
            : cv.style == CurveStyle::steps       ? " with histeps"
            : cv.style == CurveStyle::linespoints ? " with linespoints"
                                                  : " with points ps 1.4")
        << (cv.y2
                ? std::string(" lc rgb '#222222' dt 2 lw 2")  // the right-axis metric stands apart
                : fmt::format(" lt {} dt {}{}", line % colours + 1, line / colours + 1,
                              cv.style == CurveStyle::lines || cv.style == CurveStyle::steps
                                  ? std::string()
                                  : " " + marker))
        << " title " << quote(cv.label);
      if (!cv.points.empty()) {
        // The runs behind the curve, in the next data block: small filled circles.
        ++block;
        data << "# panel " << k + 1 << ", curve " << c + 1 << ": " << cv.label
             << ", every run\n# x y\n";
        for (const auto& [x, y] : cv.points)
          data << gnuplot_num(x) << ' ' << gnuplot_num(y) << '\n';
        data << "\n\n";
        b << ", \\\n       " << quote(stem + ".dat") << fmt::format(" index {} using 1:2", block)
          << fmt::format(" with points lt {} pt 7 ps 0.55 notitle", line % colours + 1);
      }
      const auto finite = std::count_if(cv.y.begin(), cv.y.end(), [](double v) { return std::isfinite(v); });
      if (finite == 1 && !cv.y2 && cv.style != CurveStyle::points)
        lone += fmt::format(", \\\n       {} with points lt {} {} ps 2.2 notitle", where,
                            line % colours + 1, marker);
    }
    b << lone;
    b << "\n";
  }
  return render(dir, stem, s.text("one block per curve, two columns x y, in plotting order"),
                data.str());
}

}  // namespace relpos::analysis

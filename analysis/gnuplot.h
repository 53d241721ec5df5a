// Figures drawn by gnuplot (Debian gnuplot-nox, pngcairo, pdfcairo and svg terminals), run as a
// child process. Every figure is written as PNG, PDF and SVG, with two more files beside them
// so a researcher can restyle it: <stem>.dat (the numbers), <stem>.gp (the script;
// `gnuplot <stem>.gp` inside the folder redraws all three).
//
// Plain data in: panels of heatmaps or of curves, no tensors and no run files.
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "analysis/invariance.h"

namespace relpos::analysis {

enum class Palette {
  viridis,    // sequential, for values with a natural zero at one end (probabilities)
  diverging,  // blue-white-red centred at 0, for signed weights (score terms, tables)
};

struct HeatmapPanel {
  std::string title, xlabel, ylabel, cblabel;
  std::vector<double> x;  // coordinate of each column
  std::vector<double> y;  // coordinate of each row
  Matrix values;          // (y.size(), x.size())
  Palette palette = Palette::viridis;
  bool top_down = false;  // first row at the top, as a matrix is printed (query x key maps)
  bool square = false;    // equal scaling of both axes
  // Colour range; unset: the data range (diverging: symmetric around 0).
  std::optional<std::pair<double, double>> cbrange;
  std::vector<std::pair<double, std::string>> vlines = {};  // dashed vertical line at x, label
};

// steps: a piecewise-constant function of integer x (T5's bucketed bias), each value drawn as a
// flat step centred on its x.
enum class CurveStyle { lines, linespoints, points, steps };

struct Curve {
  std::string label;
  std::vector<double> x, y;  // NaN in y leaves a gap
  bool y2 = false;           // drawn against the right-hand axis
  CurveStyle style = CurveStyle::lines;
  // Line style number: colour n mod 10, marker n mod 7 (so the first 70 numbers are distinct
  // pairs), dash pattern n / 10; -1: the curve's place in its panel. Give the same number to
  // the same series in several panels so that it keeps its colour and marker. A curve with a
  // single finite point is drawn again, larger, on top of the others, so no line hides it.
  int line = -1;
  // Every run behind a mean curve, (x, y): small markers of the curve's colour, no legend entry.
  std::vector<std::pair<double, double>> points = {};
};

struct CurvesPanel {
  std::string title, xlabel, ylabel, y2label;
  std::vector<Curve> curves;
  std::vector<std::pair<double, std::string>> vlines;  // dashed vertical line at x, with label
  std::vector<std::pair<double, std::string>> hlines;  // dotted horizontal line at y (left axis)
  // A shaded band over x in [first, second], behind the curves, labelled at its top
  // (the trained distances of a relative-weight curve).
  std::optional<std::pair<double, double>> band;
  std::string band_label;
  std::optional<std::pair<double, double>> xrange, yrange;
  bool logx = false;
  // gnuplot key position ("top left"), "off", "below" (outside, under the plot, in rows), or
  // empty: outside right
  std::string key;
  bool zero_line = false;  // a thin horizontal line at y = 0
};

// `figures.size`: screen (the figure's own size: PNG pixels, the PDF at 100 pixels an inch), or
// a paper's text width — column about 3.3 in, page about 6.9 in — with fonts of 8 pt and more
// in the PDF at that width, a PNG at 300 dots an inch, the SVG at the same layout.
enum class FigurePreset { screen, column, page };
// "screen" | "column" | "page"; anything else: ConfigError naming `key` (figures.size).
FigurePreset figure_preset(const std::string& name, const std::string& key = "figures.size");
const char* preset_name(FigurePreset p);

struct FigureSize {
  int width = 900;  // PNG pixels; the PDF gets width/100 by height/100 inches
  int height = 650;
  // A print preset replaces width and height by the preset's width (a grid of more than one
  // column of panels: the page width, as it cannot fit a column) and a height from the
  // figure's aspect ratio.
  FigurePreset preset = FigurePreset::screen;
};

// The layout canvas of a figure drawn with `columns` columns of panels: `size` itself on screen,
// else about 330 (column) or 690 (page) layout pixels wide (100 an inch, 10-pixel fonts).
FigureSize layout_size(const FigureSize& size, int columns);

struct FigureFiles {
  std::string png, pdf, svg, script, data;
};

// The colour of line style n (Curve::line): "#1f77b4", ... (10 colours, repeating).
std::string line_colour(int line);

// Block means of f×f cells (NaN cells left out of a block's mean), f the smallest factor that
// brings both axes to at most max_cells; coordinates become the blocks' mean coordinates and
// the title says "(means of f×f blocks)". The panel itself when it is small enough.
HeatmapPanel downsample(const HeatmapPanel& p, int64_t max_cells);

// Draws the panels in a grid of `columns` columns with an overall title (used when there is
// more than one panel). Panels are downsampled to at most 256 cells per axis (128 in a grid):
// finer detail is not visible and would make the data file large (a 512×512 map per head).
// one_colour_bar: the panels share one colour scale (Error when their ranges or palettes
// differ), drawn as a single bar right of the grid; axis labels on the outer panels only.
// Throws Error when gnuplot is missing or fails.
FigureFiles plot_heatmaps(const std::string& dir, const std::string& stem, const std::string& title,
                          const std::vector<HeatmapPanel>& panels, int columns = 1,
                          FigureSize size = {}, bool one_colour_bar = false);
FigureFiles plot_curves(const std::string& dir, const std::string& stem, const std::string& title,
                        const std::vector<CurvesPanel>& panels, int columns = 1,
                        FigureSize size = {});

// diverging when the values have both signs, else viridis.
Palette palette_for(const Matrix& m);

// gnuplot's path: $RELPOS_GNUPLOT, else `gnuplot` on PATH; empty when there is none.
std::string find_gnuplot();
// Throws Error (with the install hint) when find_gnuplot() finds nothing.
std::string require_gnuplot();

}  // namespace relpos::analysis

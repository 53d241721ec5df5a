// Figures drawn by gnuplot (Debian gnuplot-nox, pngcairo and pdfcairo terminals), run as a
// child process. Every figure leaves three files next to its PNG and PDF so a researcher can
// restyle it: <stem>.dat (the numbers), <stem>.gp (the script; `gnuplot <stem>.gp` inside the
// folder redraws both PNG and PDF).
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
  std::optional<std::pair<double, double>> xrange, yrange;
  bool logx = false;
  // gnuplot key position ("top left"), "off", "below" (outside, under the plot, in rows), or
  // empty: outside right
  std::string key;
  bool zero_line = false;  // a thin horizontal line at y = 0
};

struct FigureSize {
  int width = 900;  // PNG pixels; the PDF gets width/100 by height/100 inches
  int height = 650;
};

struct FigureFiles {
  std::string png, pdf, script, data;
};

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

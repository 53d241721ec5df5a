#include "analysis/tensorboard_events.h"

#include <cmath>
#include <filesystem>
#include <fstream>
#include <iterator>

#include "core/io/event_file.h"
#include "core/io/run_paths.h"

namespace relpos::analysis {
namespace fs = std::filesystem;

namespace {

// The figure files as image events; a figure whose PNG is missing (not drawn) is left out.
void write_figure_events(EventFileWriter& file, const std::vector<FigureInfo>& figures,
                         int64_t step) {
  for (const auto& f : figures) {
    std::ifstream in(f.png, std::ios::binary);
    if (!in) continue;
    std::string png((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    const std::string tag = "figures/" + fs::path(f.png).stem().string();
    file.write(image_event(unix_time_now(), step, tag, png_image(std::move(png), f.png)));
  }
}

}  // namespace

std::string write_analysis_events(const RunResult& r, const std::string& dir, int64_t figure_step) {
  const std::string folder = run_analysis_events_dir(dir);
  std::error_code ec;
  for (const auto& old : event_files(folder)) fs::remove(old, ec);
  EventFileWriter file(folder, "relpos-analyze");
  file.write(session_start_event(unix_time_now(), 0));
  for (size_t k = 0; k < r.steps.size(); ++k) {
    std::vector<std::pair<std::string, float>> values;
    for (const auto& [quantity, series] : r.invariance)
      if (k < series.size() && std::isfinite(series[k]))
        values.emplace_back("invariance/" + quantity, static_cast<float>(series[k]));
    if (!values.empty()) file.write(scalars_event(unix_time_now(), r.steps[k], values));
  }
  if (figure_step >= 0) write_figure_events(file, r.figures, figure_step);
  return file.path();
}

}  // namespace relpos::analysis

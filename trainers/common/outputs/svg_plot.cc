#include "trainers/common/outputs/svg_plot.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "trainers/common/outputs/output_files.h"

namespace ringlet::trainers {
namespace {

constexpr double kWidth = 640, kHeight = 400;
constexpr double kLeft = 60, kRight = 150, kTop = 40, kBottom = 50;

std::string Num(double v) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.4g", v);
  return buf;
}

// A "nice" tick step (1, 2 or 5 times a power of ten) for about 5 ticks.
double TickStep(double span) {
  if (span <= 0) return 1;
  const double raw = span / 5;
  const double p = std::pow(10, std::floor(std::log10(raw)));
  for (double m : {1.0, 2.0, 5.0}) {
    if (raw <= m * p) return m * p;
  }
  return 10 * p;
}

bool Plottable(const Series& s, size_t i) {
  return std::isfinite(s.x[i]) && std::isfinite(s.y[i]);
}

}  // namespace

std::string SvgEscape(const std::string& text) {
  std::string out;
  for (char c : text) {
    if (c == '<') {
      out += "&lt;";
    } else if (c == '>') {
      out += "&gt;";
    } else if (c == '&') {
      out += "&amp;";
    } else if (c == '"') {
      out += "&quot;";
    } else {
      out += c;
    }
  }
  return out;
}

std::string LinePlotSvg(const std::string& title, const std::string& x_label,
                        const std::string& y_label,
                        const std::vector<Series>& series) {
  // Points with an infinite or NaN coordinate (a diverged loss) are left
  // out: they have no place on an axis, and would make its ticks endless.
  double x_min = 1e300, x_max = -1e300, y_max = 0;
  for (const Series& s : series) {
    for (size_t i = 0; i < s.x.size() && i < s.y.size(); ++i) {
      if (!Plottable(s, i)) continue;
      x_min = std::min(x_min, s.x[i]);
      x_max = std::max(x_max, s.x[i]);
      y_max = std::max(y_max, s.y[i]);
    }
  }
  if (x_min > x_max) x_min = 0, x_max = 1;
  // One epoch: its point in the middle, not at the left edge of 1..2.
  const bool single = x_max == x_min;
  const double first_tick = std::ceil(x_min), last_tick = std::floor(x_max);
  if (single) x_min -= 0.5, x_max += 0.5;
  const double y_step = TickStep(y_max > 0 ? y_max : 1);
  const double rounded_up = std::ceil(y_max / y_step) * y_step;
  // Near the largest double, rounding up would overflow.
  y_max = std::max(y_step, std::isfinite(rounded_up) ? rounded_up : y_max);
  // At most a dozen ticks on either axis, whatever the values.
  const int y_ticks =
      static_cast<int>(std::min(12.0, std::floor(y_max / y_step + 1e-9)));
  const double plot_w = kWidth - kLeft - kRight,
               plot_h = kHeight - kTop - kBottom;
  auto px = [&](double x) {
    return kLeft + (x - x_min) / (x_max - x_min) * plot_w;
  };
  auto py = [&](double y) { return kTop + plot_h - y / y_max * plot_h; };

  std::string svg = "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" +
                    Num(kWidth) + "\" height=\"" + Num(kHeight) +
                    "\" font-family=\"sans-serif\" font-size=\"12\">\n";
  svg += "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n";
  svg += "<text x=\"" + Num(kWidth / 2) +
         "\" y=\"22\" text-anchor=\"middle\" "
         "font-size=\"14\">" +
         SvgEscape(title) + "</text>\n";
  // Grid and y ticks.
  for (int tick = 0; tick <= y_ticks; ++tick) {
    const double y = tick * y_step;
    svg += "<line x1=\"" + Num(kLeft) + "\" y1=\"" + Num(py(y)) + "\" x2=\"" +
           Num(kLeft + plot_w) + "\" y2=\"" + Num(py(y)) +
           "\" stroke=\"#ddd\"/>\n";
    svg += "<text x=\"" + Num(kLeft - 6) + "\" y=\"" + Num(py(y) + 4) +
           "\" text-anchor=\"end\">" + Num(y) + "</text>\n";
  }
  // x ticks at whole numbers: each one while they fit, else nice steps
  // and the last value, so the last epoch is always labelled.
  std::vector<double> x_ticks;
  const double span = last_tick - first_tick;
  const double x_step =
      span <= 20 ? 1.0 : std::max(1.0, std::round(TickStep(span)));
  for (int tick = 0; tick <= 21; ++tick) {
    const double x = first_tick + tick * x_step;
    if (!(x <= last_tick)) break;
    x_ticks.push_back(x);
  }
  if (!x_ticks.empty() && x_ticks.back() < last_tick) {
    // Too close to the previous label: the last one replaces it.
    if (last_tick - x_ticks.back() < x_step / 2) x_ticks.pop_back();
    x_ticks.push_back(last_tick);
  }
  for (double x : x_ticks) {
    svg += "<text x=\"" + Num(px(x)) + "\" y=\"" + Num(kTop + plot_h + 18) +
           "\" text-anchor=\"middle\">" + Num(x) + "</text>\n";
  }
  svg += "<rect x=\"" + Num(kLeft) + "\" y=\"" + Num(kTop) + "\" width=\"" +
         Num(plot_w) + "\" height=\"" + Num(plot_h) +
         "\" fill=\"none\" stroke=\"black\"/>\n";
  svg += "<text x=\"" + Num(kLeft + plot_w / 2) + "\" y=\"" +
         Num(kHeight - 12) + "\" text-anchor=\"middle\">" + SvgEscape(x_label) +
         "</text>\n";
  const double label_y = kTop + plot_h / 2;
  svg += "<text x=\"16\" y=\"" + Num(label_y) +
         "\" text-anchor=\"middle\" transform=\"rotate(-90 16 " + Num(label_y) +
         ")\">" + SvgEscape(y_label) + "</text>\n";
  // Curves with a marker per point, and the legend.
  double legend_y = kTop + 10;
  for (const Series& s : series) {
    std::string points;
    for (size_t i = 0; i < s.x.size() && i < s.y.size(); ++i) {
      if (!Plottable(s, i)) continue;
      points += Num(px(s.x[i])) + "," + Num(py(s.y[i])) + " ";
      svg += "<circle cx=\"" + Num(px(s.x[i])) + "\" cy=\"" + Num(py(s.y[i])) +
             "\" r=\"3\" fill=\"" + s.color + "\"/>\n";
    }
    svg += "<polyline points=\"" + points + "\" fill=\"none\" stroke=\"" +
           s.color + "\" stroke-width=\"2\"/>\n";
    const double lx = kLeft + plot_w + 15;
    svg += "<line x1=\"" + Num(lx) + "\" y1=\"" + Num(legend_y) + "\" x2=\"" +
           Num(lx + 20) + "\" y2=\"" + Num(legend_y) + "\" stroke=\"" +
           s.color + "\" stroke-width=\"2\"/>\n";
    svg += "<text x=\"" + Num(lx + 26) + "\" y=\"" + Num(legend_y + 4) + "\">" +
           SvgEscape(s.name) + "</text>\n";
    legend_y += 20;
  }
  svg += "</svg>\n";
  return svg;
}

void WriteTrainingPlot(const std::string& path, const std::string& title,
                       const std::vector<EpochMetrics>& epochs) {
  Series loss{"train loss", "#1f77b4", {}, {}};
  Series train{"train acc", "#ff7f0e", {}, {}};
  Series test{"test acc", "#2ca02c", {}, {}};
  for (const EpochMetrics& m : epochs) {
    for (Series* s : {&loss, &train, &test}) s->x.push_back(m.epoch);
    loss.y.push_back(m.loss);
    train.y.push_back(m.train_acc);
    test.y.push_back(m.test_acc);
  }
  WriteOutputFile(path,
                  LinePlotSvg(title, "epoch", "loss (per image) and accuracy",
                              {loss, train, test}),
                  "--plot_out");
}

}  // namespace ringlet::trainers

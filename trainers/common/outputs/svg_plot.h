// The training curves as an SVG image (any browser opens it): loss, train
// accuracy and test accuracy per epoch on one set of axes, as d2l's
// Animator draws them.
#ifndef RINGLET_TRAINERS_COMMON_OUTPUTS_SVG_PLOT_H_
#define RINGLET_TRAINERS_COMMON_OUTPUTS_SVG_PLOT_H_

#include <string>
#include <vector>

#include "trainers/common/outputs/metrics.h"

namespace ringlet::trainers {

struct Series {
  std::string name;
  std::string color;  // An SVG colour, e.g. "#1f77b4".
  std::vector<double> x, y;
};

// `text` with <, >, & and " written as SVG (XML) entities.
std::string SvgEscape(const std::string& text);

// A line plot with axes, labels, ticks, a legend and a title, in SVG. x
// ticks are whole numbers (epochs): every one while 20 or fewer fit, else
// about 5 plus the last; a single x value sits in the middle of its axis.
std::string LinePlotSvg(const std::string& title, const std::string& x_label,
                        const std::string& y_label,
                        const std::vector<Series>& series);

// The three curves of a run; writes `path`, throwing std::runtime_error
// naming it when it cannot.
void WriteTrainingPlot(const std::string& path, const std::string& title,
                       const std::vector<EpochMetrics>& epochs);

}  // namespace ringlet::trainers

#endif  // RINGLET_TRAINERS_COMMON_OUTPUTS_SVG_PLOT_H_

#include "trainers/common/outputs/confusion_report.h"

#include <sys/stat.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <numeric>

#include "trainers/common/outputs/svg_plot.h"

namespace ringlet::trainers {
namespace {

std::string Fixed(double v, int digits) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.*f", digits, v);
  return buf;
}

}  // namespace

std::vector<std::string> ClassNames(int64_t classes,
                                    const std::vector<std::string>& names) {
  if (static_cast<int64_t>(names.size()) == classes) return names;
  std::vector<std::string> numbers;
  for (int64_t k = 0; k < classes; ++k) numbers.push_back(std::to_string(k));
  return numbers;
}

std::string ConfusionJsonLine(const parallel::ConfusionMatrix& m,
                              const std::vector<std::string>& names,
                              const std::string& split, int epoch) {
  nlohmann::json matrix = nlohmann::json::array();
  for (int64_t t = 0; t < m.classes; ++t) {
    nlohmann::json row = nlohmann::json::array();
    for (int64_t p = 0; p < m.classes; ++p) row.push_back(m.at(t, p));
    matrix.push_back(std::move(row));
  }
  nlohmann::json accuracy = nlohmann::json::array();
  for (double a : m.PerClassAccuracy()) {
    accuracy.push_back(a < 0 ? nlohmann::json(nullptr) : nlohmann::json(a));
  }
  nlohmann::json record;
  record["split"] = split;
  record["epoch"] = epoch;
  record["classes"] = ClassNames(m.classes, names);
  record["matrix"] = std::move(matrix);
  record["per_class_accuracy"] = std::move(accuracy);
  return nlohmann::json{{"confusion", std::move(record)}}.dump();
}

std::string LowestClassesLine(const parallel::ConfusionMatrix& m,
                              const std::vector<std::string>& names,
                              const std::string& split, int shown) {
  const std::vector<double> accuracy = m.PerClassAccuracy();
  std::vector<int64_t> order;
  for (int64_t k = 0; k < m.classes; ++k) {
    if (accuracy[k] >= 0) order.push_back(k);
  }
  if (order.size() < 2) return "";
  std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
    return accuracy[a] < accuracy[b];
  });
  const std::vector<std::string> label = ClassNames(m.classes, names);
  std::string line = "lowest per-class " + split + " acc:";
  const size_t n = std::min<size_t>(order.size(), std::max(1, shown));
  for (size_t i = 0; i < n; ++i) {
    line += (i == 0 ? " " : ", ") + label[order[i]] + " " +
            Fixed(accuracy[order[i]], 2);
  }
  return line;
}

std::string ConfusionSvg(const parallel::ConfusionMatrix& m,
                         const std::vector<std::string>& names,
                         const std::string& title) {
  const std::vector<std::string> label = ClassNames(m.classes, names);
  const std::vector<double> accuracy = m.PerClassAccuracy();
  const int64_t k = std::max<int64_t>(m.classes, 1);
  const bool numbers = k <= 30;
  const double cell = numbers ? 36 : std::max(2.0, 720.0 / k);
  const double left = numbers ? 130 : 40, top = numbers ? 150 : 60;
  const double width = left + cell * k + 70, height = top + cell * k + 40;
  auto num = [](double v) { return Fixed(v, 1); };
  std::string svg = "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" +
                    num(width) + "\" height=\"" + num(height) +
                    "\" font-family=\"sans-serif\" font-size=\"11\">\n";
  svg += "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n";
  svg += "<text x=\"" + num(width / 2) +
         "\" y=\"18\" text-anchor=\"middle\" font-size=\"14\">" +
         SvgEscape(title) + "</text>\n";
  svg += "<text x=\"" + num(left + cell * k / 2) + "\" y=\"" + num(top - 8) +
         "\" text-anchor=\"middle\" font-size=\"10\" dy=\"" +
         (numbers ? "-100" : "-10") + "\">predicted</text>\n";
  svg += "<text x=\"12\" y=\"" + num(top + cell * k / 2) +
         "\" transform=\"rotate(-90 12 " + num(top + cell * k / 2) +
         ")\" text-anchor=\"middle\" font-size=\"10\">true class</text>\n";
  for (int64_t t = 0; t < m.classes; ++t) {
    int64_t row = 0;
    for (int64_t p = 0; p < m.classes; ++p) row += m.at(t, p);
    for (int64_t p = 0; p < m.classes; ++p) {
      const double share = row > 0 ? static_cast<double>(m.at(t, p)) / row : 0;
      // White to dark blue by share of the row.
      const int shade = static_cast<int>(std::lround(255 * (1 - share)));
      char fill[16];
      std::snprintf(fill, sizeof(fill), "#%02x%02xff",
                    std::clamp(shade, 0, 255), std::clamp(shade, 0, 255));
      const double x = left + cell * p, y = top + cell * t;
      svg += "<rect x=\"" + num(x) + "\" y=\"" + num(y) + "\" width=\"" +
             num(cell) + "\" height=\"" + num(cell) + "\" fill=\"" + fill +
             "\" stroke=\"#ddd\"/>\n";
      if (numbers) {
        svg += "<text x=\"" + num(x + cell / 2) + "\" y=\"" +
               num(y + cell / 2 + 4) + "\" text-anchor=\"middle\" fill=\"" +
               (share > 0.5 ? "white" : "black") + "\">" +
               std::to_string(m.at(t, p)) + "</text>\n";
      }
    }
    if (numbers) {
      svg += "<text x=\"" + num(left - 6) + "\" y=\"" +
             num(top + cell * t + cell / 2 + 4) + "\" text-anchor=\"end\">" +
             SvgEscape(label[t]) + "</text>\n";
      svg += "<text x=\"" + num(left + cell * k + 6) + "\" y=\"" +
             num(top + cell * t + cell / 2 + 4) + "\">" +
             (accuracy[t] < 0 ? "-" : Fixed(accuracy[t], 2)) + "</text>\n";
    }
  }
  if (numbers) {
    svg += "<text x=\"" + num(left + cell * k + 6) + "\" y=\"" + num(top - 6) +
           "\">acc</text>\n";
    for (int64_t p = 0; p < m.classes; ++p) {
      const double x = left + cell * p + cell / 2, y = top - 6;
      svg += "<text x=\"" + num(x) + "\" y=\"" + num(y) +
             "\" transform=\"rotate(-60 " + num(x) + " " + num(y) + ")\">" +
             SvgEscape(label[p]) + "</text>\n";
    }
  }
  svg += "</svg>\n";
  return svg;
}

std::string ConfusionSvgPath(const std::string& plot_out) {
  struct stat st;
  if (plot_out.empty() || plot_out == "-" || plot_out.rfind("/dev/", 0) == 0 ||
      (::stat(plot_out.c_str(), &st) == 0 && !S_ISREG(st.st_mode))) {
    return "";
  }
  const std::string ending = ".svg";
  if (plot_out.size() > ending.size() &&
      plot_out.compare(plot_out.size() - ending.size(), ending.size(),
                       ending) == 0) {
    return plot_out.substr(0, plot_out.size() - ending.size()) +
           "_confusion.svg";
  }
  return plot_out + "_confusion.svg";
}

}  // namespace ringlet::trainers

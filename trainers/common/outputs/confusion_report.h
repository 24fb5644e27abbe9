// A classifier's confusion matrix for people and programs: a record of
// the metrics file (--metrics_out), a heat map beside the training plot
// (--plot_out), and the line naming the classes it gets wrong most.
#ifndef RINGLET_TRAINERS_COMMON_OUTPUTS_CONFUSION_REPORT_H_
#define RINGLET_TRAINERS_COMMON_OUTPUTS_CONFUSION_REPORT_H_

#include <string>
#include <vector>

#include "parallel/confusion.h"

namespace ringlet::trainers {

// `names` when it has one name per class, else "0", "1", ...
std::vector<std::string> ClassNames(int64_t classes,
                                    const std::vector<std::string>& names);

// {"confusion": {"split": "test", "epoch": 3, "classes": [...], "matrix":
// [[...], ...], "per_class_accuracy": [...]}}: rows are true classes,
// columns predictions; a class without samples has accuracy null.
std::string ConfusionJsonLine(const parallel::ConfusionMatrix& m,
                              const std::vector<std::string>& names,
                              const std::string& split, int epoch);

// "lowest per-class test acc: shirt 0.61, pullover 0.79, coat 0.81" (the
// `shown` lowest, classes without samples left out); "" for one class.
std::string LowestClassesLine(const parallel::ConfusionMatrix& m,
                              const std::vector<std::string>& names,
                              const std::string& split, int shown = 3);

// The matrix as an SVG heat map: a cell's shade is its share of its row
// (true class), its count written in it while the classes fit (30 or
// fewer), each row's accuracy at its end.
std::string ConfusionSvg(const parallel::ConfusionMatrix& m,
                         const std::vector<std::string>& names,
                         const std::string& title);

// Where the heat map goes beside the plot: "runs/curves.svg" ->
// "runs/curves_confusion.svg" (".svg" added when the plot has another
// ending); "" when the plot goes to a stream (/dev/stdout, a FIFO, "-") or
// nowhere.
std::string ConfusionSvgPath(const std::string& plot_out);

}  // namespace ringlet::trainers

#endif  // RINGLET_TRAINERS_COMMON_OUTPUTS_CONFUSION_REPORT_H_

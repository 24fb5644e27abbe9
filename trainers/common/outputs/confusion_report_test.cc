// The confusion record reads back as the matrix it came from, the lowest
// classes line names them in order, the heat map holds a cell per pair
// and escapes names, and the heat map's path sits beside the plot's.
#include "trainers/common/outputs/confusion_report.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace ringlet::trainers {
namespace {

// 3 classes: "cat" 3 of 4 right, "dog" 1 of 2, "<bird>" none seen.
parallel::ConfusionMatrix Matrix() {
  return parallel::ConfusionOf(3, {3, 1, 0, 1, 1, 0, 0, 0, 0});
}

const std::vector<std::string> kNames = {"cat", "dog", "<bird>"};

TEST(ConfusionReport, TheJsonRecordHoldsTheMatrixAndPerClassAccuracy) {
  const nlohmann::json j =
      nlohmann::json::parse(ConfusionJsonLine(Matrix(), kNames, "test", 4));
  const nlohmann::json& c = j.at("confusion");
  EXPECT_EQ(c.at("split"), "test");
  EXPECT_EQ(c.at("epoch"), 4);
  EXPECT_EQ(c.at("classes"), nlohmann::json(kNames));
  EXPECT_EQ(c.at("matrix"), nlohmann::json::parse("[[3,1,0],[1,1,0],[0,0,0]]"));
  EXPECT_EQ(c.at("per_class_accuracy"),
            nlohmann::json::parse("[0.75,0.5,null]"));
}

TEST(ConfusionReport, NamesFallBackToNumbersAndTheLowestComeFirst) {
  EXPECT_EQ(ClassNames(3, {"a"}), (std::vector<std::string>{"0", "1", "2"}));
  EXPECT_EQ(LowestClassesLine(Matrix(), kNames, "test"),
            "lowest per-class test acc: dog 0.50, cat 0.75");
  EXPECT_EQ(LowestClassesLine(Matrix(), {}, "validation", 1),
            "lowest per-class validation acc: 1 0.50");
  EXPECT_EQ(LowestClassesLine(parallel::ConfusionOf(1, {5}), {}, "test"), "");
}

TEST(ConfusionReport, TheHeatMapHasACellPerPairAndEscapedNames) {
  const std::string svg = ConfusionSvg(Matrix(), kNames, "a & b");
  size_t cells = 0;
  for (size_t at = svg.find("<rect x="); at != std::string::npos;
       at = svg.find("<rect x=", at + 1)) {
    ++cells;
  }
  EXPECT_EQ(cells, 9u);
  EXPECT_NE(svg.find("&lt;bird&gt;"), std::string::npos);
  EXPECT_EQ(svg.find("<bird>"), std::string::npos);
  EXPECT_NE(svg.find("a &amp; b"), std::string::npos);
  EXPECT_NE(svg.find(">0.75<"), std::string::npos);  // cat's row accuracy
  // 100 classes: no numbers in the cells, still a cell each.
  const std::string big = ConfusionSvg(
      parallel::ConfusionOf(100, std::vector<double>(10000, 1.0)), {}, "t");
  cells = 0;
  for (size_t at = big.find("<rect x="); at != std::string::npos;
       at = big.find("<rect x=", at + 1)) {
    ++cells;
  }
  EXPECT_EQ(cells, 10000u);
}

TEST(ConfusionReport, TheHeatMapSitsBesideThePlot) {
  EXPECT_EQ(ConfusionSvgPath("runs/curves.svg"), "runs/curves_confusion.svg");
  EXPECT_EQ(ConfusionSvgPath("plot"), "plot_confusion.svg");
  EXPECT_EQ(ConfusionSvgPath("/dev/stdout"), "");
  const std::string fifo = ::testing::TempDir() + "/plot_fifo";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  EXPECT_EQ(ConfusionSvgPath(fifo), "");
  EXPECT_EQ(ConfusionSvgPath(""), "");
}

}  // namespace
}  // namespace ringlet::trainers

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <limits>
#include <sstream>
#include <string>

#include "gtest/gtest.h"
#include "trainers/common/outputs/metrics.h"
#include "trainers/common/outputs/progress.h"
#include "trainers/common/outputs/svg_plot.h"

namespace ringlet::trainers {
namespace {

TEST(ProgressTest, LogModePrintsATenthAtATimeWithRateAndEta) {
  std::ostringstream out;
  double now = 100;
  ProgressBar bar(out, /*terminal=*/false, "epoch 2/10", 1000,
                  [&now] { return now; });
  EXPECT_EQ(out.str(), "epoch 2/10 [....................] 0/1,000\n");
  out.str("");
  now = 101;
  bar.Update(50);  // First batch: printed at once.
  now = 102;
  bar.Update(100);  // Less than a tenth more: quiet.
  now = 103;
  bar.Update(150);  // A tenth more: printed.
  bar.Finish();
  EXPECT_EQ(out.str(),
            "epoch 2/10 [#...................] 50/1,000 50 img/s ETA 0:19\n"
            "epoch 2/10 [###.................] 150/1,000 50 img/s ETA 0:17\n");
}

TEST(ProgressTest, LogModePrintsEveryThirtySecondsWhenSlow) {
  std::ostringstream out;
  double now = 0;
  ProgressBar bar(out, false, "epoch 1/1", 100000, [&now] { return now; });
  bar.Update(10);
  now = 31;
  bar.Update(20);
  now = 40;
  bar.Update(30);
  const std::string s = out.str();
  EXPECT_EQ(std::count(s.begin(), s.end(), '\n'), 3);  // Start, 10, 31 s.
}

TEST(ProgressTest, TerminalModeRedrawsInPlaceAndClears) {
  std::ostringstream out;
  double now = 0;
  ProgressBar bar(out, /*terminal=*/true, "epoch 1/3", 7200,
                  [&now] { return now; });
  now = 3600;
  bar.Update(3600);
  bar.Finish();
  const std::string s = out.str();
  EXPECT_EQ(s.find('\n'), std::string::npos);
  EXPECT_NE(s.find("\repoch 1/3 [....................] 0/7,200"),
            std::string::npos);
  EXPECT_NE(s.find("\repoch 1/3 [##########..........] 3,600/7,200 1 img/s "
                   "ETA 1:00:00"),
            std::string::npos);
  EXPECT_EQ(s.back(), '\r');  // Cleared for the epoch line.
}

TEST(ProgressTest, ShowsTheRunningLossAndTheRunsEta) {
  std::ostringstream out;
  double now = 0;
  ProgressBar bar(out, /*terminal=*/false, "epoch 1/3", 1000,
                  [&now] { return now; });
  bar.set_seconds_after([](double rate) { return rate * 2; });  // 100 s.
  now = 10;
  bar.Update(500, 0.51234);
  EXPECT_NE(out.str().find("epoch 1/3 [##########..........] 500/1,000 50 "
                           "img/s loss 0.512 ETA 0:10 (run 1:50)\n"),
            std::string::npos)
      << out.str();
}

TEST(ProgressTest, ShowsTheShareOfTimeInCommunication) {
  std::ostringstream out;
  double now = 0;
  ProgressBar bar(out, /*terminal=*/false, "epoch 1/1", 1000,
                  [&now] { return now; });
  now = 10;
  bar.Update(500, 0.5, 0.1249);
  EXPECT_NE(out.str().find("500/1,000 50 img/s loss 0.500 comm 12% ETA 0:10\n"),
            std::string::npos)
      << out.str();
}

TEST(ProgressTest, EvaluationHasItsOwnLabelAndNoLoss) {
  std::ostringstream out;
  double now = 0;
  ProgressBar bar(out, /*terminal=*/false, "eval 1/3", 200,
                  [&now] { return now; });
  now = 2;
  bar.Update(100);
  EXPECT_EQ(out.str(),
            "eval 1/3 [....................] 0/200\n"
            "eval 1/3 [##########..........] 100/200 50 img/s ETA 0:02\n");
}

TEST(ProgressTest, FormatsDurations) {
  EXPECT_EQ(FormatDuration(0), "0:00");
  EXPECT_EQ(FormatDuration(65.4), "1:05");
  EXPECT_EQ(FormatDuration(3723), "1:02:03");
}

TEST(MetricsTest, JsonLineRoundTripsWithTheIssuesKeys) {
  EpochMetrics m{3, 0.5, 0.81, 0.79, 12.5, 1.5, 4800, 0.04, 0.05};
  const std::string line = ToJsonLine(m);
  for (const char* key :
       {"\"epoch\":3", "\"loss\":", "\"train_acc\":", "\"test_acc\":",
        "\"seconds\":", "\"eval_seconds\":1.5",
        "\"images_per_sec\":", "\"comm_fraction\":", "\"lr\":0.05"}) {
    EXPECT_NE(line.find(key), std::string::npos) << key << " in " << line;
  }
  const EpochMetrics back = FromJsonLine(line);
  EXPECT_EQ(back.epoch, 3);
  EXPECT_DOUBLE_EQ(back.test_acc, 0.79);
  EXPECT_DOUBLE_EQ(back.comm_fraction, 0.04);
  EXPECT_DOUBLE_EQ(back.eval_seconds, 1.5);
  EXPECT_DOUBLE_EQ(back.lr, 0.05);
  EXPECT_THROW(FromJsonLine("{\"epoch\":1}"), std::invalid_argument);
  // Lines of earlier versions have no eval_seconds.
  EXPECT_EQ(FromJsonLine("{\"epoch\":1,\"loss\":1,\"train_acc\":0,"
                         "\"test_acc\":0,\"seconds\":1,\"images_per_sec\":1,"
                         "\"comm_fraction\":0}")
                .eval_seconds,
            0);
  EXPECT_EQ(EpochLine(m, 10),
            "epoch 3/10: loss 0.500, train acc 0.810, test acc 0.790, 12.5 s, "
            "4800 img/s, comm 4.0% (0.0% exposed)");
  m.comm_exposed_fraction = 0.01;
  EXPECT_DOUBLE_EQ(FromJsonLine(ToJsonLine(m)).comm_exposed_fraction, 0.01);
  EXPECT_NE(EpochLine(m, 10).find("comm 4.0% (1.0% exposed)"),
            std::string::npos);
}

TEST(MetricsTest, CsvHasAHeaderAndARowPerEpochInShortestNumbers) {
  const std::string csv =
      ToCsv({{1, 0.5, 0.8, 0.75, 10, 2, 6000, 0.1, 0.2},
             {2, 0.25, 0.9, 0.85, 11, 2, 5500, 0.1, 0.1015}});
  EXPECT_EQ(csv.substr(0, csv.find('\n')),
            "epoch,loss,train_acc,test_acc,seconds,eval_seconds,"
            "images_per_sec,comm_fraction,lr,val_acc");
  EXPECT_EQ(std::count(csv.begin(), csv.end(), '\n'), 3);
  // Not 0.90000000000000002 nor 0.10150000000000001.
  EXPECT_NE(csv.find("\n2,0.25,0.9,0.85,11,2,5500,0.1,0.1015,\n"),
            std::string::npos)
      << csv;
}

TEST(MetricsTest, ValidationAccuracyAppearsOnlyWhenHeldOut) {
  EpochMetrics m{2, 0.5, 0.81, 0.79, 12.5, 1.5, 4800, 0.04, 0.05};
  EXPECT_NE(ToJsonLine(m).find("\"val_acc\":null"), std::string::npos);
  EXPECT_EQ(FromJsonLine(ToJsonLine(m)).val_acc, -1);
  EXPECT_EQ(EpochLine(m, 10).find("val acc"), std::string::npos);
  m.val_acc = 0.75;
  EXPECT_DOUBLE_EQ(FromJsonLine(ToJsonLine(m)).val_acc, 0.75);
  EXPECT_EQ(EpochLine(m, 10),
            "epoch 2/10: loss 0.500, train acc 0.810, val acc 0.750, test acc "
            "0.790, 12.5 s, 4800 img/s, comm 4.0% (0.0% exposed)");
  EXPECT_NE(ToCsv({m}).find(",0.05,0.75\n"), std::string::npos) << ToCsv({m});
  const StepEval e{2, 300, "validation", 0.8125, 6000, 1.25};
  EXPECT_EQ(EvalLine(e),
            "step 300 (epoch 2): validation acc 0.812 on 6000 images, 1.2 s");
  EXPECT_EQ(ToJsonLine(e),
            "{\"eval\":{\"epoch\":2,\"step\":300,\"split\":"
            "\"validation\",\"accuracy\":0.8125,\"images\":6000,"
            "\"seconds\":1.25}}");
}

TEST(MetricsTest, FormatNumberIsTheShortestTextThatReadsBack) {
  for (double v : {0.1, 0.1015, 1.0 / 3, 1e-30, 123456789.125, -2.5, 0.0}) {
    const std::string text = FormatNumber(v);
    EXPECT_EQ(std::strtod(text.c_str(), nullptr), v) << text;
  }
  EXPECT_EQ(FormatNumber(0.1015), "0.1015");
  EXPECT_EQ(FormatNumber(1.0 / 3), "0.3333333333333333");
  EXPECT_EQ(FormatNumber(6000), "6000");
  EXPECT_EQ(FormatNumber(1e-30), "1e-30");
}

TEST(MetricsTest, TheRunLineComesFirst) {
  const std::string path =
      std::string(std::getenv("TEST_TMPDIR")) + "/run.jsonl";
  MetricsFile file(path, {}, "{\"run\":{\"--lr\":\"0.1\"}}");
  file.Append({1, 0.5, 0.8, 0.75, 10, 2, 6000, 0.1, 0.1});
  std::ifstream in(path);
  std::string first, second;
  std::getline(in, first);
  std::getline(in, second);
  EXPECT_EQ(first, "{\"run\":{\"--lr\":\"0.1\"}}");
  EXPECT_EQ(FromJsonLine(second).epoch, 1);
}

TEST(MetricsTest, UnwritableFileIsAClearError) {
  try {
    MetricsFile file("/nonexistent-folder/metrics.jsonl");
    FAIL() << "expected an error";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("/nonexistent-folder/metrics.jsonl"),
              std::string::npos);
  }
}

TEST(SvgPlotTest, DrawsEverySeriesWithItsPointsAndLegend) {
  Series a{"train loss", "#111111", {1, 2, 3}, {2.0, 1.0, 0.5}};
  Series b{"test acc", "#222222", {1, 2, 3}, {0.5, 0.7, 0.8}};
  const std::string svg = LinePlotSvg("run <1>", "epoch", "value", {a, b});
  EXPECT_EQ(svg.rfind("<svg", 0), 0u);
  EXPECT_NE(svg.find("</svg>"), std::string::npos);
  EXPECT_NE(svg.find("run &lt;1&gt;"), std::string::npos);
  EXPECT_NE(svg.find(">train loss<"), std::string::npos);
  EXPECT_NE(svg.find(">test acc<"), std::string::npos);
  size_t polylines = 0, circles = 0;
  for (size_t p = svg.find("<polyline"); p != std::string::npos;
       p = svg.find("<polyline", p + 1)) {
    ++polylines;
  }
  for (size_t p = svg.find("<circle"); p != std::string::npos;
       p = svg.find("<circle", p + 1)) {
    ++circles;
  }
  EXPECT_EQ(polylines, 2u);
  EXPECT_EQ(circles, 6u);
  // The highest point (loss 2.0 at epoch 1) sits at the top of the axes
  // (y = 40) and the first epoch at the left edge (x = 60).
  EXPECT_NE(svg.find("<circle cx=\"60\" cy=\"40\""), std::string::npos) << svg;
}

// The x tick labels, in order (they sit 18 px under the axes, at y 368).
std::vector<std::string> XTicks(const std::string& svg) {
  std::vector<std::string> out;
  const std::string key = "\" y=\"368\" text-anchor=\"middle\">";
  for (size_t p = svg.find(key); p != std::string::npos;
       p = svg.find(key, p + 1)) {
    const size_t from = p + key.size();
    out.push_back(svg.substr(from, svg.find('<', from) - from));
  }
  return out;
}

Series Epochs(int n) {
  Series s{"loss", "#111111", {}, {}};
  for (int e = 1; e <= n; ++e) s.x.push_back(e), s.y.push_back(1.0 / e);
  return s;
}

TEST(SvgPlotTest, LabelsEveryEpochAndTheLastAndTheYAxis) {
  const std::string ten = LinePlotSvg("t", "epoch", "loss", {Epochs(10)});
  EXPECT_EQ(XTicks(ten), (std::vector<std::string>{"1", "2", "3", "4", "5", "6",
                                                   "7", "8", "9", "10"}));
  EXPECT_NE(ten.find("rotate(-90"), std::string::npos);
  EXPECT_NE(ten.find(">loss</text>"), std::string::npos);
  const std::vector<std::string> many =
      XTicks(LinePlotSvg("t", "epoch", "loss", {Epochs(57)}));
  EXPECT_LE(many.size(), 13u);
  EXPECT_EQ(many.front(), "1");
  EXPECT_EQ(many.back(), "57");
}

TEST(SvgPlotTest, OneEpochSitsInTheMiddle) {
  const std::string svg = LinePlotSvg("t", "epoch", "loss", {Epochs(1)});
  EXPECT_EQ(XTicks(svg), (std::vector<std::string>{"1"}));
  // Axes from x 60, 430 wide: the middle is 275.
  EXPECT_NE(svg.find("<circle cx=\"275\""), std::string::npos) << svg;
}

// A diverged run's loss is inf or NaN; the plot leaves those points out and
// stays bounded (the tick loop once never ended on an infinite axis).
TEST(SvgPlotTest, InfiniteAndNanValuesAreLeftOutAndTicksStayFew) {
  const double inf = std::numeric_limits<double>::infinity();
  const double nan = std::numeric_limits<double>::quiet_NaN();
  Series loss{"train loss", "#111111", {1, 2, 3}, {2.0, inf, nan}};
  Series acc{"test acc", "#222222", {1, 2, 3}, {0.1, 0.1, 0.1}};
  const std::string svg =
      LinePlotSvg("diverged", "epoch", "value", {loss, acc});
  size_t circles = 0, texts = 0;
  for (size_t p = svg.find("<circle"); p != std::string::npos;
       p = svg.find("<circle", p + 1)) {
    ++circles;
  }
  for (size_t p = svg.find("<text"); p != std::string::npos;
       p = svg.find("<text", p + 1)) {
    ++texts;
  }
  EXPECT_EQ(circles, 4u);  // One loss point and three accuracy points.
  EXPECT_LT(texts, 40u);
  EXPECT_EQ(svg.find("inf"), std::string::npos);
  EXPECT_EQ(svg.find("nan"), std::string::npos);
  // The finite loss, 2.0, is still the top of the axis.
  EXPECT_NE(svg.find("<circle cx=\"60\" cy=\"40\""), std::string::npos) << svg;
}

TEST(SvgPlotTest, HugeFiniteValuesKeepABoundedAxis) {
  Series loss{"train loss", "#111111", {1, 2}, {3e38, 1.7e308}};
  const std::string svg = LinePlotSvg("huge", "epoch", "value", {loss});
  EXPECT_EQ(svg.find("inf"), std::string::npos);
  size_t texts = 0;
  for (size_t p = svg.find("<text"); p != std::string::npos;
       p = svg.find("<text", p + 1)) {
    ++texts;
  }
  EXPECT_LT(texts, 40u);
}

TEST(MetricsFileTest, RewritesEveryLineAfterEachEpochStartingFromEarlierOnes) {
  const char* tmp = std::getenv("TEST_TMPDIR");
  const std::string path = std::string(tmp ? tmp : "/tmp") + "/resumed.jsonl";
  EpochMetrics one{1, 2.0, 0.2, 0.3, 1, 100, 0};
  EpochMetrics two{2, 1.0, 0.5, 0.6, 1, 100, 0};
  MetricsFile file(path, {one});
  file.Append(two);
  std::ifstream in(path);
  std::string first, second, third;
  std::getline(in, first);
  std::getline(in, second);
  EXPECT_FALSE(std::getline(in, third));
  EXPECT_EQ(FromJsonLine(first).epoch, 1);
  EXPECT_EQ(FromJsonLine(second).epoch, 2);
}

}  // namespace
}  // namespace ringlet::trainers

#include "trainers/common/outputs/metrics.h"

#include <charconv>
#include <cstdio>
#include <stdexcept>

#include "nlohmann/json.hpp"
#include "trainers/common/outputs/output_files.h"

namespace ringlet::trainers {

std::string FormatNumber(double v) {
  // Shortest round trip, fixed or scientific, whichever is shorter.
  char buf[32];
  const std::to_chars_result r = std::to_chars(buf, buf + sizeof(buf), v);
  return std::string(buf, r.ptr);
}

std::string EpochLine(const EpochMetrics& m, int epochs) {
  char val[32] = "";
  if (m.val_acc >= 0) {
    std::snprintf(val, sizeof(val), ", val acc %.3f", m.val_acc);
  }
  char buf[256];
  std::snprintf(buf, sizeof(buf),
                "epoch %d/%d: loss %.3f, train acc %.3f%s, test acc %.3f, "
                "%.1f s, %.0f img/s, comm %.1f%% (%.1f%% exposed)",
                m.epoch, epochs, m.loss, m.train_acc, val, m.test_acc,
                m.seconds, m.images_per_sec, 100 * m.comm_fraction,
                100 * m.comm_exposed_fraction);
  return buf;
}

std::string ToJsonLine(const StepEval& e) {
  const nlohmann::ordered_json j = {{"eval",
                                     {{"epoch", e.epoch},
                                      {"step", e.step},
                                      {"split", e.split},
                                      {"accuracy", e.accuracy},
                                      {"images", e.images},
                                      {"seconds", e.seconds}}}};
  return j.dump();
}

StepEval StepEvalFromJsonLine(const std::string& line) {
  try {
    const nlohmann::json j = nlohmann::json::parse(line).at("eval");
    StepEval e;
    const nlohmann::json& epoch = j.at("epoch");
    const nlohmann::json& step = j.at("step");
    if (!epoch.is_number_integer() || epoch.get<int64_t>() < 0 ||
        epoch.get<int64_t>() > (1 << 30) || !step.is_number_integer() ||
        step.get<int64_t>() < 0) {
      throw std::invalid_argument("eval line \"" + line +
                                  "\": epoch or step is not a count");
    }
    e.epoch = epoch.get<int>();
    e.step = step.get<int64_t>();
    e.split = j.at("split").get<std::string>();
    e.accuracy = j.at("accuracy").get<double>();
    e.images = j.at("images").get<int64_t>();
    e.seconds = j.at("seconds").get<double>();
    return e;
  } catch (const nlohmann::json::exception& e) {
    throw std::invalid_argument("eval line \"" + line + "\": " + e.what());
  }
}

std::string EvalLine(const StepEval& e) {
  char buf[160];
  std::snprintf(buf, sizeof(buf),
                "step %lld (epoch %d): %s acc %.3f on %lld images, %.1f s",
                static_cast<long long>(e.step), e.epoch, e.split.c_str(),
                e.accuracy, static_cast<long long>(e.images), e.seconds);
  return buf;
}

std::string ToJsonLine(const EpochMetrics& m) {
  const nlohmann::ordered_json j = {
      {"epoch", m.epoch},
      {"loss", m.loss},
      {"train_acc", m.train_acc},
      {"test_acc", m.test_acc},
      {"seconds", m.seconds},
      {"eval_seconds", m.eval_seconds},
      {"images_per_sec", m.images_per_sec},
      {"comm_fraction", m.comm_fraction},
      {"comm_exposed_fraction", m.comm_exposed_fraction},
      {"lr", m.lr},
      {"val_acc", m.val_acc >= 0 ? nlohmann::ordered_json(m.val_acc)
                                 : nlohmann::ordered_json(nullptr)},
  };
  return j.dump();
}

EpochMetrics FromJsonLine(const std::string& line) {
  try {
    const nlohmann::json j = nlohmann::json::parse(line);
    EpochMetrics m;
    const nlohmann::json& epoch = j.at("epoch");
    // An integer an epoch can be (get<int>() of 1e300 is undefined).
    if (!epoch.is_number_integer() || epoch.get<int64_t>() < 0 ||
        epoch.get<int64_t>() > (1 << 30)) {
      throw std::invalid_argument("metrics line \"" + line +
                                  "\": epoch is not an epoch number");
    }
    m.epoch = epoch.get<int>();
    m.loss = j.at("loss").get<double>();
    m.train_acc = j.at("train_acc").get<double>();
    m.test_acc = j.at("test_acc").get<double>();
    m.seconds = j.at("seconds").get<double>();
    m.eval_seconds = j.value("eval_seconds", 0.0);
    m.images_per_sec = j.at("images_per_sec").get<double>();
    m.comm_fraction = j.at("comm_fraction").get<double>();
    m.comm_exposed_fraction = j.value("comm_exposed_fraction", 0.0);
    m.lr = j.value("lr", 0.0);
    const auto val = j.find("val_acc");
    m.val_acc = val != j.end() && val->is_number() ? val->get<double>() : -1;
    return m;
  } catch (const nlohmann::json::exception& e) {
    throw std::invalid_argument("metrics line \"" + line + "\": " + e.what());
  }
}

std::string ToCsv(const std::vector<EpochMetrics>& epochs) {
  std::string out =
      "epoch,loss,train_acc,test_acc,seconds,eval_seconds,images_per_sec,"
      "comm_fraction,lr,val_acc\n";
  for (const EpochMetrics& m : epochs) {
    out += std::to_string(m.epoch);
    for (double v : {m.loss, m.train_acc, m.test_acc, m.seconds, m.eval_seconds,
                     m.images_per_sec, m.comm_fraction, m.lr}) {
      out += "," + FormatNumber(v);
    }
    // Empty without validation.
    out += "," + (m.val_acc >= 0 ? FormatNumber(m.val_acc) : "") + "\n";
  }
  return out;
}

MetricsFile::MetricsFile(const std::string& path,
                         const std::vector<EpochMetrics>& earlier,
                         const std::string& run_line,
                         const std::vector<StepEval>& earlier_evals)
    : path_(path) {
  CheckOutputFiles({{"--metrics_out", path}});
  if (!run_line.empty()) lines_ = run_line + "\n";
  // An epoch's evaluations came before its line.
  size_t next_eval = 0;
  for (const EpochMetrics& m : earlier) {
    while (next_eval < earlier_evals.size() &&
           earlier_evals[next_eval].epoch <= m.epoch) {
      lines_ += ToJsonLine(earlier_evals[next_eval++]) + "\n";
    }
    lines_ += ToJsonLine(m) + "\n";
  }
  while (next_eval < earlier_evals.size()) {
    lines_ += ToJsonLine(earlier_evals[next_eval++]) + "\n";
  }
}

void MetricsFile::Append(const EpochMetrics& m) {
  lines_ += ToJsonLine(m) + "\n";
  Write();
}

void MetricsFile::Append(const StepEval& e) {
  lines_ += ToJsonLine(e) + "\n";
  Write();
}

void MetricsFile::AppendLine(const std::string& json_line) {
  lines_ += json_line + "\n";
  Write();
}

void MetricsFile::Write() { WriteOutputFile(path_, lines_, "--metrics_out"); }

}  // namespace ringlet::trainers

#include "trainers/common/prediction.h"

#include <cstdio>
#include <stdexcept>

#include "data/batch_loader.h"
#include "nn/ops/softmax.h"
#include "trainers/common/outputs/confusion_report.h"
#include "trainers/common/outputs/progress.h"

namespace ringlet::trainers {
namespace {

std::string Number(double v) {
  char text[32];
  std::snprintf(text, sizeof(text), "%.6g", v);
  return text;
}

// A CSV field: quoted when it holds a comma, quote or line break.
std::string Field(const std::string& text) {
  if (text.find_first_of(",\"\n\r") == std::string::npos) return text;
  std::string quoted = "\"";
  for (char c : text)
    quoted += c == '"' ? std::string("\"\"") : std::string(1, c);
  return quoted + "\"";
}

}  // namespace

int64_t WritePredictions(parallel::ReplicaEngine& engine,
                         const data::DatasetPtr& inputs,
                         const PredictionOptions& options, std::ostream& csv,
                         std::ostream& progress) {
  data::LoaderOptions loader_options;
  loader_options.batch_size = options.batch_size;
  loader_options.shuffle = false;
  loader_options.layout = engine.EvalLayout();
  data::BatchLoader loader(inputs, loader_options);
  loader.StartEpoch(0);
  ProgressBar bar(progress, options.terminal, "predict", inputs->size());
  data::Batch batch;
  int64_t index = 0, classes = -1;
  std::vector<std::string> names;
  while (loader.Next(&batch)) {
    for (const nn::Tensor& output : engine.Outputs(batch.Local())) {
      if (!output.defined() || output.numel() == 0) continue;
      if (output.rank() != 2) {
        throw std::invalid_argument(
            "--predict: the model gives outputs of shape " +
            nn::ToString(output.shape()) +
            ", not one row of class scores per sample");
      }
      if (classes < 0) {
        classes = output.dim(1);
        names = ClassNames(classes, options.class_names);
        std::string header = options.sample_names.empty()
                                 ? "index,class,probability"
                                 : "index,file,class,probability";
        for (const std::string& name : names)
          header += "," + Field("p_" + name);
        csv << header << "\n";
      }
      const nn::Tensor p = nn::SoftmaxForward(output);
      std::string rows;
      for (int64_t i = 0; i < p.dim(0); ++i, ++index) {
        const float* row = p.data() + i * classes;
        int64_t best = 0;
        for (int64_t k = 1; k < classes; ++k)
          best = row[k] > row[best] ? k : best;
        rows += std::to_string(index) + ",";
        if (!options.sample_names.empty()) {
          rows += Field(options.sample_names.at(index)) + ",";
        }
        rows += Field(names[best]) + "," + Number(row[best]);
        for (int64_t k = 0; k < classes; ++k) rows += "," + Number(row[k]);
        rows += "\n";
      }
      csv << rows;
    }
    bar.Update(index);
  }
  bar.Finish();
  csv.flush();
  return index;
}

}  // namespace ringlet::trainers

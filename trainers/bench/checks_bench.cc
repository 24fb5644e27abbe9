// checks_bench: what the trainers' safety checks cost beside a training
// step, on CPU devices: the replica comparison (a checksum of every
// parameter, allgathered; every --replica_check_every steps), the
// finiteness test of the summed gradients (every step), and writing a
// checkpoint (every --checkpoint_every epochs).
//
//   ./bazelw run //trainers/bench:checks_bench -- --devices=2
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdio>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "cli/conventions.h"
#include "cli/run_main.h"
#include "nn/layers/init.h"
#include "nn/models/lenet.h"
#include "nn/models/resnet.h"
#include "parallel/data_parallel.h"
#include "parallel/replica_checks.h"
#include "trainers/common/checkpoints/checkpoint.h"
#include "trainers/lenet_replicas.h"

namespace ringlet::trainers {
namespace {

using Clock = std::chrono::steady_clock;

// Mean seconds of fn over `repeats` calls after one untimed call.
double MeanSeconds(const std::function<void()>& fn, int repeats) {
  fn();
  const Clock::time_point start = Clock::now();
  for (int i = 0; i < repeats; ++i) fn();
  return std::chrono::duration<double>(Clock::now() - start).count() / repeats;
}

struct Row {
  std::string model;
  int64_t batch = 0;
  int64_t parameters = 0;
  double step = 0, compare = 0, finite = 0, checkpoint = 0;
};

// Times one model given its step, state and comparison.
Row Measure(const std::string& model, int64_t batch,
            const std::function<void()>& step,
            const std::function<parallel::NamedTensors()>& state,
            const std::function<std::string()>& compare, int steps) {
  Row row;
  row.model = model;
  row.batch = batch;
  const parallel::NamedTensors named = state();
  for (const nn::Tensor* t : named.tensors) row.parameters += t->numel();
  row.step = MeanSeconds(step, steps);
  row.compare = MeanSeconds(
      [&] {
        if (!compare().empty()) std::fprintf(stderr, "replicas differ!\n");
      },
      10);
  // The gradients are as large as the parameters: test those.
  row.finite = MeanSeconds(
      [&] {
        for (const nn::Tensor* t : named.tensors) {
          if (!parallel::FirstNonFinite(t->data(), t->numel()).empty()) {
            std::fprintf(stderr, "non-finite!\n");
          }
        }
      },
      10);
  const std::string path =
      "/tmp/checks_bench_" + std::to_string(::getpid()) + ".ckpt";
  row.checkpoint = MeanSeconds(
      [&] {
        Checkpoint c;
        for (size_t i = 0; i < named.tensors.size(); ++i) {
          const nn::Tensor& t = *named.tensors[i];
          c.tensors.push_back(
              {named.names[i], t.shape(), {t.data(), t.data() + t.numel()}});
        }
        WriteCheckpoint(path, c);
      },
      3);
  ::unlink(path.c_str());
  return row;
}

// A random batch of Fashion-MNIST's shapes, cut as `engine` runs it.
data::LocalBatch RandomBatch(const parallel::ReplicaEngine& engine,
                             int64_t batch, std::vector<float>* images,
                             std::vector<int32_t>* labels) {
  std::mt19937 rng(1);
  std::uniform_real_distribution<float> pixel(0.0f, 1.0f);
  images->resize(batch * 784);
  labels->resize(batch);
  for (float& p : *images) p = pixel(rng);
  for (int32_t& l : *labels) l = static_cast<int32_t>(rng() % 10);
  return data::CutBatch(batch, engine.TrainLayout(),
                        data::SamplesOf(images->data(), {1, 28, 28}),
                        data::SamplesOf(labels->data(), {}));
}

int Main(int argc, char** argv) {
  int devices = 2, threads = 1, lenet_steps = 20, resnet_steps = 2;
  int64_t lenet_batch = 256, resnet_batch = 64;
  CLI::App app{
      "Cost of the trainers' safety checks beside a training step on CPU "
      "devices: replica comparison, gradient finiteness test, checkpoint.",
      "checks_bench"};
  ringlet::cli::UseConventions(app);
  app.add_option("--devices", devices, "CPU devices")->check(CLI::Range(1, 64));
  app.add_option("--threads_per_device", threads, "threads per device")
      ->check(CLI::Range(1, 64));
  app.add_option("--lenet_batch", lenet_batch, "LeNet's batch")
      ->check(CLI::Range(1, 65536));
  app.add_option("--resnet_batch", resnet_batch, "ResNet-18's batch")
      ->check(CLI::Range(1, 4096));
  app.add_option("--resnet_steps", resnet_steps, "timed ResNet-18 steps")
      ->check(CLI::Range(1, 1000));
  RINGLET_PARSE_FLAGS(app, argc, argv);

  std::vector<nn::Device> list;
  for (int d = 0; d < devices; ++d) list.push_back(nn::Device::Cpu(d));
  std::vector<Row> rows;
  std::vector<float> images;
  std::vector<int32_t> labels;
  {
    parallel::ReplicaGroupOptions group;
    group.threads_per_device = threads;
    LeNetReplicas lenet(nn::LeNetParams::Init(0), list, group, PlainSgd(0.1f));
    const data::LocalBatch shards =
        RandomBatch(lenet.engine(), lenet_batch, &images, &labels);
    rows.push_back(Measure(
        "lenet", lenet_batch, [&] { lenet.TrainStep(shards); },
        [&] { return lenet.State(); }, [&] { return lenet.CompareReplicas(); },
        lenet_steps));
  }
  {
    parallel::DataParallelOptions options;
    options.threads_per_device = threads;
    parallel::DataParallel dp(
        [] {
          auto net = nn::MakeResNet18();
          nn::InitParameters(*net, nn::InitScheme::kNormal001, 0);
          return net;
        },
        list, options);
    const data::LocalBatch shards =
        RandomBatch(dp.engine(), resnet_batch, &images, &labels);
    rows.push_back(Measure(
        "resnet18", resnet_batch, [&] { dp.TrainStep(shards); },
        [&] { return dp.State(0); }, [&] { return dp.CompareReplicas(); },
        resnet_steps));
  }

  std::printf("# checks_bench: %d CPU devices, %d thread(s) each\n", devices,
              threads);
  std::printf("%-9s %6s %10s %9s %11s %13s %11s %10s %13s\n", "model", "batch",
              "params", "step ms", "compare ms", "/step @100", "finite ms",
              "finite/step", "checkpoint ms");
  for (const Row& r : rows) {
    std::printf("%-9s %6ld %10ld %9.2f %11.3f %12.4f%% %11.3f %9.3f%% %13.1f\n",
                r.model.c_str(), static_cast<long>(r.batch),
                static_cast<long>(r.parameters), r.step * 1e3, r.compare * 1e3,
                100 * r.compare / 100 / r.step, r.finite * 1e3,
                100 * r.finite / r.step, r.checkpoint * 1e3);
  }
  return 0;
}

}  // namespace
}  // namespace ringlet::trainers

int main(int argc, char** argv) {
  return ringlet::cli::RunMain(
      "checks_bench", [&] { return ringlet::trainers::Main(argc, argv); });
}

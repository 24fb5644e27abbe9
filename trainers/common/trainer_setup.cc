#include "trainers/common/trainer_setup.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <fstream>
#include <iostream>
#include <stdexcept>
#include <thread>

#include "data/fashion_mnist.h"
#include "nn/cuda/device_probe.h"
#include "trainers/common/job.h"

namespace ringlet::trainers {

namespace {

// "must be a number above 0" for anything else, as one short line (CLI11's
// PositiveNumber prints the whole range of a double).
const CLI::Validator kPositive(
    [](std::string& text) -> std::string {
      try {
        size_t used = 0;
        if (std::stod(text, &used) > 0 && used == text.size()) return "";
      } catch (const std::exception&) {
      }
      return "must be a number above 0, got '" + text + "'";
    },
    "POSITIVE");

}  // namespace

void AddTrainerFlags(CLI::App& app, TrainerFlags* f, int default_epochs) {
  f->epochs = default_epochs;
  app.add_option("--devices", f->devices,
                 "auto (every GPU, else one CPU device), cpu:K (K CPU "
                 "devices), or cuda:I,J,...")
      ->capture_default_str();
  app.add_option("--backend", f->backend,
                 "how gradients are summed: ring, naive or nccl (under "
                 "mpirun also mpi)")
      ->capture_default_str();
  app.add_option("--epochs", f->epochs, "passes over the training set")
      ->check(kPositive)
      ->capture_default_str();
  app.add_option("--batch_size", f->batch_size,
                 "images per step over all devices (default: see above)")
      ->check(kPositive);
  app.add_option("--lr", f->lr, "SGD learning rate (default: see above)")
      ->check(kPositive);
  app.add_option("--seed", f->seed,
                 "initial weights and the order of the batches")
      ->capture_default_str();
  app.add_option("--data_dir", f->data_dir,
                 "Fashion-MNIST folder (default: $FASHION_MNIST_DIR, else " +
                     std::string(data::kDefaultFashionMnistDir) + ")");
  app.add_option("--threads_per_device", f->threads_per_device,
                 "cores each device's ops use (default: the cores shared out)")
      ->check(kPositive);
  app.add_option("--limit", f->limit,
                 "train on the first N training images only (quick runs)")
      ->check(kPositive);
  app.add_option("--test_limit", f->test_limit,
                 "evaluate on the first N test images only")
      ->check(kPositive);
  app.add_option("--metrics_out", f->metrics_out,
                 "write one JSON line per epoch to this file");
  app.add_option("--plot_out", f->plot_out,
                 "draw loss and accuracies per epoch into this SVG file");
  app.add_option("--params_out", f->params_out,
                 "write the trained parameters to this file: float32, "
                 "little-endian, one tensor after another in the model's "
                 "order");
}

void WriteParameters(const std::string& path,
                     const std::vector<const nn::Tensor*>& tensors) {
  std::ofstream out(path, std::ios::binary);
  for (const nn::Tensor* t : tensors) {
    out.write(reinterpret_cast<const char*>(t->data()),
              static_cast<std::streamsize>(t->numel() * sizeof(float)));
  }
  if (!out.flush()) {
    throw std::runtime_error("cannot write parameters to '" + path +
                             "': check the folder exists and is writable");
  }
}

std::vector<nn::Device> ResolveTrainerDevices(const std::string& spec,
                                              std::ostream& notes) {
  const nn::cuda::CudaDeviceReport gpus = nn::cuda::ProbeCudaDevices();
  const int usable = static_cast<int>(gpus.usable.size());
  if (spec == "auto") {
    if (usable > 0) {
      notes << "note: " << usable
            << " GPU(s) found, but the trainers run on CPU devices only so "
               "far; training on the CPU\n";
    }
    return nn::ResolveDevices("auto", /*usable_gpus=*/0);
  }
  return nn::ResolveDevices(spec, usable);
}

int ThreadsPerDevice(int requested, int devices) {
  if (requested > 0) return requested;
  const int cores = static_cast<int>(std::thread::hardware_concurrency());
  // Processes mpirun started on this host share its cores.
  const char* local_size = std::getenv("OMPI_COMM_WORLD_LOCAL_SIZE");
  const int processes = local_size ? std::max(1, std::atoi(local_size)) : 1;
  return std::max(1, cores / std::max(1, devices * processes));
}

namespace {

void Truncate(data::Split* split, int64_t limit) {
  if (limit <= 0 || limit >= split->size()) return;
  split->labels.resize(limit);
  split->pixels.resize(limit * data::kImagePixels);
}

}  // namespace

data::FashionMnist LoadTrainerData(const TrainerFlags& flags) {
  data::FashionMnist data =
      data::LoadFashionMnist(data::ResolveFashionMnistDir(flags.data_dir));
  Truncate(&data.train, flags.limit);
  Truncate(&data.test, flags.test_limit);
  return data;
}

std::string SetupLine(const std::string& program, const std::string& where,
                      int n, const std::string& backend, int64_t batch_size,
                      double lr, int threads_per_device,
                      const data::FashionMnist& data, int epochs) {
  char lr_text[32];
  std::snprintf(lr_text, sizeof(lr_text), "%g", lr);
  std::string line = program + " on " + where + ": backend " + backend +
                     ", batch " + std::to_string(batch_size);
  if (n > 1) {
    line += " (" + std::to_string(batch_size / n) +
            (batch_size % n ? "-" + std::to_string(batch_size / n + 1) : "") +
            " per device)";
  }
  line += ", lr " + std::string(lr_text) + ", " +
          std::to_string(threads_per_device) + " thread" +
          (threads_per_device == 1 ? "" : "s") + " per device, " +
          std::to_string(data.train.size()) + " training and " +
          std::to_string(data.test.size()) + " test images, " +
          std::to_string(epochs) + " epoch" + (epochs == 1 ? "" : "s");
  return line;
}

int RunTrainerMain(CLI::App& app, int argc, char** argv,
                   const std::function<int()>& body) {
  // One line: what was wrong and where to look.
  app.failure_message([](const CLI::App* a, const CLI::Error& e) {
    return a->get_name() + ": " + e.what() + " (see --help)\n";
  });
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  try {
    return body();
  } catch (const std::exception& e) {
    std::cout.flush();
    std::cerr << app.get_name() << ": error" << JobErrorContext() << ": "
              << e.what() << "\n";
    // Under mpirun the other processes are ended too, not left waiting.
    EndJob(1);
  }
}

}  // namespace ringlet::trainers

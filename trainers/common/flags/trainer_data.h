// What a trainer trains on: --dataset from --data_dir, cut to --limit and
// --test_limit, with a seeded share held out for --validation.
//
//   fashion_mnist  the four IDX files of Fashion-MNIST (the default; Debian's
//                  dataset-fashion-mnist, or $FASHION_MNIST_DIR)
//   mnist          the four IDX files of MNIST, named as Fashion-MNIST's
//   cifar10        CIFAR-10's binary batches (cifar-10-batches-bin)
//   cifar100       CIFAR-100's binary train.bin and test.bin (fine labels)
//   npy            train_inputs.npy, train_targets.npy, test_inputs.npy and
//                  test_targets.npy, or one .npz file of those arrays:
//                  inputs [n, ...] of any shape, targets [n] of integer
//                  class ids
//   safetensors    one .safetensors file of those four tensors
#ifndef RINGLET_TRAINERS_COMMON_FLAGS_TRAINER_DATA_H_
#define RINGLET_TRAINERS_COMMON_FLAGS_TRAINER_DATA_H_

#include <cstdint>
#include <string>
#include <vector>

#include "data/dataset.h"
#include "trainers/common/flags/trainer_flags.h"

namespace ringlet::trainers {

// The --dataset names, in --help's order.
const std::vector<std::string>& DatasetNames();

struct TrainerData {
  std::string name;  // --dataset's.
  data::DatasetPtr train, test;
  data::DatasetPtr validation;  // Null without --validation.
  int64_t classes = 0;
  // One per class where the data set names them (Fashion-MNIST's, CIFAR-10's);
  // empty otherwise.
  std::vector<std::string> class_names;
  // The files it was read from, which no output of the run may replace.
  std::vector<std::string> files;
};

// The data set the flags name, cut to --limit and --test_limit samples;
// with --validation, that share of the training samples (chosen by --seed,
// at least one) held out. Throws data::DataError (a missing file's says
// where to get it), std::invalid_argument.
TrainerData LoadTrainerData(const TrainerFlags& flags);

// --predict's inputs, as a data set with no meaningful targets: a .npy
// file (plain or gzip) or a .safetensors file's "inputs" (or only) tensor,
// [n, sample...], read as the training data was (--input_layout; [n, H, W]
// as one channel); or a PNG or JPEG image, or a folder of them (sorted by
// name; their names in *names), decoded as an image folder's. Throws
// data::DataError naming the file unless its samples are `trained_on`'s
// type and shape.
data::DatasetPtr LoadPredictInputs(const TrainerFlags& flags,
                                   const data::SampleSpec& trained_on,
                                   std::vector<std::string>* names = nullptr);

// Throws std::invalid_argument, naming `program` and what the data holds,
// unless its inputs are images ({channels, height, width}) of `shape` (any
// when empty) in `classes` classes (any when 0).
void RequireImages(const TrainerData& data, const std::string& program,
                   const std::vector<int64_t>& shape, int64_t classes);

}  // namespace ringlet::trainers

#endif  // RINGLET_TRAINERS_COMMON_FLAGS_TRAINER_DATA_H_

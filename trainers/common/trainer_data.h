// What a trainer trains on: Fashion-MNIST cut to --limit and --test_limit,
// with a seeded share held out for --validation.
#ifndef RINGLET_TRAINERS_COMMON_TRAINER_DATA_H_
#define RINGLET_TRAINERS_COMMON_TRAINER_DATA_H_

#include <cstdint>

#include "data/fashion_mnist.h"
#include "trainers/common/trainer_flags.h"

namespace ringlet::trainers {

// The data set from --data_dir (or its defaults), cut to --limit and
// --test_limit images; with --validation, that share of the training images
// (chosen by --seed, at least one) moves to *validation, which may be null
// only without it. Throws data::DataError, std::invalid_argument.
data::FashionMnist LoadTrainerData(const TrainerFlags& flags,
                                   data::Split* validation = nullptr);

// Moves round(fraction x size) images of `train`, chosen by a shuffle
// seeded with `seed`, into a split of their own (both keep their order).
data::Split HoldOut(data::Split* train, double fraction, uint64_t seed);

}  // namespace ringlet::trainers

#endif  // RINGLET_TRAINERS_COMMON_TRAINER_DATA_H_

#include "trainers/common/trainer_data.h"

#include <cmath>
#include <numeric>
#include <random>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "trainers/common/metrics.h"

namespace ringlet::trainers {

namespace {

void Truncate(data::Split* split, int64_t limit) {
  if (limit <= 0 || limit >= split->size()) return;
  split->labels.resize(limit);
  split->pixels.resize(limit * data::kImagePixels);
}

}  // namespace

data::Split HoldOut(data::Split* train, double fraction, uint64_t seed) {
  const int64_t n = train->size();
  const int64_t held = std::llround(fraction * static_cast<double>(n));
  std::vector<int64_t> order(n);
  std::iota(order.begin(), order.end(), 0);
  std::shuffle(order.begin(), order.end(),
               std::mt19937_64(seed ^ 0x76616c6964ull));  // "valid"
  std::vector<bool> is_held(n, false);
  for (int64_t i = 0; i < held; ++i) is_held[order[i]] = true;
  data::Split kept, out;
  kept.name = train->name;
  out.name = "validation";
  for (int64_t i = 0; i < n; ++i) {
    data::Split& to = is_held[i] ? out : kept;
    to.labels.push_back(train->labels[i]);
    to.pixels.insert(to.pixels.end(), train->image(i),
                     train->image(i) + data::kImagePixels);
  }
  *train = std::move(kept);
  return out;
}

data::FashionMnist LoadTrainerData(const TrainerFlags& flags,
                                   data::Split* validation) {
  data::FashionMnist data =
      data::LoadFashionMnist(data::ResolveFashionMnistDir(flags.data_dir));
  Truncate(&data.train, flags.limit);
  Truncate(&data.test, flags.test_limit);
  if (flags.validation > 0) {
    if (validation == nullptr) {
      throw std::invalid_argument("--validation: this program holds none out");
    }
    *validation = HoldOut(&data.train, flags.validation, flags.seed);
    if (validation->size() == 0 || data.train.size() == 0) {
      throw std::invalid_argument(
          "--validation=" + FormatNumber(flags.validation) + " of " +
          std::to_string(data.train.size() + validation->size()) +
          " training images leaves " +
          (validation->size() == 0 ? "none held out" : "none to train on") +
          "; use a larger share, a smaller one or a larger --limit");
    }
  }
  return data;
}

}  // namespace ringlet::trainers

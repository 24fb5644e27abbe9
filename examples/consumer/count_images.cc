// Uses //data:fashion_mnist from another workspace: prints the split sizes.
#include <cstdio>

#include "data/data_error.h"
#include "data/fashion_mnist.h"

int main() {
  try {
    const auto data = ringlet::data::LoadFashionMnist(
        ringlet::data::ResolveFashionMnistDir());
    std::printf("train %ld test %ld\n", static_cast<long>(data.train.size()),
                static_cast<long>(data.test.size()));
  } catch (const ringlet::data::DataError& e) {
    std::fprintf(stderr, "count_images: %s\n", e.what());
    return 1;
  }
  return 0;
}

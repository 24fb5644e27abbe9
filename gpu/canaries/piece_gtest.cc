// GoogleTest's main around the same calls, as every test binary has.
#include <gtest/gtest.h>

#include "gpu/canaries/canary_piece.h"

namespace ringlet::gpu::canaries {

bool PieceWorks() {
  int argc = 1;
  char name[] = "canary";
  char* argv[] = {name, nullptr};
  ::testing::InitGoogleTest(&argc, argv);
  return true;
}

}  // namespace ringlet::gpu::canaries

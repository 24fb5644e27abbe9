// mpi_allreduce_bench: OpenMPI's MPI_Allreduce measured like allreduce_bench,
// the peer our in-process ring is compared with. Run under mpirun:
//
//   mpirun --allow-run-as-root -np 2 bazel-bin/collectives/mpi_allreduce_bench
//       --min_bytes=4 --max_bytes=256M
//
// Same rows and columns as allreduce_bench (float32 sum, out of place);
// bytes sent per rank is not observable here and printed as 0.
#include <mpi.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "cli/conventions.h"
#include "cli/run_main.h"
#include "collectives/bench/bench_flags.h"
#include "host/memory.h"
#include "nlohmann/json.hpp"

namespace ringlet::collectives {
namespace {

int Main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);

  std::string min_bytes = "4", max_bytes = "64M";
  double factor = 2;
  int iters = 20, warmup = 5;
  bool json = false;
  CLI::App app{"MPI_Allreduce time and bandwidth per size (float32 sum).",
               "mpi_allreduce_bench"};
  ringlet::cli::UseConventions(app);
  app.add_option("--min_bytes", min_bytes, "smallest size (K, M, G)");
  app.add_option("--max_bytes", max_bytes, "largest size (K, M, G)");
  app.add_option("--factor", factor, "size multiplier between rows")
      ->check(cli::RealIn(1.01, 1024));
  app.add_option("--iters", iters, "timed calls per row (at least)")
      ->check(CLI::Range(1, 1000000));
  app.add_option("--warmup", warmup, "untimed calls per row")
      ->check(CLI::Range(0, 1000000));
  app.add_flag("--json", json, "one JSON object per row");
  // Only process 0 prints; every process exits with the same code.
  int code = -1;
  if (rank == 0) {
    code = ringlet::cli::ParseFlags(app, argc, argv);
  } else {
    try {
      app.parse(argc, argv);
    } catch (const CLI::ParseError& e) {
      code = e.get_exit_code() == 0 ? 0 : ringlet::cli::kUsageError;
    }
  }
  if (code >= 0) {
    MPI_Finalize();
    return code;
  }
  std::vector<uint64_t> sizes;
  try {
    sizes = SweepSizes(ParseBytes(min_bytes), ParseBytes(max_bytes), factor, 4);
    // Every process of the job on this host holds its own send and receive
    // buffers.
    int local = 1;
    if (const char* n = std::getenv("OMPI_COMM_WORLD_LOCAL_SIZE")) {
      local = std::max(1, std::atoi(n));
    }
    const uint64_t per_rank = 2 * sizes.back();
    const long double total = static_cast<long double>(per_rank) * local;
    CheckBenchMemory(max_bytes, per_rank, local,
                     total >= 9e18L ? "more than any host holds"
                                    : ringlet::host::HostMemoryShortfall(
                                          static_cast<int64_t>(total)));
  } catch (const std::exception& e) {
    if (rank == 0) std::fprintf(stderr, "mpi_allreduce_bench: %s\n", e.what());
    MPI_Finalize();
    return 2;
  }

  std::vector<float> send(sizes.back() / 4), recv(sizes.back() / 4);
  for (size_t i = 0; i < send.size(); ++i) {
    send[i] = static_cast<float>(((rank + 1) * (i % 127) + 7 * rank) % 61) - 30;
  }
  if (rank == 0 && !json) {
    std::printf("# allreduce  backend mpi  ranks %d  op sum  dtype float32\n",
                size);
    std::printf("# %12s %12s %10s %9s %9s %7s %14s\n", "size(B)", "count",
                "time(us)", "algbw", "busbw", "#wrong", "sent/rank(B)");
  }
  for (uint64_t bytes : sizes) {
    const int count = static_cast<int>(bytes / 4);
    MPI_Allreduce(send.data(), recv.data(), count, MPI_FLOAT, MPI_SUM,
                  MPI_COMM_WORLD);
    long wrong = 0;
    for (int i = 0; i < count; ++i) {
      double e = 0;
      for (int r = 0; r < size; ++r) {
        e += static_cast<double>(((r + 1) * (i % 127) + 7 * r) % 61) - 30;
      }
      wrong += recv[i] != static_cast<float>(e);
    }
    for (int i = 0; i < warmup; ++i) {
      MPI_Allreduce(send.data(), recv.data(), count, MPI_FLOAT, MPI_SUM,
                    MPI_COMM_WORLD);
    }
    const int calls = CallsPerRow(bytes, iters);
    MPI_Barrier(MPI_COMM_WORLD);
    const double start = MPI_Wtime();
    for (int i = 0; i < calls; ++i) {
      MPI_Allreduce(send.data(), recv.data(), count, MPI_FLOAT, MPI_SUM,
                    MPI_COMM_WORLD);
    }
    double seconds = (MPI_Wtime() - start) / calls, slowest = 0;
    long all_wrong = 0;
    MPI_Reduce(&seconds, &slowest, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    MPI_Reduce(&wrong, &all_wrong, 1, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
    if (rank != 0) continue;
    const double algbw = bytes / slowest / 1e9;
    const double busbw = algbw * AllReduceBusFactor(size);
    if (json) {
      // The keys of allreduce_bench's out-of-place rows.
      const nlohmann::ordered_json row = {{"backend", "MPI_Allreduce"},
                                          {"ranks", size},
                                          {"op", "sum"},
                                          {"dtype", "float32"},
                                          {"in_place", false},
                                          {"bytes", bytes},
                                          {"count", count},
                                          {"time_us", slowest * 1e6},
                                          {"algbw_gbps", algbw},
                                          {"busbw_gbps", busbw},
                                          {"wrong", all_wrong},
                                          {"bytes_sent_per_rank", 0}};
      std::printf("%s\n", row.dump().c_str());
    } else {
      std::printf("  %12llu %12d %10.2f %9.3f %9.3f %7ld %14d\n",
                  static_cast<unsigned long long>(bytes), count, slowest * 1e6,
                  algbw, busbw, all_wrong, 0);
    }
    std::fflush(stdout);
  }
  MPI_Finalize();
  return 0;
}

}  // namespace
}  // namespace ringlet::collectives

int main(int argc, char** argv) {
  return ringlet::cli::RunMain("mpi_allreduce_bench", [&] {
    return ringlet::collectives::Main(argc, argv);
  });
}

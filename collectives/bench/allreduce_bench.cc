// allreduce_bench: allreduce time and bandwidth per size, in the manner of
// nccl-tests, for every backend.
//
//   ./bazelw run //collectives/bench:allreduce_bench -- --backend=ring
//       --ranks=2 --min_bytes=4 --max_bytes=256M
//   mpirun -np 2 bazel-bin/collectives/allreduce_bench --backend=mpi --ranks=1
//   torchrun --standalone --nproc_per_node=2 --no_python --redirects=2
//       --tee=2 bazel-bin/collectives/bench/allreduce_bench --ranks=1
//
// Each rank is a thread; under a launcher (mpirun, torchrun, srun) each
// process holds --ranks of them and the job's ranks form one group (ring
// and naive: MPI or TCP between processes; mpi: MPI_Iallreduce, one rank
// per process). A row per size, as
// nccl-tests' all_reduce_perf prints it: out-of-place, then in-place. Each
// is one checked call (#wrong counts elements that differ from the exact
// result, on all ranks), warm-up calls, then timed calls between two
// barriers; time is the slowest rank's average. algbw = bytes / time;
// busbw = algbw x 2(n-1)/n, comparable with NCCL's. sent/rank is the most
// any rank sent per out-of-place call, as counted by the transport:
// 2(n-1)/n x bytes for the ring, (n-1) x bytes at the naive root. The
// footer gives the average bus bandwidth over every row and placement.
// --op=repro_sum measures the plain sum first at each size, prints its row,
// and ends the reproducible row with the two busbw ratios (vs sum).
#include <CLI/CLI.hpp>
#include <Eigen/Core>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "cli/conventions.h"
#include "cli/run_main.h"
#include "collectives/backends/launch.h"
#include "collectives/backends/rank_buffer.h"
#include "collectives/backends/registry.h"
#include "collectives/bench/bench_flags.h"
#include "collectives/collectives.h"
#include "collectives/reproducible/reproducible_sum.h"
#include "collectives/reproducible/reproducible_sum_device.h"
#include "host/memory.h"
#include "nlohmann/json.hpp"

namespace ringlet::collectives {
namespace {

struct Flags {
  std::string backend = "ring";
  int ranks = 2;
  std::string min_bytes = "4";
  std::string max_bytes = "64M";
  double factor = 2;
  int iters = 20;
  int warmup = 5;
  std::string op = "sum";
  std::string dtype = "float32";
  bool json = false;
};

// An integer in [-30, 30] depending on rank and index: exact in every type
// when summed over up to 8 ranks (bfloat16 holds integers to 256), so the
// check is exact.
double Value(int rank, size_t i) {
  return static_cast<double>(((rank + 1) * (i % 127) + 7 * rank) % 61) - 30;
}

template <typename T>
void Fill(std::vector<unsigned char>& buf, size_t count, int rank) {
  T* p = reinterpret_cast<T*>(buf.data());
  for (size_t i = 0; i < count; ++i) p[i] = static_cast<T>(Value(rank, i));
}

template <typename T>
size_t CountWrong(const std::vector<unsigned char>& buf, size_t count,
                  int ranks, ReduceOp op) {
  const T* p = reinterpret_cast<const T*>(buf.data());
  size_t wrong = 0;
  for (size_t i = 0; i < count; ++i) {
    double e = Value(0, i);
    for (int r = 1; r < ranks; ++r) {
      const double v = Value(r, i);
      if (op == ReduceOp::kMax) e = v > e ? v : e;
      if (op == ReduceOp::kMin) e = v < e ? v : e;
      if (op == ReduceOp::kSum || op == ReduceOp::kAvg) e += v;
    }
    T expected = static_cast<T>(e);
    if (op == ReduceOp::kAvg) expected = expected / static_cast<T>(ranks);
    wrong += p[i] != expected;
  }
  return wrong;
}

// A row over all ranks: the slowest rank's time, the most any rank sent,
// and the wrong elements of every rank.
struct RowResult {
  double seconds_per_call = 0;
  double bytes_sent_per_call = 0;
  double wrong = 0;
};

// Rank 0 reports each size's out-of-place and in-place results of `op`;
// for repro_sum, `sum` holds the plain sum's of the same size, measured
// just before (null otherwise).
using Report = std::function<void(
    uint64_t bytes, const std::string& op, const RowResult& out_of_place,
    const RowResult& in_place, const RowResult* sum)>;

// One placement of one size: check, warm up, time. Collective.
RowResult Measure(Communicator& comm, const Flags& flags, uint64_t bytes,
                  bool in_place, DataType type, ReduceOp op, bool reproducible,
                  std::vector<unsigned char>& host, RankBuffer& send,
                  RankBuffer& recv) {
  const int r = comm.rank();
  const size_t count = bytes / SizeOf(type);
  void* out = in_place ? send.data() : recv.data();
  // nccl: rank r's buffers are on GPU r (RankBuffer).
  const bool on_device = RankBuffer::OnDevice(flags.backend);
  // repro_sum: the reproducible sum (collectives/reproducible), whose busbw
  // counts the caller's bytes, as plain sum's does.
  const auto call = [&] {
    if (reproducible && on_device) {
      ReproducibleAllReduceOnDevice(comm, {send.data()}, out, count, type, r);
    } else if (reproducible) {
      ReproducibleAllReduce(comm, send.data(), out, count, type);
    } else {
      comm.AllReduce(send.data(), out, count, type, op);
    }
  };
  auto fill = [&] {
    if (type == DataType::kFloat32) Fill<float>(host, count, r);
    if (type == DataType::kFloat64) Fill<double>(host, count, r);
    if (type == DataType::kInt32) Fill<int32_t>(host, count, r);
    if (type == DataType::kBFloat16) Fill<Eigen::bfloat16>(host, count, r);
    send.Upload(host.data(), bytes);
  };
  fill();
  const auto first_start = std::chrono::steady_clock::now();
  call();
  double first_seconds = std::chrono::duration<double>(
                             std::chrono::steady_clock::now() - first_start)
                             .count();
  (in_place ? send : recv).Download(host.data(), bytes);
  RowResult mine;
  if (type == DataType::kFloat32) {
    mine.wrong = CountWrong<float>(host, count, comm.size(), op);
  } else if (type == DataType::kFloat64) {
    mine.wrong = CountWrong<double>(host, count, comm.size(), op);
  } else if (type == DataType::kBFloat16) {
    mine.wrong = CountWrong<Eigen::bfloat16>(host, count, comm.size(), op);
  } else {
    mine.wrong = CountWrong<int32_t>(host, count, comm.size(), op);
  }
  if (in_place) fill();  // In place, later calls must not overflow.

  const auto warmup_start = std::chrono::steady_clock::now();
  for (int i = 0; i < flags.warmup; ++i) call();
  if (flags.warmup > 0) {
    first_seconds = std::chrono::duration<double>(
                        std::chrono::steady_clock::now() - warmup_start)
                        .count() /
                    flags.warmup;
  }
  // The slowest rank's, so every rank makes the same number of calls.
  comm.AllReduce(&first_seconds, &first_seconds, 1, DataType::kFloat64,
                 ReduceOp::kMax);
  const int calls = CallsPerRow(bytes, flags.iters, first_seconds);
  const uint64_t sent_before = comm.stats().bytes_sent;
  comm.Barrier();
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < calls; ++i) call();
  const auto stop = std::chrono::steady_clock::now();
  mine.seconds_per_call =
      std::chrono::duration<double>(stop - start).count() / calls;
  mine.bytes_sent_per_call =
      static_cast<double>(comm.stats().bytes_sent - sent_before) / calls;
  // The row over all ranks, wherever they are (threads or processes).
  double worst[2] = {mine.seconds_per_call, mine.bytes_sent_per_call};
  comm.AllReduce(worst, worst, 2, DataType::kFloat64, ReduceOp::kMax);
  comm.AllReduce(&mine.wrong, &mine.wrong, 1, DataType::kFloat64,
                 ReduceOp::kSum);
  return RowResult{worst[0], worst[1], mine.wrong};
}

void RunRank(Communicator& comm, const Flags& flags,
             const std::vector<uint64_t>& sizes, DataType type, ReduceOp op,
             const Report& report) {
  const int r = comm.rank();
  // Host copies to fill and check; the buffers the backend works on may be
  // GPU memory (nccl).
  std::vector<unsigned char> host(sizes.back());
  const bool on_device = RankBuffer::OnDevice(flags.backend);
  RankBuffer send(on_device, r, sizes.back()), recv(on_device, r, sizes.back());
  const bool reproducible = flags.op == "repro_sum";
  for (uint64_t bytes : sizes) {
    // The reproducible sum beside the plain one, size by size, so the
    // ratio compares runs made moments apart.
    RowResult sum[2];
    if (reproducible) {
      for (const bool in_place : {false, true}) {
        sum[in_place] = Measure(comm, flags, bytes, in_place, type, op, false,
                                host, send, recv);
      }
      if (r == 0) report(bytes, "sum", sum[0], sum[1], nullptr);
    }
    const RowResult out_of_place = Measure(comm, flags, bytes, false, type, op,
                                           reproducible, host, send, recv);
    const RowResult in_place = Measure(comm, flags, bytes, true, type, op,
                                       reproducible, host, send, recv);
    if (r == 0) {
      report(bytes, flags.op, out_of_place, in_place,
             reproducible ? sum : nullptr);
    }
  }
}

int Main(int argc, char** argv) {
  Flags flags;
  CLI::App app{
      "Allreduce time and bandwidth per message size, one thread per rank, "
      "in the manner of nccl-tests (whose short flags -b -e -f -g -n -w "
      "work here too).",
      "allreduce_bench"};
  ringlet::cli::UseConventions(app);
  std::vector<std::string> backends;
  std::string summaries;
  for (const BackendSpec* spec : RegisteredBackends()) {
    backends.push_back(spec->name);
    summaries += (summaries.empty() ? "" : "; ") + spec->summary;
  }
  app.add_option("--backend", flags.backend, summaries)
      ->check(CLI::IsMember(backends));
  app.add_option("-g,--ranks", flags.ranks,
                 "ranks (threads); under mpirun, per process")
      ->check(CLI::Range(1, 64));
  app.add_option("-b,--min_bytes", flags.min_bytes, "smallest size (K, M, G)");
  app.add_option("-e,--max_bytes", flags.max_bytes, "largest size (K, M, G)");
  app.add_option("-f,--factor", flags.factor, "size multiplier between rows")
      ->check(cli::RealIn(1.01, 1024));
  app.add_option("-n,--iters", flags.iters, "timed calls per row (at least)")
      ->check(CLI::Range(1, 1000000));
  app.add_option("-w,--warmup", flags.warmup, "untimed calls per row")
      ->check(CLI::Range(0, 1000000));
  app.add_option("--op", flags.op,
                 "sum, avg, max, min, or repro_sum (the same bits for any "
                 "number of ranks; float32 or bfloat16; nccl: GPU buffers)")
      ->check(CLI::IsMember({"sum", "avg", "max", "min", "repro_sum"}));
  app.add_option("--dtype", flags.dtype,
                 "float32, float64, int32 or bfloat16 (bf16)")
      ->check(
          CLI::IsMember({"float32", "float64", "int32", "bfloat16", "bf16"}));
  app.add_flag("--json", flags.json, "one JSON object per row");
  RINGLET_PARSE_FLAGS(app, argc, argv);

  const DataType type = ParseDataType(flags.dtype);
  const bool reproducible = flags.op == "repro_sum";
  const ReduceOp op = reproducible ? ReduceOp::kSum : ParseReduceOp(flags.op);
  if (reproducible && type != DataType::kFloat32 &&
      type != DataType::kBFloat16) {
    std::fprintf(stderr,
                 "allreduce_bench: --op=repro_sum takes --dtype=float32 or "
                 "bfloat16\n");
    return 2;
  }
  std::vector<uint64_t> sizes;
  try {
    const uint64_t lo = ParseBytes(flags.min_bytes);
    const uint64_t hi = ParseBytes(flags.max_bytes);
    if (lo == 0 || lo > hi) {
      throw std::invalid_argument("need 0 < --min_bytes <= --max_bytes");
    }
    sizes = SweepSizes(lo, hi, flags.factor, SizeOf(type));
    // This process's ranks, with every buffer they allocate, against what
    // the host can give now.
    const uint64_t per_rank = BenchHostBytesPerRank(
        hi, SizeOf(type), RankBuffer::OnDevice(flags.backend), reproducible);
    const long double total = static_cast<long double>(per_rank) * flags.ranks;
    CheckBenchMemory(flags.max_bytes, per_rank, flags.ranks,
                     total >= 9e18L ? "more than any host holds"
                                    : host::HostMemoryShortfall(
                                          static_cast<int64_t>(total)));
  } catch (const std::invalid_argument& e) {
    std::fprintf(stderr, "allreduce_bench: %s\n", e.what());
    return 2;
  }

  std::vector<std::unique_ptr<Communicator>> group;
  std::shared_ptr<ProcessWorld> world;
  try {
    // mpirun, torchrun or srun: the ranks of every process in one group.
    world = JoinLaunchedJob(flags.ranks);
    if (world != nullptr) {
      group = world->CreateGroup(flags.backend, CommOptions{});
    } else if (FindBackend(flags.backend)->needs_processes) {
      throw std::invalid_argument(
          "--backend=" + flags.backend +
          " runs under mpirun: mpirun -np 2 allreduce_bench --backend=" +
          flags.backend + " --ranks=1");
    } else {
      group = CreateGroup(flags.backend, flags.ranks);
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "allreduce_bench: %s\n", e.what());
    return 1;
  }
  const int total_ranks = group[0]->size();
  const double bus = AllReduceBusFactor(total_ranks);
  std::string layout = std::to_string(total_ranks);
  if (world && world->processes() > 1) {
    layout += " in " + std::to_string(world->processes()) + " processes (" +
              Launcher() + ")";
  }
  const bool leader = group[0]->rank() == 0;
  // repro_sum rows end with their busbw over the plain sum's (the row
  // above), out-of-place and in-place.
  const bool versus = flags.op == "repro_sum";
  const char* versus_head = versus ? "      vs sum" : "";
  if (!flags.json && leader) {
    std::printf("# allreduce  backend %s  ranks %s\n", flags.backend.c_str(),
                layout.c_str());
    std::printf("# %10s %12s %8s %6s %5s   %35s   %35s %14s%s\n", "", "", "",
                "", "", "out-of-place", "in-place", "", versus_head);
    std::printf(
        "# %10s %12s %8s %6s %5s   %9s %8s %8s %7s   %9s %8s %8s "
        "%7s %14s%s\n",
        "size", "count", "type", "redop", "root", "time", "algbw", "busbw",
        "#wrong", "time", "algbw", "busbw", "#wrong", "sent/rank",
        versus ? "   oop     ip" : "");
    std::printf(
        "# %10s %12s %8s %6s %5s   %9s %8s %8s %7s   %9s %8s %8s "
        "%7s %14s\n",
        "(B)", "(elements)", "", "", "", "(us)", "(GB/s)", "(GB/s)", "", "(us)",
        "(GB/s)", "(GB/s)", "", "(B)");
    std::fflush(stdout);  // Seen before the first row, however long it takes.
  }
  double busbw_sum = 0;
  int busbw_rows = 0;
  size_t wrong_total = 0;
  const auto report = [&](uint64_t bytes, const std::string& row_op,
                          const RowResult& oop, const RowResult& ip,
                          const RowResult* sum) {
    const size_t count = bytes / SizeOf(type);
    const auto sent = static_cast<unsigned long long>(oop.bytes_sent_per_call);
    const double oop_algbw = bytes / oop.seconds_per_call / 1e9;
    const double ip_algbw = bytes / ip.seconds_per_call / 1e9;
    // The footer's average is the asked op's.
    if (row_op == flags.op) {
      busbw_sum += (oop_algbw + ip_algbw) * bus;
      busbw_rows += 2;
    }
    wrong_total += static_cast<size_t>(oop.wrong + ip.wrong);
    // Busbw ratios are time ratios inverted: the same bytes moved.
    const double versus_oop =
        sum != nullptr ? sum[0].seconds_per_call / oop.seconds_per_call : 0;
    const double versus_ip =
        sum != nullptr ? sum[1].seconds_per_call / ip.seconds_per_call : 0;
    if (flags.json) {
      for (const bool in_place : {false, true}) {
        const RowResult& row = in_place ? ip : oop;
        const double algbw = in_place ? ip_algbw : oop_algbw;
        nlohmann::ordered_json j = {
            {"backend", flags.backend},
            {"ranks", total_ranks},
            {"op", row_op},
            {"dtype", flags.dtype},
            {"in_place", in_place},
            {"bytes", bytes},
            {"count", count},
            {"time_us", row.seconds_per_call * 1e6},
            {"algbw_gbps", algbw},
            {"busbw_gbps", algbw * bus},
            {"wrong", static_cast<uint64_t>(row.wrong)},
            {"bytes_sent_per_rank",
             static_cast<uint64_t>(row.bytes_sent_per_call)}};
        if (sum != nullptr) j["vs_sum"] = in_place ? versus_ip : versus_oop;
        std::printf("%s\n", j.dump().c_str());
      }
    } else {
      std::printf(
          "  %10llu %12zu %8s %6s %5s   %9.2f %8.3f %8.3f %7zu   %9.2f "
          "%8.3f %8.3f %7zu %14llu",
          static_cast<unsigned long long>(bytes), count, Name(type),
          row_op.c_str(), "-", oop.seconds_per_call * 1e6, oop_algbw,
          oop_algbw * bus, static_cast<size_t>(oop.wrong),
          ip.seconds_per_call * 1e6, ip_algbw, ip_algbw * bus,
          static_cast<size_t>(ip.wrong), sent);
      if (sum != nullptr) std::printf("  %5.2fx %5.2fx", versus_oop, versus_ip);
      std::printf("\n");
    }
    std::fflush(stdout);
  };

  std::vector<std::thread> threads;
  std::vector<std::string> errors(group.size());
  for (size_t r = 0; r < group.size(); ++r) {
    threads.emplace_back([&, r] {
      try {
        RunRank(*group[r], flags, sizes, type, op, report);
      } catch (const std::exception& e) {
        errors[r] = e.what();
      }
    });
  }
  for (std::thread& t : threads) t.join();
  for (const std::string& e : errors) {
    if (!e.empty()) {
      std::fprintf(stderr, "allreduce_bench: %s\n", e.c_str());
      return 1;
    }
  }
  if (!flags.json && leader) {
    std::printf("# Out of bounds values : %zu %s\n", wrong_total,
                wrong_total == 0 ? "OK" : "WRONG");
    std::printf("# Avg bus bandwidth    : %.3f GB/s\n",
                busbw_rows > 0 ? busbw_sum / busbw_rows : 0.0);
  }
  return wrong_total == 0 ? 0 : 1;
}

}  // namespace
}  // namespace ringlet::collectives

int main(int argc, char** argv) {
  return ringlet::cli::RunMain("allreduce_bench", [&] {
    return ringlet::collectives::Main(argc, argv);
  });
}

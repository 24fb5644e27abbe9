#include "collectives/backends/mpi/mpi_world.h"

#include <unistd.h>

#include <cstdlib>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>

#include "collectives/api/collective_error.h"

namespace ringlet::collectives::mpi {
namespace {

// One lock for every MPI call of the process (MPI_THREAD_SERIALIZED).
std::mutex& MpiLock() {
  static std::mutex mu;
  return mu;
}

std::string ErrorString(int code) {
  char text[MPI_MAX_ERROR_STRING];
  int length = 0;
  if (MPI_Error_string(code, text, &length) != MPI_SUCCESS) {
    return "MPI error " + std::to_string(code);
  }
  return std::string(text, length);
}

// MPI is started once per process and finalised when the process exits
// normally (after main returns, once the objects using it are gone).
class Runtime {
 public:
  Runtime() {
    int provided = 0;
    const int code =
        MPI_Init_thread(nullptr, nullptr, MPI_THREAD_SERIALIZED, &provided);
    if (code != MPI_SUCCESS) {
      error_ = "MPI_Init_thread failed: " + ErrorString(code);
      return;
    }
    started_ = true;
    if (provided < MPI_THREAD_SERIALIZED) {
      error_ =
          "this MPI library does not support MPI_THREAD_SERIALIZED (it "
          "offers level " +
          std::to_string(provided) + "); ringlet's ranks are threads";
      return;
    }
    // Errors come back as codes, so they become CollectiveErrors.
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  }
  ~Runtime() {
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (started_ && !finalized) MPI_Finalize();
  }
  const std::string& error() const { return error_; }

 private:
  bool started_ = false;
  std::string error_;
};

void Check(const char* what, int code) {
  if (code != MPI_SUCCESS) {
    throw CollectiveError(std::string(what) + ": " + ErrorString(code));
  }
}

}  // namespace

bool LaunchedByMpirun() {
  return std::getenv("OMPI_COMM_WORLD_SIZE") != nullptr ||
         std::getenv("PMIX_RANK") != nullptr ||
         std::getenv("PMI_RANK") != nullptr;
}

std::shared_ptr<MpiWorld> MpiWorld::Join(int local_ranks) {
  static Runtime runtime;
  if (!runtime.error().empty()) throw CollectiveError(runtime.error());
  std::shared_ptr<MpiWorld> world(new MpiWorld());
  std::lock_guard<std::mutex> lock(MpiLock());
  Check("MPI_Comm_rank", MPI_Comm_rank(MPI_COMM_WORLD, &world->process_));
  Check("MPI_Comm_size", MPI_Comm_size(MPI_COMM_WORLD, &world->processes_));
  world->local_ranks_.assign(world->processes_, 0);
  Check("MPI_Allgather (ranks per process)",
        MPI_Allgather(&local_ranks, 1, MPI_INT, world->local_ranks_.data(), 1,
                      MPI_INT, MPI_COMM_WORLD));
  world->first_rank_.assign(world->processes_, 0);
  for (int p = 0; p < world->processes_; ++p) {
    if (world->local_ranks_[p] < 1) {
      throw CollectiveError("process " + std::to_string(p) + " offered " +
                            std::to_string(world->local_ranks_[p]) +
                            " ranks; every process needs at least 1");
    }
    world->first_rank_[p] = world->size_;
    world->size_ += world->local_ranks_[p];
  }
  char host[256] = {0};
  gethostname(host, sizeof(host) - 1);
  world->host_ = host;
  world->ResetLocalDevices(local_ranks);
  return world;
}

int MpiWorld::ProcessOf(int rank) const {
  int p = processes_ - 1;
  while (p > 0 && first_rank_[p] > rank) --p;
  return p;
}

void MpiWorld::Call(const char* what, const std::function<int()>& fn) {
  std::lock_guard<std::mutex> lock(MpiLock());
  Check(what, fn());
}

bool MpiWorld::Wait(MPI_Request* request,
                    const std::function<bool()>& give_up) {
  // Spin briefly for the latency of small messages, then back off so a
  // waiting rank leaves the cores to the ranks computing.
  for (int attempt = 0;; ++attempt) {
    int done = 0;
    Call("MPI_Test",
         [&] { return MPI_Test(request, &done, MPI_STATUS_IGNORE); });
    if (done) return true;
    if (give_up()) return false;
    if (attempt < 200) {
      std::this_thread::yield();
    } else {
      std::this_thread::sleep_for(std::chrono::microseconds(50));
    }
  }
}

MPI_Comm MpiWorld::DupWorld() {
  MPI_Comm comm = MPI_COMM_NULL;
  Call("MPI_Comm_dup", [&] { return MPI_Comm_dup(MPI_COMM_WORLD, &comm); });
  Call("MPI_Comm_set_errhandler",
       [&] { return MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN); });
  return comm;
}

void MpiWorld::SumOverProcesses(double* values, size_t count) {
  if (processes_ == 1 || count == 0) return;
  Call("MPI_Allreduce (statistics)", [&] {
    return MPI_Allreduce(MPI_IN_PLACE, values, static_cast<int>(count),
                         MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
  });
}

std::vector<std::string> MpiWorld::GatherFromProcesses(
    const std::string& mine) {
  if (processes_ == 1) return {mine};
  const int my_length = static_cast<int>(mine.size());
  std::vector<int> lengths(processes_), offsets(processes_);
  Call("MPI_Allgather (lengths)", [&] {
    return MPI_Allgather(&my_length, 1, MPI_INT, lengths.data(), 1, MPI_INT,
                         MPI_COMM_WORLD);
  });
  int total = 0;
  for (int p = 0; p < processes_; ++p) {
    offsets[p] = total;
    total += lengths[p];
  }
  std::string all(static_cast<size_t>(total), '\0');
  Call("MPI_Allgatherv", [&] {
    return MPI_Allgatherv(mine.data(), my_length, MPI_CHAR, all.data(),
                          lengths.data(), offsets.data(), MPI_CHAR,
                          MPI_COMM_WORLD);
  });
  std::vector<std::string> out;
  for (int p = 0; p < processes_; ++p) {
    out.push_back(all.substr(offsets[p], lengths[p]));
  }
  return out;
}

void MpiWorld::AbortJob(int exit_code) {
  MPI_Abort(MPI_COMM_WORLD, exit_code);
  std::_Exit(exit_code);
}

}  // namespace ringlet::collectives::mpi

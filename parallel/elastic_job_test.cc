// ElasticJob in one process: alone it runs the body once and rethrows what
// fails; as a job its launcher restarted (torchrun's environment for one
// process, TORCHELASTIC_RESTART_COUNT=1) it resumes from the checkpoint a
// first start wrote, and refuses a file that is not its model's. Regroups
// and joiners need processes: tests/elastic_mlp_test.sh.
#include "parallel/elastic_job.h"

#include <cstdlib>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include "collectives/api/collective_error.h"
#include "collectives/testing/tcp_processes.h"
#include "data/data_error.h"
#include "data/safetensors.h"
#include "gtest/gtest.h"
#include "nn/layers/containers.h"
#include "nn/layers/layers.h"
#include "parallel/testing/batches.h"

namespace ringlet::parallel {
namespace {

using testing::Cpus;
using testing::RandomBatch;
using testing::Seeded;
using testing::Shards;

// Flatten, linear 64 -> hidden, ReLU, linear hidden -> 10.
std::unique_ptr<nn::Sequential> Net(int hidden) {
  auto net = std::make_unique<nn::Sequential>();
  net->Add(std::make_unique<nn::Flatten>());
  net->Add(std::make_unique<nn::Linear>(64, hidden));
  net->Add(std::make_unique<nn::ReLU>());
  net->Add(std::make_unique<nn::Linear>(hidden, 10));
  return net;
}

DataParallel::ModelFactory Factory(int hidden, uint64_t seed) {
  return Seeded([hidden] { return Net(hidden); }, seed);
}

DataParallelOptions Adam(const ElasticJob& job) {
  DataParallelOptions options;
  options.optimizer.name = "adamw";
  options.optimizer.lr = 1e-2f;
  options.processes = job.processes();
  return options;
}

// Every value of dp's state, in State()'s order.
std::vector<std::vector<float>> Values(DataParallel& dp) {
  std::vector<std::vector<float>> values;
  for (const nn::Tensor* t : dp.State(0).tensors) {
    values.emplace_back(t->data(), t->data() + t->numel());
  }
  return values;
}

// torchrun's environment for a job of one process, restarted once, while
// it lives.
class RestartedJobEnvironment {
 public:
  RestartedJobEnvironment() {
    const std::map<std::string, std::string> set = {
        {"RANK", "0"},
        {"WORLD_SIZE", "1"},
        {"LOCAL_RANK", "0"},
        {"MASTER_ADDR", "127.0.0.1"},
        {"MASTER_PORT", std::to_string(collectives::testing::FreePort())},
        {"TORCHELASTIC_RESTART_COUNT", "1"}};
    for (const auto& [name, value] : set) {
      ::setenv(name.c_str(), value.c_str(), 1);
      names_.push_back(name);
    }
  }
  ~RestartedJobEnvironment() {
    for (const std::string& name : names_) ::unsetenv(name.c_str());
  }

 private:
  std::vector<std::string> names_;
};

ElasticOptions Checkpointed(const std::string& path, int64_t every) {
  ElasticOptions options;
  options.program = "elastic_job_test";
  options.checkpoint = path;
  options.checkpoint_every = every;
  return options;
}

TEST(ElasticJobTest, AloneRunsTheBodyOnceFromTheStart) {
  ElasticJob job(2, ElasticOptions{});
  EXPECT_EQ(job.processes(), nullptr);
  EXPECT_EQ(job.num_processes(), 1);
  EXPECT_TRUE(job.leader());
  int calls = 0;
  EXPECT_EQ(job.Run([&] {
    ++calls;
    DataParallel dp(Factory(8, 1), Cpus(2), Adam(job));
    const ElasticStart at = job.Resume(dp);
    EXPECT_EQ(at.epoch, 0);
    EXPECT_EQ(at.step, 0);
    EXPECT_TRUE(at.sums.empty());
    EXPECT_EQ(at.Sum(3), 0);
    dp.TrainStep(Shards(RandomBatch(8, 8, 1), 2));
    job.StepDone(dp, 0, 1, {2.5});
    return 7;
  }),
            7);
  EXPECT_EQ(calls, 1);
  EXPECT_EQ(job.records(), "");
}

TEST(ElasticJobTest, AloneAFailureIsRethrown) {
  ElasticJob job(1, ElasticOptions{});
  int calls = 0;
  EXPECT_THROW(job.Run([&]() -> int {
    ++calls;
    throw collectives::CollectiveError("a peer is gone");
  }),
               collectives::CollectiveError);
  EXPECT_EQ(calls, 1);
}

TEST(ElasticJobTest, CheckpointsNeedAFileAndAPositiveInterval) {
  EXPECT_THROW(ElasticJob(1, Checkpointed("", 5)), std::invalid_argument);
  EXPECT_THROW(ElasticJob(1, Checkpointed("x.ckpt", -1)),
               std::invalid_argument);
}

TEST(ElasticJobTest, ARestartResumesFromTheLastCheckpoint) {
  const std::string path = ::testing::TempDir() + "/resumed.ckpt";
  std::remove(path.c_str());
  std::vector<std::vector<float>> at_step_4;
  {
    // A first start: a checkpoint every 2 steps, 5 steps.
    ElasticJob job(1, Checkpointed(path, 2));
    DataParallel dp(Factory(8, 1), Cpus(1), Adam(job));
    for (int step = 1; step <= 5; ++step) {
      dp.TrainStep(Shards(RandomBatch(8, 8, step), 1));
      job.StepDone(dp, 1, step, {step * 1.5, -1.0 * step});
      if (step == 4) at_step_4 = Values(dp);
    }
  }  // Waits for the last write.
  RestartedJobEnvironment restarted;
  ElasticJob job(1, Checkpointed(path, 2));
  ASSERT_NE(job.processes(), nullptr);
  // Another seed: every value must come from the file.
  DataParallel dp(Factory(8, 99), Cpus(1), Adam(job));
  ASSERT_NE(Values(dp), at_step_4);
  const ElasticStart at = job.Resume(dp);
  EXPECT_EQ(at.epoch, 1);
  EXPECT_EQ(at.step, 4);
  EXPECT_EQ(at.sums, (std::vector<double>{6.0, -4.0}));
  EXPECT_EQ(Values(dp), at_step_4);  // Bit for bit, Adam's moments too.
  // Resumed once: the next body starts where it is.
  EXPECT_EQ(job.Resume(dp).step, 0);
}

TEST(ElasticJobTest, ARestartRefusesAnotherModelsCheckpoint) {
  const std::string path = ::testing::TempDir() + "/other_model.ckpt";
  {
    ElasticJob job(1, Checkpointed(path, 1));
    DataParallel dp(Factory(8, 1), Cpus(1), Adam(job));
    dp.TrainStep(Shards(RandomBatch(8, 8, 1), 1));
    job.StepDone(dp, 0, 1);
  }
  RestartedJobEnvironment restarted;
  ElasticJob job(1, Checkpointed(path, 1));
  DataParallel dp(Factory(9, 1), Cpus(1), Adam(job));  // 9 hidden, not 8.
  try {
    job.Resume(dp);
    FAIL() << "a checkpoint of 8 hidden units loaded into 9";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("in another shape"), std::string::npos)
        << e.what();
  }
}

TEST(ElasticJobTest, ARestartRefusesAnotherRunsCheckpoint) {
  const std::string path = ::testing::TempDir() + "/other_run.ckpt";
  ElasticOptions options = Checkpointed(path, 1);
  options.settings = {{"seed", "1"}, {"data", "digits"}};
  {
    ElasticJob job(1, options);
    DataParallel dp(Factory(8, 1), Cpus(1), Adam(job));
    dp.TrainStep(Shards(RandomBatch(8, 8, 1), 1));
    job.StepDone(dp, 0, 1);
  }
  RestartedJobEnvironment restarted;
  options.settings["seed"] = "2";
  try {
    ElasticJob job(1, options);
    FAIL() << "a checkpoint of seed 1 resumed by a run of seed 2";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("is another run's: its seed is '1', "
                                         "this run's '2'"),
              std::string::npos)
        << e.what();
  }
  options.settings = {{"data", "digits"}};  // The seed left out: also not it.
  EXPECT_THROW(ElasticJob(1, options), std::invalid_argument);
  options.settings = {{"seed", "1"}, {"data", "digits"}};
  ElasticJob job(1, options);  // The same run resumes.
  DataParallel dp(Factory(8, 1), Cpus(1), Adam(job));
  EXPECT_EQ(job.Resume(dp).step, 1);
}

TEST(ElasticJobTest, ARestartRefusesAFileNoJobWrote) {
  const std::string path = ::testing::TempDir() + "/not_a_checkpoint.ckpt";
  data::SafetensorsFile file;
  data::Array a;
  a.type = data::ElementType::kFloat32;
  a.dims = {1};
  a.bytes.assign(sizeof(float), 0);
  file.tensors.emplace_back("weight", a);
  data::WriteSafetensors(path, file);
  RestartedJobEnvironment restarted;
  try {
    ElasticJob job(1, Checkpointed(path, 1));
    FAIL() << "a safetensors file without the job's metadata was taken";
  } catch (const data::DataError& e) {
    EXPECT_NE(std::string(e.what()).find("not an ElasticJob's checkpoint"),
              std::string::npos)
        << e.what();
  }
}

TEST(ElasticJobTest, ARestartRefusesACheckpointThatIsAFolder) {
  RestartedJobEnvironment restarted;
  try {
    ElasticJob job(1, Checkpointed(::testing::TempDir(), 1));
    FAIL() << "a folder taken for a checkpoint";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("is not a file"), std::string::npos)
        << e.what();
  }
}

TEST(ElasticJobTest, ARestartWithoutACheckpointStartsFromTheBeginning) {
  const std::string path = ::testing::TempDir() + "/never_written.ckpt";
  std::remove(path.c_str());
  RestartedJobEnvironment restarted;
  ElasticJob job(1, Checkpointed(path, 1));
  DataParallel dp(Factory(8, 1), Cpus(1), Adam(job));
  EXPECT_EQ(job.Resume(dp).step, 0);
}

}  // namespace
}  // namespace ringlet::parallel

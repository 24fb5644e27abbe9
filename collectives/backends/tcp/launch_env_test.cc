#include "collectives/backends/tcp/launch_env.h"

#include <gtest/gtest.h>

#include <map>
#include <stdexcept>
#include <string>

namespace ringlet::collectives::tcp {
namespace {

using Env = std::map<std::string, std::string>;

std::optional<LaunchInfo> Read(const Env& env) {
  return LaunchInfoFromEnv([&](const char* name) -> const char* {
    auto it = env.find(name);
    return it == env.end() ? nullptr : it->second.c_str();
  });
}

std::string ErrorOf(const Env& env) {
  try {
    Read(env);
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "";
}

// What torchrun --standalone --nproc_per_node=3 sets for its second worker.
const Env kTorchrun = {{"RANK", "1"},
                       {"WORLD_SIZE", "3"},
                       {"LOCAL_RANK", "1"},
                       {"LOCAL_WORLD_SIZE", "3"},
                       {"GROUP_RANK", "0"},
                       {"MASTER_ADDR", "trainer-host"},
                       {"MASTER_PORT", "41234"},
                       {"TORCHELASTIC_RESTART_COUNT", "2"},
                       {"TORCHELASTIC_RUN_ID", "none"}};

// What srun -N 2 -n 4 sets for task 3 (its second on the second node).
const Env kSrun = {{"SLURM_PROCID", "3"},
                   {"SLURM_STEP_NUM_TASKS", "4"},
                   {"SLURM_NTASKS", "4"},
                   {"SLURM_LOCALID", "1"},
                   {"SLURM_NODEID", "1"},
                   {"SLURM_STEP_TASKS_PER_NODE", "2(x2)"},
                   {"SLURM_STEP_NODELIST", "gpu[07-08]"},
                   {"SLURM_JOB_NODELIST", "gpu[07-09]"},
                   {"SLURM_RESTART_COUNT", "1"}};

// The job's name in a rendezvous store: the user's, the launcher's run,
// or where its rendezvous is; and the store itself.
TEST(LaunchEnvTest, TheJobIdAndTheStoreComeFromTheEnvironment) {
  EXPECT_EQ(Read(kTorchrun)->job_id, "trainer-host:41234");  // Run id "none".
  EXPECT_EQ(Read(kTorchrun)->store, "");
  Env torchrun = kTorchrun;
  torchrun["TORCHELASTIC_RUN_ID"] = "a1b2c3";
  torchrun["RINGLET_RENDEZVOUS_STORE"] = "etcd://10.0.0.5:2379";
  EXPECT_EQ(Read(torchrun)->job_id, "a1b2c3");
  EXPECT_EQ(Read(torchrun)->store, "etcd://10.0.0.5:2379");
  torchrun["RINGLET_JOB_ID"] = "mine";
  EXPECT_EQ(Read(torchrun)->job_id, "mine");
  Env srun = kSrun;
  srun["SLURM_JOB_ID"] = "4711";
  srun["SLURM_STEP_ID"] = "2";
  EXPECT_EQ(Read(srun)->job_id, "4711.2");
}

TEST(LaunchEnvTest, NoLauncherIsNoLaunch) {
  EXPECT_FALSE(Read({}).has_value());
  // A batch script's own environment: the allocation, no job step.
  EXPECT_FALSE(Read({{"SLURM_PROCID", "0"},
                     {"SLURM_NTASKS", "4"},
                     {"SLURM_JOB_NODELIST", "n1"}})
                   .has_value());
}

TEST(LaunchEnvTest, TorchrunsEnvironment) {
  const std::optional<LaunchInfo> info = Read(kTorchrun);
  ASSERT_TRUE(info.has_value());
  EXPECT_EQ(info->launcher, "torchrun");
  EXPECT_EQ(info->process, 1);
  EXPECT_EQ(info->processes, 3);
  EXPECT_EQ(info->process_on_host, 1);
  EXPECT_EQ(info->processes_on_host, 3);
  EXPECT_EQ(info->master_addr, "trainer-host");
  EXPECT_EQ(info->master_port, 41234);
  EXPECT_EQ(info->restart_count, 2);
}

TEST(LaunchEnvTest, TorchrunsAgentStoreHoldsMasterPort) {
  // PyTorch 2's torchrun: MASTER_PORT is its own store's, held by its agent.
  Env env = kTorchrun;
  env["TORCHELASTIC_USE_AGENT_STORE"] = "True";
  std::optional<LaunchInfo> info = Read(env);
  ASSERT_TRUE(info.has_value());
  EXPECT_EQ(info->master_port, 41234 + 1 + 2);  // restart 2
  EXPECT_NE(info->port_note.find("RINGLET_RENDEZVOUS_PORT"), std::string::npos);
  env["MASTER_PORT"] = "65535";
  EXPECT_EQ(Read(env)->master_port, 65535 - 3);
  env["RINGLET_RENDEZVOUS_PORT"] = "30001";
  EXPECT_EQ(Read(env)->master_port, 30001);
  env["TORCHELASTIC_USE_AGENT_STORE"] = "False";
  env.erase("RINGLET_RENDEZVOUS_PORT");
  EXPECT_EQ(Read(env)->master_port, 65535);
  EXPECT_EQ(Read(env)->port_note, "");
}

TEST(LaunchEnvTest, SrunsEnvironment) {
  const std::optional<LaunchInfo> info = Read(kSrun);
  ASSERT_TRUE(info.has_value());
  EXPECT_EQ(info->launcher, "srun");
  EXPECT_EQ(info->process, 3);
  EXPECT_EQ(info->processes, 4);
  EXPECT_EQ(info->process_on_host, 1);
  EXPECT_EQ(info->processes_on_host, 2);
  EXPECT_EQ(info->master_addr, "gpu07");  // The step's first host.
  EXPECT_EQ(info->master_port, 29500);
  EXPECT_EQ(info->restart_count, 1);
  Env with_master = kSrun;
  with_master["MASTER_ADDR"] = "login1";
  with_master["MASTER_PORT"] = "23456";
  EXPECT_EQ(Read(with_master)->master_addr, "login1");
  EXPECT_EQ(Read(with_master)->master_port, 23456);
}

// torchrun under srun: torchrun's workers, not srun's tasks.
TEST(LaunchEnvTest, TorchrunUnderSrunIsTorchrun) {
  Env both = kSrun;
  both.insert(kTorchrun.begin(), kTorchrun.end());
  EXPECT_EQ(Read(both)->launcher, "torchrun");
  EXPECT_EQ(Read(both)->processes, 3);
}

TEST(LaunchEnvTest, IncompleteOrMalformedEnvironmentsNameTheVariable) {
  EXPECT_NE(ErrorOf({{"RANK", "0"}}).find("RANK is set but WORLD_SIZE is not"),
            std::string::npos);
  EXPECT_NE(
      ErrorOf({{"WORLD_SIZE", "2"}}).find("WORLD_SIZE is set but RANK is not"),
      std::string::npos);
  EXPECT_NE(
      ErrorOf({{"RANK", "0"}, {"WORLD_SIZE", "2"}}).find("MASTER_ADDR is not"),
      std::string::npos);
  Env bad = kTorchrun;
  bad["RANK"] = "3";
  EXPECT_NE(ErrorOf(bad).find("RANK='3' is not a whole number from 0 to 2"),
            std::string::npos)
      << ErrorOf(bad);
  bad = kTorchrun;
  bad["WORLD_SIZE"] = "three";
  EXPECT_NE(ErrorOf(bad).find("WORLD_SIZE='three'"), std::string::npos);
  bad = kTorchrun;
  bad["MASTER_PORT"] = "70000";
  EXPECT_NE(ErrorOf(bad).find("MASTER_PORT='70000'"), std::string::npos);
  bad["MASTER_PORT"] = "0";
  EXPECT_NE(ErrorOf(bad).find("MASTER_PORT=0"), std::string::npos);
  bad = kTorchrun;
  bad["WORLD_SIZE"] = "0";
  EXPECT_NE(ErrorOf(bad).find("WORLD_SIZE"), std::string::npos);
  bad = kTorchrun;
  bad["LOCAL_RANK"] = "-1";
  EXPECT_NE(ErrorOf(bad).find("LOCAL_RANK='-1'"), std::string::npos);
  Env no_hosts = kSrun;
  no_hosts.erase("SLURM_STEP_NODELIST");
  no_hosts.erase("SLURM_JOB_NODELIST");
  EXPECT_NE(ErrorOf(no_hosts).find("set MASTER_ADDR"), std::string::npos);
}

// One process needs no rendezvous address.
TEST(LaunchEnvTest, OneProcessNeedsNoMasterAddress) {
  const std::optional<LaunchInfo> info =
      Read({{"RANK", "0"}, {"WORLD_SIZE", "1"}});
  ASSERT_TRUE(info.has_value());
  EXPECT_EQ(info->processes, 1);
}

TEST(LaunchEnvTest, TasksOnEachNodeOfASlurmStep) {
  EXPECT_EQ(TasksOnNode("4", 0), 4);
  EXPECT_EQ(TasksOnNode("2(x3),1", 0), 2);
  EXPECT_EQ(TasksOnNode("2(x3),1", 2), 2);
  EXPECT_EQ(TasksOnNode("2(x3),1", 3), 1);
  EXPECT_EQ(TasksOnNode("1,3", 1), 3);
  for (const char* bad : {"", "2(x3", "a", "2(x0)", "2;3"}) {
    EXPECT_THROW(TasksOnNode(bad, 0), std::invalid_argument) << bad;
  }
  EXPECT_THROW(TasksOnNode("2(x3),1", 4), std::invalid_argument);
}

TEST(LaunchEnvTest, FirstHostOfSlurmNodeLists) {
  EXPECT_EQ(FirstHostOfNodeList("node1"), "node1");
  EXPECT_EQ(FirstHostOfNodeList("node1,node2"), "node1");
  EXPECT_EQ(FirstHostOfNodeList("node[07-09,12],gpu1"), "node07");
  EXPECT_EQ(FirstHostOfNodeList("gpu[3,5]"), "gpu3");
  EXPECT_EQ(FirstHostOfNodeList("rack-a[009-010]-ib"), "rack-a009-ib");
  EXPECT_EQ(FirstHostOfNodeList("a[1-2],b[3-4]"), "a1");
  for (const char* bad : {"", "node[", "node[]", "node[a-b]", "node]1["}) {
    EXPECT_THROW(FirstHostOfNodeList(bad), std::invalid_argument) << bad;
  }
}

}  // namespace
}  // namespace ringlet::collectives::tcp

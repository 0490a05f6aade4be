//===- SlurmEnvironmentTest.cpp - torchrun's variables from srun's --------===//

#include "tools/pp-rank/RankEnvironment.h"

#include <gtest/gtest.h>

#include <cstdlib>

namespace {

TEST(SlurmEnvironment, TheFirstHostOfAHostList) {
  EXPECT_EQ(firstSlurmHost("node07"), "node07");
  EXPECT_EQ(firstSlurmHost("node07,node09"), "node07");
  EXPECT_EQ(firstSlurmHost("node[01-04,07],gpu5"), "node01");
  EXPECT_EQ(firstSlurmHost("node[3,5-6]"), "node3");
  EXPECT_EQ(firstSlurmHost("rack[2-3]-a"), "rack2-a");
  EXPECT_EQ(firstSlurmHost("gpu5,node[01-04]"), "gpu5");
  EXPECT_EQ(firstSlurmHost(""), "");
}

TEST(SlurmEnvironment, TasksPerNode) {
  EXPECT_EQ(slurmTasksOnNode("4", 0), 4);
  EXPECT_EQ(slurmTasksOnNode("2(x3),1", 0), 2);
  EXPECT_EQ(slurmTasksOnNode("2(x3),1", 2), 2);
  EXPECT_EQ(slurmTasksOnNode("2(x3),1", 3), 1);
  EXPECT_EQ(slurmTasksOnNode("2(x3),1", 4), std::nullopt);
  EXPECT_EQ(slurmTasksOnNode("two", 0), std::nullopt);
}

/// Sets the environment variables of one srun task, and unsets them and
/// torchrun's after.
class SrunTask : public ::testing::Test {
protected:
  void TearDown() override {
    for (const char *name :
         {"SLURM_PROCID", "SLURM_STEP_NUM_TASKS", "SLURM_LOCALID",
          "SLURM_NODEID", "SLURM_TASKS_PER_NODE", "SLURM_JOB_NODELIST", "RANK",
          "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "MASTER_ADDR",
          "MASTER_PORT"})
      ::unsetenv(name);
  }
  static std::string variable(const char *name) {
    const char *value = std::getenv(name);
    return value ? value : "<unset>";
  }
};

TEST_F(SrunTask, BecomesTorchrunsVariables) {
  ::setenv("SLURM_PROCID", "5", 1);
  ::setenv("SLURM_STEP_NUM_TASKS", "8", 1);
  ::setenv("SLURM_LOCALID", "1", 1);
  ::setenv("SLURM_NODEID", "1", 1);
  ::setenv("SLURM_TASKS_PER_NODE", "4(x2)", 1);
  ::setenv("SLURM_JOB_NODELIST", "gpu[12-13]", 1);
  EXPECT_TRUE(adoptSlurmEnvironment());
  EXPECT_EQ(variable("RANK"), "5");
  EXPECT_EQ(variable("WORLD_SIZE"), "8");
  EXPECT_EQ(variable("LOCAL_RANK"), "1");
  EXPECT_EQ(variable("LOCAL_WORLD_SIZE"), "4");
  EXPECT_EQ(variable("MASTER_ADDR"), "gpu12");
  EXPECT_EQ(variable("MASTER_PORT"), "29500");
}

TEST_F(SrunTask, KeepsWhatTheUserSet) {
  ::setenv("SLURM_PROCID", "0", 1);
  ::setenv("SLURM_STEP_NUM_TASKS", "2", 1);
  ::setenv("MASTER_ADDR", "10.1.2.3", 1);
  ::setenv("MASTER_PORT", "4000", 1);
  EXPECT_TRUE(adoptSlurmEnvironment());
  EXPECT_EQ(variable("MASTER_ADDR"), "10.1.2.3");
  EXPECT_EQ(variable("MASTER_PORT"), "4000");
  // Under torchrun (RANK set) Slurm's variables are not read.
  ::setenv("SLURM_PROCID", "1", 1);
  EXPECT_FALSE(adoptSlurmEnvironment());
  EXPECT_EQ(variable("RANK"), "0");
}

TEST_F(SrunTask, OneTaskOrABatchScriptLaunchesTheRanks) {
  // sbatch's script: no step of several tasks.
  ::setenv("SLURM_PROCID", "0", 1);
  EXPECT_FALSE(adoptSlurmEnvironment());
  // srun of one task (pp-run then starts the ranks itself).
  ::setenv("SLURM_STEP_NUM_TASKS", "1", 1);
  EXPECT_FALSE(adoptSlurmEnvironment());
  EXPECT_EQ(variable("RANK"), "<unset>");
}

TEST_F(SrunTask, RefusesWhatItCannotRead) {
  ::setenv("SLURM_PROCID", "x", 1);
  ::setenv("SLURM_STEP_NUM_TASKS", "2", 1);
  EXPECT_THROW(adoptSlurmEnvironment(), std::runtime_error);
  ::setenv("SLURM_PROCID", "1", 1);
  ::setenv("SLURM_TASKS_PER_NODE", "1", 1);
  ::setenv("SLURM_NODEID", "3", 1);
  EXPECT_THROW(adoptSlurmEnvironment(), std::runtime_error);
  ::unsetenv("SLURM_TASKS_PER_NODE");
  EXPECT_THROW(adoptSlurmEnvironment(), std::runtime_error);
}

} // namespace

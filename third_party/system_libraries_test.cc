// Each system-library overlay in third_party/ compiles, links and works.
#include <gtest/gtest.h>
#include <mpi.h>

#include <CLI/CLI.hpp>
#include <Eigen/Dense>
#include <nlohmann/json.hpp>
#include <oneapi/dnnl/dnnl.hpp>
#include <string>

TEST(SystemLibraries, EigenMultipliesMatrices) {
  Eigen::Matrix2f a;
  a << 1, 2, 3, 4;
  const Eigen::Matrix2f b = a * a;
  EXPECT_EQ(b(0, 0), 7.0f);
  EXPECT_EQ(b(1, 1), 22.0f);
}

TEST(SystemLibraries, MpiReportsItsVersionWithoutInit) {
  char version[MPI_MAX_LIBRARY_VERSION_STRING];
  int length = 0;
  ASSERT_EQ(MPI_Get_library_version(version, &length), MPI_SUCCESS);
  EXPECT_NE(std::string(version, length).find("Open MPI"), std::string::npos)
      << version;
}

TEST(SystemLibraries, Cli11ParsesFlags) {
  CLI::App app;
  int batch = 0;
  app.add_option("--batch_size", batch);
  const char* argv[] = {"prog", "--batch_size=512"};
  app.parse(2, argv);
  EXPECT_EQ(batch, 512);
}

TEST(SystemLibraries, NlohmannJsonRoundTrips) {
  const nlohmann::json j = {{"epoch", 3}, {"loss", 0.5}};
  const nlohmann::json back = nlohmann::json::parse(j.dump());
  EXPECT_EQ(back.at("epoch").get<int>(), 3);
  EXPECT_DOUBLE_EQ(back.at("loss").get<double>(), 0.5);
}

TEST(SystemLibraries, OneDnnCreatesACpuEngineAndReportsItsVersion) {
  const dnnl_version_t* version = dnnl_version();
  EXPECT_GE(version->major, 2);
  dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  EXPECT_EQ(engine.get_kind(), dnnl::engine::kind::cpu);
}

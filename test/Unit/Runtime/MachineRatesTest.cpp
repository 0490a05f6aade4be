//===- MachineRatesTest.cpp - measured rates and their cache file ---------===//

#include "runtime/kernels/MachineRates.h"

#include "runtime/core/ThreadPool.h"

#include "TemporaryFiles.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <chrono>
#include <cmath>
#include <iostream>

using namespace pp::runtime;
using nlohmann::json;

namespace {

void expectPlausible(const MachineRates &rates) {
  for (double rate : {rates.flopsPerSecond, rates.bytesPerSecond,
                      rates.linkBytesPerSecond}) {
    EXPECT_TRUE(std::isfinite(rate));
    // Above any machine pp runs on being slower than 10 MFLOP/s or 10 MB/s.
    EXPECT_GT(rate, 1e7);
  }
}

void expectSame(const MachineRates &a, const MachineRates &b) {
  EXPECT_EQ(a.flopsPerSecond, b.flopsPerSecond);
  EXPECT_EQ(a.bytesPerSecond, b.bytesPerSecond);
  EXPECT_EQ(a.linkBytesPerSecond, b.linkBytesPerSecond);
}

json readJson(const std::string &path) { return json::parse(readBytes(path)); }

TEST(MachineRates, MeasuresTheKernelsAndRestoresTheThreadCount) {
  int threads = threadCount();
  auto start = std::chrono::steady_clock::now();
  MachineRates rates = measureMachineRates(2);
  double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  expectPlausible(rates);
  EXPECT_EQ(threadCount(), threads);
  // Well under a second on an idle machine; printed, not asserted (a
  // loaded machine or a sanitizer takes much longer).
  std::cout << "measured in " << seconds << " s: " << rates.flopsPerSecond
            << " FLOP/s, " << rates.bytesPerSecond << " B/s, "
            << rates.linkBytesPerSecond << " B/s link\n";
}

TEST(MachineRates, SecondCallReadsTheCache) {
  std::string folder = freshDirectory("pp-machine-rates") + "/nested";
  LoadedMachineRates first = loadOrMeasureMachineRates(folder, 1);
  EXPECT_TRUE(first.measured);
  expectPlausible(first.rates);

  LoadedMachineRates second = loadOrMeasureMachineRates(folder, 1);
  EXPECT_FALSE(second.measured);
  expectSame(second.rates, first.rates);

  // Another thread count is another entry, measured once.
  EXPECT_TRUE(loadOrMeasureMachineRates(folder, 2).measured);
  EXPECT_FALSE(loadOrMeasureMachineRates(folder, 2).measured);
  expectSame(loadOrMeasureMachineRates(folder, 1).rates, first.rates);

  json document = readJson(folder + "/machine-rates.json");
  EXPECT_EQ(document.at("format"), 1);
  ASSERT_EQ(document.at("entries").size(), 2u);
  const json &entry = document.at("entries")[0];
  EXPECT_EQ(entry.at("threads"), 1);
  EXPECT_EQ(entry.at("flop_rate"), first.rates.flopsPerSecond);
  EXPECT_NE(entry.at("machine").get<std::string>(), "");
  EXPECT_NE(entry.at("runtime").get<std::string>(), "unknown");
}

TEST(MachineRates, AnUnusableEntryOrFileIsMeasuredAgain) {
  std::string folder = freshDirectory("pp-machine-rates");
  std::string path = folder + "/machine-rates.json";
  loadOrMeasureMachineRates(folder, 1);
  json document = readJson(path);
  document["entries"][0]["byte_rate"] = -1;
  writeBytes(path, document.dump());
  EXPECT_TRUE(loadOrMeasureMachineRates(folder, 1).measured);
  EXPECT_FALSE(loadOrMeasureMachineRates(folder, 1).measured);

  writeBytes(path, "{not json");
  testing::internal::CaptureStderr();
  EXPECT_TRUE(loadOrMeasureMachineRates(folder, 1).measured);
  std::string warning = testing::internal::GetCapturedStderr();
  EXPECT_NE(warning.find("pp: warning: the machine rate cache '" + path +
                         "' is not valid JSON; measuring the rates again and "
                         "rewriting it\n"),
            std::string::npos)
      << warning;
  EXPECT_FALSE(loadOrMeasureMachineRates(folder, 1).measured);
}

TEST(MachineRates, AnUnwritableCacheWarnsAndStillMeasures) {
  std::string file = freshDirectory("pp-machine-rates") + "/a-file";
  writeBytes(file, "");
  testing::internal::CaptureStderr();
  LoadedMachineRates loaded = loadOrMeasureMachineRates(file + "/cache", 1);
  std::string warning = testing::internal::GetCapturedStderr();
  EXPECT_TRUE(loaded.measured);
  expectPlausible(loaded.rates);
  EXPECT_NE(warning.find("pp: warning: the machine rate cache '" + file +
                         "/cache/machine-rates.json' cannot be written"),
            std::string::npos)
      << warning;
}

} // namespace

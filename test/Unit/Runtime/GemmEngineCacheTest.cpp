//===- GemmEngineCacheTest.cpp - measured engine choices on disk -*- C++ -*-===//

#include "runtime/kernels/gemm/GemmEngineCache.h"

#include "runtime/core/FileDescriptor.h"

#include "TemporaryFiles.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <atomic>
#include <fcntl.h>
#include <stdexcept>
#include <sys/file.h>
#include <chrono>
#include <thread>
#include <vector>

using namespace pp::runtime;

namespace {

constexpr const char *kShape = "NT 64x1024x1024";

const std::vector<GemmEngine> &f32Engines() {
  return gemmEnginesFor(PP_DTYPE_F32);
}

/// A measurement that finds `engine` fastest and counts its calls.
std::function<GemmMeasurement()> measuring(GemmEngine engine,
                                           std::atomic<int> &calls) {
  return [engine, &calls] {
    ++calls;
    return GemmMeasurement{engine, {{engine, 100.0}}};
  };
}

TEST(GemmEngineCache, RoundTripsThroughItsFile) {
  std::string path = freshDirectory("pp-gemm-cache") + "/nested/cache.json";
  std::atomic<int> calls{0};
  EXPECT_EQ(GemmEngineCache(path, "machine A")
                .choose(kShape, f32Engines(), measuring(GemmEngine::Blis, calls)),
            GemmEngine::Blis);
  // A later process reads the choice instead of measuring.
  EXPECT_EQ(GemmEngineCache(path, "machine A")
                .choose(kShape, f32Engines(), measuring(GemmEngine::OpenBlas, calls)),
            GemmEngine::Blis);
  EXPECT_EQ(calls, 1);
  nlohmann::json file = nlohmann::json::parse(readBytes(path));
  EXPECT_EQ(file["machine"], "machine A");
  EXPECT_EQ(file["shapes"][kShape]["engine"], "blis");
  EXPECT_EQ(file["shapes"][kShape]["gflops"]["blis"], 100.0);
}

TEST(GemmEngineCache, CorruptOrForeignFileWarnsAndMeasuresAgain) {
  std::string path = freshDirectory("pp-gemm-cache") + "/cache.json";
  struct Case {
    const char *contents, *machine, *warning;
  } cases[] = {
      {"{\"format\": 1, \"shap", "machine A", "is not valid JSON"},
      {"[1, 2]", "machine A", "lacks \"format\": 1 or a \"shapes\" object"},
      {"{\"format\": 1, \"machine\": \"machine A\", \"shapes\": {\"NT "
       "64x1024x1024\": {\"engine\": \"mkl\"}}}",
       "machine A", "names no known engine for NT 64x1024x1024"},
      {"{\"format\": 1, \"machine\": \"machine A\", \"shapes\": {}}",
       "machine B", "was measured on another machine"}};
  for (const Case &test : cases) {
    writeBytes(path, test.contents);
    std::atomic<int> calls{0};
    testing::internal::CaptureStderr();
    GemmEngine engine = GemmEngineCache(path, test.machine)
                            .choose(kShape, f32Engines(), measuring(GemmEngine::OpenBlas, calls));
    std::string warnings = testing::internal::GetCapturedStderr();
    EXPECT_EQ(engine, GemmEngine::OpenBlas) << test.contents;
    EXPECT_EQ(calls, 1) << test.contents;
    EXPECT_NE(warnings.find("pp: warning: the GEMM engine cache '" + path +
                            "' " + test.warning),
              std::string::npos)
        << warnings;
    nlohmann::json rewritten = nlohmann::json::parse(readBytes(path));
    EXPECT_EQ(rewritten["machine"], test.machine);
    EXPECT_EQ(rewritten["shapes"][kShape]["engine"], "openblas");
  }
}

TEST(GemmEngineCache, UnusableLocationWarnsAndUsesTheFixedEngine) {
  std::string directory = freshDirectory("pp-gemm-cache");
  writeBytes(directory + "/file", "");
  std::atomic<int> calls{0};
  testing::internal::CaptureStderr();
  GemmEngineCache cache(directory + "/file/cache.json", "machine A");
  EXPECT_EQ(cache.choose(kShape, f32Engines(), measuring(GemmEngine::Blis, calls)),
            kUncachedGemmEngine);
  EXPECT_EQ(cache.choose("NN 1x1x1", f32Engines(), measuring(GemmEngine::Blis, calls)),
            kUncachedGemmEngine);
  // Another element type's first engine: bf16 widens to the fixed SGEMM.
  EXPECT_EQ(cache.choose("bf16 NN 1x1x1",
                         {GemmEngine::Widened, GemmEngine::OneDnn},
                         measuring(GemmEngine::OneDnn, calls)),
            GemmEngine::Widened);
  std::string warnings = testing::internal::GetCapturedStderr();
  EXPECT_EQ(calls, 0);
  EXPECT_NE(warnings.find("cannot get its folder"), std::string::npos)
      << warnings;
  EXPECT_EQ(warnings.find("warning", warnings.find("warning") + 1),
            std::string::npos)
      << "warned twice: " << warnings;
}

TEST(GemmEngineCache, AnEngineOutsideTheTypesEnginesIsMeasuredAgain) {
  std::string path = freshDirectory("pp-gemm-cache") + "/cache.json";
  writeBytes(path, "{\"format\": 1, \"machine\": \"machine A\", \"shapes\": "
                   "{\"bf16 NT 8x8x8\": {\"engine\": \"blis\"}}}");
  std::vector<GemmEngine> bf16{GemmEngine::Widened, GemmEngine::OneDnn};
  std::atomic<int> calls{0};
  testing::internal::CaptureStderr();
  EXPECT_EQ(GemmEngineCache(path, "machine A")
                .choose("bf16 NT 8x8x8", bf16,
                        measuring(GemmEngine::OneDnn, calls)),
            GemmEngine::OneDnn);
  std::string warnings = testing::internal::GetCapturedStderr();
  EXPECT_EQ(calls, 1);
  EXPECT_NE(warnings.find("names no known engine for bf16 NT 8x8x8"),
            std::string::npos)
      << warnings;
}

TEST(GemmEngineCache, GivesUpOnALockHeldTooLong) {
  std::string path = freshDirectory("pp-gemm-cache") + "/cache.json";
  pp::runtime::FileDescriptor holder(
      ::open((path + ".lock").c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644));
  ASSERT_EQ(::flock(holder.get(), LOCK_EX), 0);
  std::atomic<int> calls{0};
  GemmEngineCache cache(path, "machine A", std::chrono::milliseconds(50));
  try {
    cache.choose(kShape, f32Engines(), measuring(GemmEngine::Blis, calls));
    FAIL() << "choose returned while another holder kept the lock";
  } catch (const std::runtime_error &failure) {
    EXPECT_NE(std::string(failure.what())
                  .find("another process has held the GEMM engine cache "
                        "lock '" +
                        path + ".lock' for 0.05"),
              std::string::npos)
        << failure.what();
  }
  EXPECT_EQ(calls, 0);
}

TEST(GemmEngineCache, RacingCachesMeasureOnceAndAgree) {
  // Separate caches open separate lock descriptions, as processes do.
  std::string path = freshDirectory("pp-gemm-cache") + "/cache.json";
  std::atomic<int> calls{0};
  std::vector<GemmEngine> chosen(6);
  std::vector<std::thread> racers;
  for (size_t index = 0; index < chosen.size(); ++index)
    racers.emplace_back([&, index] {
      GemmEngine mine = kGemmEngines[index % 3];
      chosen[index] =
          GemmEngineCache(path, "machine A").choose(kShape, f32Engines(), [&, mine] {
            ++calls;
            std::this_thread::sleep_for(std::chrono::milliseconds(20));
            return GemmMeasurement{mine, {}};
          });
    });
  for (std::thread &racer : racers)
    racer.join();
  EXPECT_EQ(calls, 1);
  for (GemmEngine engine : chosen)
    EXPECT_EQ(engine, chosen[0]);
}

} // namespace

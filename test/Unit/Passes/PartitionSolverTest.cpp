//===- PartitionSolverTest.cpp - the partitioner against brute force ------===//
//
// On random cost and memory profiles, solvePartition finds the smallest
// bottleneck that every partition into contiguous stages (enumerated here)
// can reach under the memory limit, in loop and V placement, and
// solveSmallestPeakMemory the smallest peak memory.
//
//===----------------------------------------------------------------------===//

#include "passes/pipeline/PartitionSolver.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>

using namespace pp;

namespace {

/// A random profile: per node compute time and parameter bytes, bytes
/// between every pair of nodes (paid by a stage once per value crossing its
/// end) and activation bytes that a stage holds once per in-flight
/// microbatch, the largest of its nodes' (neither adds up over nodes).
struct Profile {
  std::vector<double> work, parameters, activations;
  std::vector<std::vector<double>> crossing;
  std::vector<double> inFlight;

  double seconds(size_t, size_t begin, size_t end) const {
    double total = 0;
    for (size_t node = begin; node < end; ++node) {
      total += work[node];
      for (size_t user = end; user < work.size(); ++user)
        total += crossing[node][user];
    }
    return total;
  }
  double bytes(size_t stage, size_t begin, size_t end) const {
    double total = 0, activation = 0;
    for (size_t node = begin; node < end; ++node) {
      total += parameters[node];
      activation = std::max(activation, activations[node]);
    }
    return total + inFlight[stage] * activation;
  }
};

struct Best {
  double bottleneck = INFINITY;
  double peakBytes = INFINITY;
};

/// Every partition of nodes [begin, n) into stages `stage`.. .
void enumerate(const PartitionProblem &problem, size_t stage, size_t begin,
               std::vector<double> &seconds, std::vector<double> &bytes,
               Best &best) {
  size_t numStages = problem.stageRanks.size();
  if (stage == numStages) {
    double peak = *std::max_element(bytes.begin(), bytes.end());
    best.peakBytes = std::min(best.peakBytes, peak);
    if (problem.memoryLimit <= 0 || peak <= problem.memoryLimit)
      best.bottleneck = std::min(
          best.bottleneck, *std::max_element(seconds.begin(), seconds.end()));
    return;
  }
  for (size_t end = begin + 1; end + (numStages - stage - 1) <= problem.numNodes;
       ++end) {
    // The last stage takes the rest.
    if (stage + 1 == numStages && end != problem.numNodes)
      continue;
    int64_t rank = problem.stageRanks[stage];
    double addedSeconds = problem.seconds(stage, begin, end);
    double addedBytes = problem.bytes(stage, begin, end);
    seconds[rank] += addedSeconds;
    bytes[rank] += addedBytes;
    enumerate(problem, stage + 1, end, seconds, bytes, best);
    seconds[rank] -= addedSeconds;
    bytes[rank] -= addedBytes;
  }
}

std::vector<int64_t> placeStages(int64_t ranks, int64_t virtualStages,
                                 bool vShape) {
  std::vector<int64_t> placement;
  for (int64_t stage = 0; stage < ranks * virtualStages; ++stage)
    placement.push_back(vShape && stage >= ranks ? 2 * ranks - 1 - stage
                                                 : stage % ranks);
  return placement;
}

TEST(PartitionSolverTest, MatchesBruteForce) {
  std::mt19937 random(14);
  std::uniform_real_distribution<double> unit(0, 1);
  int solved = 0, infeasible = 0;
  for (int trial = 0; trial < 400; ++trial) {
    SCOPED_TRACE("trial " + std::to_string(trial));
    size_t n = 1 + random() % 12;
    int64_t virtualStages = 1 + random() % 2;
    int64_t ranks = 1 + random() % (4 / virtualStages);
    bool vShape = virtualStages == 2 && random() % 2;
    Profile profile;
    for (size_t node = 0; node < n; ++node) {
      profile.work.push_back(unit(random));
      profile.parameters.push_back(unit(random));
      profile.activations.push_back(unit(random));
      profile.crossing.emplace_back(n, 0);
      for (size_t user = node + 1; user < n; ++user)
        if (random() % 3 == 0)
          profile.crossing[node][user] = 0.2 * unit(random);
    }
    PartitionProblem problem;
    problem.numNodes = n;
    problem.stageRanks = placeStages(ranks, virtualStages, vShape);
    for (size_t stage = 0; stage < problem.stageRanks.size(); ++stage)
      profile.inFlight.push_back(1 + random() % 4);
    problem.seconds = [&](size_t s, size_t b, size_t e) {
      return profile.seconds(s, b, e);
    };
    problem.bytes = [&](size_t s, size_t b, size_t e) {
      return profile.bytes(s, b, e);
    };
    problem.nodeSecondsLowerBound = profile.work;
    // A third without a limit, the rest with one around what fits.
    if (trial % 3 != 0)
      problem.memoryLimit = (0.3 + unit(random)) * n;

    Best brute;
    std::vector<double> seconds(ranks, 0), bytes(ranks, 0);
    if (n >= problem.stageRanks.size())
      enumerate(problem, 0, 0, seconds, bytes, brute);

    std::optional<PartitionSolution> solution = solvePartition(problem);
    ASSERT_EQ(solution.has_value(), std::isfinite(brute.bottleneck));
    std::optional<PartitionSolution> smallest =
        solveSmallestPeakMemory(problem);
    ASSERT_EQ(smallest.has_value(), std::isfinite(brute.peakBytes));
    if (!smallest)
      continue;
    EXPECT_NEAR(*std::max_element(smallest->rankBytes.begin(),
                                  smallest->rankBytes.end()),
                brute.peakBytes, 1e-9);
    if (!solution) {
      ++infeasible;
      EXPECT_GT(brute.peakBytes, problem.memoryLimit);
      continue;
    }
    ++solved;
    EXPECT_NEAR(solution->bottleneck, brute.bottleneck, 1e-9);
    // The solution is what it says: its ranks' sums, within the limit.
    ASSERT_EQ(solution->starts.size(), problem.stageRanks.size());
    std::vector<double> rankSeconds(ranks, 0), rankBytes(ranks, 0);
    for (size_t stage = 0; stage < solution->starts.size(); ++stage) {
      size_t begin = solution->starts[stage];
      size_t end = stage + 1 < solution->starts.size()
                       ? solution->starts[stage + 1]
                       : n;
      ASSERT_LT(begin, end);
      rankSeconds[problem.stageRanks[stage]] += profile.seconds(stage, begin, end);
      rankBytes[problem.stageRanks[stage]] += profile.bytes(stage, begin, end);
    }
    EXPECT_EQ(solution->starts.front(), 0u);
    EXPECT_NEAR(*std::max_element(rankSeconds.begin(), rankSeconds.end()),
                solution->bottleneck, 1e-9);
    if (problem.memoryLimit > 0) {
      for (double used : rankBytes)
        EXPECT_LE(used, problem.memoryLimit);
    }
  }
  // The profiles exercise both outcomes.
  EXPECT_GT(solved, 200);
  EXPECT_GT(infeasible, 10);
}

/// The sizes the partitioner meets: 200 nodes into 8 stages on 4 ranks.
TEST(PartitionSolverTest, SolvesLargeProfilesExactlyAndFast) {
  std::mt19937 random(8);
  std::uniform_real_distribution<double> unit(0.5, 1.5);
  std::vector<double> work;
  for (int node = 0; node < 200; ++node)
    work.push_back(unit(random));
  std::vector<double> prefix = {0};
  for (double w : work)
    prefix.push_back(prefix.back() + w);
  for (bool vShape : {false, true}) {
    PartitionProblem problem;
    problem.numNodes = work.size();
    problem.stageRanks = placeStages(4, 2, vShape);
    problem.seconds = [&](size_t, size_t b, size_t e) {
      return prefix[e] - prefix[b];
    };
    problem.bytes = problem.seconds;
    problem.nodeSecondsLowerBound = work;
    std::optional<PartitionSolution> solution = solvePartition(problem);
    ASSERT_TRUE(solution);
    // No rank can do better than a quarter of the work, nor than that plus
    // the largest node.
    EXPECT_GE(solution->bottleneck, prefix.back() / 4 - 1e-9);
    EXPECT_LE(solution->bottleneck, prefix.back() / 4 + 1.5);
  }
}

/// Up to kMaxPartitionBlocks nodes every node is a block; beyond, blocks
/// of nodes (a 20,000-node chain of cheap ops with a costly node every
/// fourth) hold under 2 / kMaxPartitionBlocks of the work each, plus their
/// last node's, and the exact search over them (4 stages) is within a
/// block of a perfect balance.
TEST(PartitionSolverTest, CoarsensLongChainsIntoBlocks) {
  std::vector<double> few(kMaxPartitionBlocks, 1.0);
  std::vector<size_t> identity = blockBoundaries(few, kMaxPartitionBlocks);
  ASSERT_EQ(identity.size(), kMaxPartitionBlocks + 1);
  for (size_t node = 0; node < identity.size(); ++node)
    EXPECT_EQ(identity[node], node);

  std::mt19937 random(20000);
  std::uniform_real_distribution<double> unit(0.5, 1.5);
  std::vector<double> work;
  for (int node = 0; node < 20000; ++node)
    work.push_back(node % 4 == 0 ? 100 * unit(random) : 0.01 * unit(random));
  work[7] = 5000; // one node heavier than any block would be
  std::vector<size_t> boundaries = blockBoundaries(work, kMaxPartitionBlocks);
  ASSERT_LE(boundaries.size(), kMaxPartitionBlocks + 1);
  ASSERT_EQ(boundaries.front(), 0u);
  ASSERT_EQ(boundaries.back(), work.size());
  std::vector<double> prefix = {0};
  for (double w : work)
    prefix.push_back(prefix.back() + w);
  double largestBlock = 0;
  std::vector<double> blockWork;
  for (size_t block = 0; block + 1 < boundaries.size(); ++block) {
    ASSERT_LT(boundaries[block], boundaries[block + 1]);
    double seconds = prefix[boundaries[block + 1]] - prefix[boundaries[block]];
    double last = work[boundaries[block + 1] - 1];
    EXPECT_LT(seconds, 2 * prefix.back() / kMaxPartitionBlocks + last);
    largestBlock = std::max(largestBlock, seconds);
    blockWork.push_back(seconds);
  }
  PartitionProblem problem;
  problem.numNodes = blockWork.size();
  problem.stageRanks = placeStages(4, 1, /*vShape=*/false);
  problem.seconds = [&](size_t, size_t b, size_t e) {
    return prefix[boundaries[e]] - prefix[boundaries[b]];
  };
  problem.bytes = problem.seconds;
  problem.nodeSecondsLowerBound = blockWork;
  std::optional<PartitionSolution> solution = solvePartition(problem);
  ASSERT_TRUE(solution);
  EXPECT_GE(solution->bottleneck, prefix.back() / 4 - 1e-9);
  EXPECT_LE(solution->bottleneck, prefix.back() / 4 + largestBlock);
}

} // namespace

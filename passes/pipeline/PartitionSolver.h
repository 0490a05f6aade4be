//===- PartitionSolver.h - exact contiguous partitioning --------*- C++ -*-===//
//
// Cuts a sequence of nodes into S contiguous stages placed on ranks (several
// stages per rank with virtual stages) so that the busiest rank's time is
// smallest while every rank's memory stays within a limit. Exact: branch and
// bound over the cut positions. No MLIR types: the partitioner feeds it
// tables, and PartitionSolverTest checks it against brute force.
//
//===----------------------------------------------------------------------===//

#ifndef PP_PASSES_PIPELINE_PARTITIONSOLVER_H
#define PP_PASSES_PIPELINE_PARTITIONSOLVER_H

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <vector>

namespace pp {

/// What a stage of nodes [begin, end) costs as stage `stage`.
using StageMeasure =
    std::function<double(size_t stage, size_t begin, size_t end)>;

/// A partitioning problem: `numNodes` nodes in order, cut into
/// `stageRanks.size()` non-empty contiguous stages, stage s on rank
/// `stageRanks[s]`. A rank's time (memory) is the sum of its stages'
/// `seconds` (`bytes`).
struct PartitionProblem {
  size_t numNodes = 0;
  std::vector<int64_t> stageRanks;
  StageMeasure seconds;
  /// Per node, a lower bound of what it adds to its stage's `seconds`:
  /// `seconds(s, b, e)` >= the sum over [b, e). All zeros is valid (only
  /// slower to solve).
  std::vector<double> nodeSecondsLowerBound;
  StageMeasure bytes;
  /// The most bytes a rank may hold; 0 for no limit.
  double memoryLimit = 0;
};

/// A partition: the first node of each stage, and each rank's time and
/// memory.
struct PartitionSolution {
  std::vector<size_t> starts;
  std::vector<double> rankSeconds;
  std::vector<double> rankBytes;
  /// The largest of `rankSeconds`.
  double bottleneck = 0;
};

/// The partition with the smallest bottleneck among those whose every rank
/// fits the memory limit, or nullopt when none does (or there are fewer
/// nodes than stages).
std::optional<PartitionSolution> solvePartition(const PartitionProblem &problem);

/// The partition whose largest rank memory is smallest, memory and time
/// swapped: what the memory limit would have to be for `problem` to have a
/// solution. Nullopt with fewer nodes than stages.
std::optional<PartitionSolution>
solveSmallestPeakMemory(const PartitionProblem &problem);

/// The most blocks of nodes the partitioner's exact search cuts between:
/// with one stage per rank (a dynamic program, milliseconds at 512), and
/// with several stages per rank (virtual stages, whose search grows much
/// faster: about 0.1 s at 128 blocks with 2 per rank).
constexpr size_t kMaxPartitionBlocks = 512;
constexpr size_t kMaxPartitionBlocksVirtual = 128;

/// Where a search over `nodeSeconds.size()` nodes of those seconds (lower
/// bounds) may cut: the first node of each block of consecutive nodes, then
/// the node count. Up to `maxBlocks` nodes every node is a block, and the
/// search is exact over the nodes. Beyond, half the boundaries split the
/// nodes' total seconds evenly and half their count, so that an exact
/// search over at most `maxBlocks` blocks costs the same at any node count
/// (a 20,000-node chain as a 500-node one), and its best cut is the best
/// over the nodes but for moving each cut by less than a block (a block
/// holds under 2 / maxBlocks of the total seconds plus its last node's).
std::vector<size_t> blockBoundaries(const std::vector<double> &nodeSeconds,
                                    size_t maxBlocks);

} // namespace pp

#endif // PP_PASSES_PIPELINE_PARTITIONSOLVER_H

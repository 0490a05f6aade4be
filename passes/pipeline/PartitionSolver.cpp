//===- PartitionSolver.cpp - exact contiguous partitioning ----------------===//
//
// Depth-first search over the end of each stage, in stage order, keeping
// every rank's time and memory so far. A branch is cut when a rank would
// reach the best bottleneck found, when a rank would exceed the memory
// limit, when the remaining stages cannot take the remaining nodes below the
// best bottleneck even with each given its rank's whole remaining time, or
// when an earlier search from the same stage
// and node with no more time and memory on any open rank found nothing
// better (its completions are all this state's, at no more cost). With one
// stage per rank, open ranks start empty and the last rule makes the search
// the usual dynamic program over (stage, first node).
//
//===----------------------------------------------------------------------===//

#include "passes/pipeline/PartitionSolver.h"

#include <algorithm>
#include <limits>
#include <map>

namespace pp {

namespace {

constexpr double kInfinity = std::numeric_limits<double>::infinity();

/// Each rank's time and memory when the stages start at `starts`.
PartitionSolution evaluate(const PartitionProblem &problem,
                           std::vector<size_t> starts) {
  size_t numRanks = 0;
  for (int64_t rank : problem.stageRanks)
    numRanks = std::max(numRanks, static_cast<size_t>(rank) + 1);
  PartitionSolution solution;
  solution.rankSeconds.assign(numRanks, 0);
  solution.rankBytes.assign(numRanks, 0);
  for (size_t stage = 0; stage < starts.size(); ++stage) {
    size_t end =
        stage + 1 < starts.size() ? starts[stage + 1] : problem.numNodes;
    int64_t rank = problem.stageRanks[stage];
    solution.rankSeconds[rank] += problem.seconds(stage, starts[stage], end);
    solution.rankBytes[rank] += problem.bytes(stage, starts[stage], end);
  }
  solution.starts = std::move(starts);
  solution.bottleneck = *std::max_element(solution.rankSeconds.begin(),
                                          solution.rankSeconds.end());
  return solution;
}

class BranchAndBound {
public:
  explicit BranchAndBound(const PartitionProblem &problem)
      : problem(problem), numStages(problem.stageRanks.size()) {
    for (int64_t rank : problem.stageRanks)
      numRanks = std::max(numRanks, static_cast<size_t>(rank) + 1);
    lastStageOf.assign(numRanks, 0);
    for (size_t stage = 0; stage < numStages; ++stage)
      lastStageOf[problem.stageRanks[stage]] = stage;
    size_t n = problem.numNodes;
    prefixLowerBound.assign(n + 1, 0);
    for (size_t node = 0; node < n; ++node)
      prefixLowerBound[node + 1] =
          prefixLowerBound[node] + problem.nodeSecondsLowerBound[node];
    rankSeconds.assign(numRanks, 0);
    rankBytes.assign(numRanks, 0);
    starts.assign(numStages, 0);
  }

  std::optional<PartitionSolution> solve() {
    if (numStages == 0 || problem.numNodes < numStages)
      return std::nullopt;
    seedWithProportionalCuts();
    search(0, 0);
    return best;
  }

private:
  /// A first bound: cut where the nodes' lower bounds reach an equal share
  /// of their total.
  void seedWithProportionalCuts() {
    size_t n = problem.numNodes;
    std::vector<size_t> cuts(numStages, 0);
    for (size_t stage = 1; stage < numStages; ++stage) {
      double share = prefixLowerBound[n] * stage / numStages;
      size_t cut = std::lower_bound(prefixLowerBound.begin(),
                                    prefixLowerBound.end(), share) -
                   prefixLowerBound.begin();
      // Every stage keeps at least one node.
      cuts[stage] = std::clamp(cut, cuts[stage - 1] + 1, n - numStages + stage);
    }
    PartitionSolution seed = evaluate(problem, std::move(cuts));
    if (fitsMemory(seed.rankBytes))
      best = std::move(seed);
  }

  bool fitsMemory(const std::vector<double> &bytes) const {
    return problem.memoryLimit <= 0 ||
           std::all_of(bytes.begin(), bytes.end(), [&](double rankBytes) {
             return rankBytes <= problem.memoryLimit;
           });
  }

  double bound() const { return best ? best->bottleneck : kInfinity; }

  bool isOpen(size_t rank, size_t stage) const {
    return lastStageOf[rank] >= stage;
  }

  /// Whether stages `stage`.. could take nodes [begin, n) below the bound
  /// if each had its rank's remaining time to itself and could be empty (a
  /// relaxation: a rank with several stages left shares it): every stage in
  /// turn takes as many nodes as their lower bounds allow, which leaves the
  /// later stages the fewest.
  bool canCover(size_t stage, size_t begin) const {
    size_t n = problem.numNodes, at = begin;
    for (size_t next = stage; next < numStages; ++next) {
      double room = bound() - rankSeconds[problem.stageRanks[next]];
      if (room <= 0)
        return false;
      // The first node whose prefix reaches the room ends the stage.
      size_t end = std::lower_bound(prefixLowerBound.begin() + at,
                                    prefixLowerBound.end(),
                                    prefixLowerBound[at] + room) -
                   prefixLowerBound.begin() - 1;
      at = end;
    }
    return at == n;
  }

  /// Searches the ends of stages `stage`.. when stage `stage` starts at
  /// node `begin`; true when it improved the best partition.
  bool search(size_t stage, size_t begin) {
    size_t n = problem.numNodes;
    if (stage == numStages) {
      if (begin != n)
        return false;
      best = evaluate(problem, starts);
      return true;
    }
    if (!canCover(stage, begin))
      return false;
    std::vector<double> key = stateKey(stage);
    std::vector<std::vector<double>> &failed = failedStates[{stage, begin}];
    for (const std::vector<double> &earlier : failed)
      if (dominates(key, earlier))
        return false;

    bool improved = false;
    int64_t rank = problem.stageRanks[stage];
    starts[stage] = begin;
    for (size_t end = begin + 1; end + (numStages - stage - 1) <= n; ++end) {
      if (rankSeconds[rank] + prefixLowerBound[end] - prefixLowerBound[begin] >=
          bound())
        break;
      double seconds = problem.seconds(stage, begin, end);
      double bytes = problem.bytes(stage, begin, end);
      if (rankSeconds[rank] + seconds >= bound() ||
          (problem.memoryLimit > 0 &&
           rankBytes[rank] + bytes > problem.memoryLimit))
        continue;
      rankSeconds[rank] += seconds;
      rankBytes[rank] += bytes;
      improved |= search(stage + 1, end);
      rankSeconds[rank] -= seconds;
      rankBytes[rank] -= bytes;
    }
    if (!improved)
      failedStates[{stage, begin}].push_back(std::move(key));
    return improved;
  }

  /// The time and memory of the ranks open at `stage` (0 for the others:
  /// they are below the bound and no longer change).
  std::vector<double> stateKey(size_t stage) const {
    std::vector<double> key(2 * numRanks, 0);
    for (size_t rank = 0; rank < numRanks; ++rank)
      if (isOpen(rank, stage)) {
        key[rank] = rankSeconds[rank];
        key[numRanks + rank] = rankBytes[rank];
      }
    return key;
  }

  /// True when `state` has at least `earlier`'s time and memory everywhere.
  static bool dominates(const std::vector<double> &state,
                        const std::vector<double> &earlier) {
    for (size_t i = 0; i < state.size(); ++i)
      if (state[i] < earlier[i])
        return false;
    return true;
  }

  const PartitionProblem &problem;
  size_t numStages;
  size_t numRanks = 0;
  std::vector<size_t> lastStageOf;
  std::vector<double> prefixLowerBound;
  std::vector<double> rankSeconds, rankBytes;
  std::vector<size_t> starts;
  std::optional<PartitionSolution> best;
  /// Per (stage, first node), the open ranks' time and memory of searches
  /// that found nothing better.
  std::map<std::pair<size_t, size_t>, std::vector<std::vector<double>>>
      failedStates;
};

} // namespace

std::optional<PartitionSolution>
solvePartition(const PartitionProblem &problem) {
  return BranchAndBound(problem).solve();
}

std::optional<PartitionSolution>
solveSmallestPeakMemory(const PartitionProblem &problem) {
  PartitionProblem swapped = problem;
  swapped.seconds = problem.bytes;
  swapped.bytes = problem.seconds;
  swapped.nodeSecondsLowerBound.assign(problem.numNodes, 0);
  swapped.memoryLimit = 0;
  std::optional<PartitionSolution> solution = solvePartition(swapped);
  if (!solution)
    return std::nullopt;
  return evaluate(problem, std::move(solution->starts));
}

std::vector<size_t> blockBoundaries(const std::vector<double> &nodeSeconds,
                                    size_t maxBlocks) {
  size_t n = nodeSeconds.size();
  std::vector<size_t> boundaries;
  if (n <= maxBlocks) {
    for (size_t node = 0; node <= n; ++node)
      boundaries.push_back(node);
    return boundaries;
  }
  size_t half = maxBlocks / 2;
  std::vector<double> prefix(n + 1, 0);
  for (size_t node = 0; node < n; ++node)
    prefix[node + 1] = prefix[node] + nodeSeconds[node];
  for (size_t block = 0; block < half; ++block) {
    boundaries.push_back(block * n / half);
    size_t byWork = std::lower_bound(prefix.begin(), prefix.end(),
                                     prefix[n] * block / half) -
                    prefix.begin();
    boundaries.push_back(std::min(byWork, n - 1));
  }
  boundaries.push_back(n);
  std::sort(boundaries.begin(), boundaries.end());
  boundaries.erase(std::unique(boundaries.begin(), boundaries.end()),
                   boundaries.end());
  return boundaries;
}

} // namespace pp

//===- DeviceMesh.h - ranks arranged on named axes --------------*- C++ -*-===//
//
// A job's ranks laid out on an N-D mesh of named axes (pipeline stages,
// data-parallel replicas or shards, tensor or context parallelism). Ranks
// are numbered row-major: the last axis varies fastest.
//
//===----------------------------------------------------------------------===//

#ifndef PP_RUNTIME_DEVICEMESH_H
#define PP_RUNTIME_DEVICEMESH_H

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace pp::runtime {

/// What an axis of the mesh parallelizes.
enum class AxisKind { Pipeline, DataReplicate, DataShard, Tensor, Context };

/// The kind spelled `name` ("pipeline", "data_replicate", "data_shard",
/// "tensor", "context"), or nullopt.
std::optional<AxisKind> parseAxisKind(const std::string &name);
/// The manifest's spelling of `kind`.
const char *axisKindName(AxisKind kind);

/// One axis: its name (unique in the mesh), size and kind.
struct MeshAxis {
  std::string name;
  int64_t size = 1;
  AxisKind kind = AxisKind::Pipeline;
};

/// Ranks on named axes, numbered row-major (last axis fastest). Rank
/// arguments must lie in [0, deviceCount()); coordinates in [0, size).
class DeviceMesh {
public:
  /// A mesh of one device and no axes.
  DeviceMesh() = default;
  /// Throws std::runtime_error when names repeat, a size is below 1 or
  /// more than one axis is a pipeline.
  explicit DeviceMesh(std::vector<MeshAxis> axes);

  const std::vector<MeshAxis> &axes() const { return meshAxes; }
  /// The product of the axis sizes.
  int64_t deviceCount() const;
  /// The index of the axis called `name`, or nullopt.
  std::optional<size_t> axisIndex(const std::string &name) const;
  /// The pipeline axis, or null when the mesh has none (one stage).
  const MeshAxis *pipelineAxis() const;
  /// The names of the tensor axes, in axis order.
  std::vector<std::string> tensorAxes() const;
  /// "pp=3" or "pp=2 x dp=4": the axes and their sizes.
  std::string describe() const;

  /// `rank`'s coordinate on every axis, in axis order.
  std::vector<int64_t> coordinates(int64_t rank) const;
  /// `rank`'s coordinate on the axis `axis` (which must exist).
  int64_t coordinate(int64_t rank, const std::string &axis) const;
  /// The rank at `coordinates` (one per axis).
  int64_t rankAt(const std::vector<int64_t> &coordinates) const;
  /// The ranks that differ from `rank` only along `axes` (names), in rank
  /// order; `rank` is among them. Along one axis, a rank's index in the
  /// group is its coordinate on that axis.
  std::vector<int64_t> group(int64_t rank,
                             const std::vector<std::string> &axes) const;

private:
  std::vector<MeshAxis> meshAxes;
};

/// The mesh of a training job: the axes of `packageMesh` (the compiled
/// pipeline) and a data-parallel axis "dp" (replicas) of size
/// `dataParallel`, laid out in the order `order` names them (outermost
/// first, so the last varies fastest over consecutive ranks; empty: the
/// package's pipeline axis, then "dp", then the package's other axes, as
/// in pp,dp,tp). Throws std::runtime_error naming an axis that `order`
/// misses, repeats or does not know.
DeviceMesh dataParallelMesh(const DeviceMesh &packageMesh,
                            int64_t dataParallel,
                            const std::vector<std::string> &order);

} // namespace pp::runtime

#endif // PP_RUNTIME_DEVICEMESH_H

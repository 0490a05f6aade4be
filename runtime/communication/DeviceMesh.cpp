//===- DeviceMesh.cpp - ranks arranged on named axes ----------------------===//

#include "runtime/communication/DeviceMesh.h"

#include "runtime/core/EnumNames.h"

#include <algorithm>
#include <set>
#include <stdexcept>

namespace pp::runtime {
namespace {

constexpr EnumNames<AxisKind, 5> kAxisKinds = {
    {AxisKind::Pipeline, "pipeline"},
    {AxisKind::DataReplicate, "data_replicate"},
    {AxisKind::DataShard, "data_shard"},
    {AxisKind::Tensor, "tensor"},
    {AxisKind::Context, "context"},
};

} // namespace

std::optional<AxisKind> parseAxisKind(const std::string &name) {
  return parseEnum(kAxisKinds, name);
}

const char *axisKindName(AxisKind kind) {
  return enumName(kAxisKinds, kind, "unknown");
}

DeviceMesh::DeviceMesh(std::vector<MeshAxis> axes) : meshAxes(std::move(axes)) {
  std::set<std::string> names;
  int64_t pipelines = 0;
  for (const MeshAxis &axis : meshAxes) {
    if (!names.insert(axis.name).second)
      throw std::runtime_error("the mesh has two axes named '" + axis.name +
                               "'");
    if (axis.size < 1)
      throw std::runtime_error("mesh axis '" + axis.name + "' has size " +
                               std::to_string(axis.size) +
                               "; sizes must be at least 1");
    pipelines += axis.kind == AxisKind::Pipeline;
  }
  if (pipelines > 1)
    throw std::runtime_error("the mesh has " + std::to_string(pipelines) +
                             " pipeline axes; at most one is allowed");
}

int64_t DeviceMesh::deviceCount() const {
  int64_t count = 1;
  for (const MeshAxis &axis : meshAxes)
    count *= axis.size;
  return count;
}

std::optional<size_t> DeviceMesh::axisIndex(const std::string &name) const {
  for (size_t i = 0; i < meshAxes.size(); ++i)
    if (meshAxes[i].name == name)
      return i;
  return std::nullopt;
}

const MeshAxis *DeviceMesh::pipelineAxis() const {
  for (const MeshAxis &axis : meshAxes)
    if (axis.kind == AxisKind::Pipeline)
      return &axis;
  return nullptr;
}

std::vector<std::string> DeviceMesh::tensorAxes() const {
  std::vector<std::string> names;
  for (const MeshAxis &axis : meshAxes)
    if (axis.kind == AxisKind::Tensor)
      names.push_back(axis.name);
  return names;
}

std::string DeviceMesh::describe() const {
  std::string text;
  for (const MeshAxis &axis : meshAxes)
    text += (text.empty() ? "" : " x ") + axis.name + "=" +
            std::to_string(axis.size);
  return text.empty() ? "one device" : text;
}

std::vector<int64_t> DeviceMesh::coordinates(int64_t rank) const {
  std::vector<int64_t> result(meshAxes.size());
  for (size_t i = meshAxes.size(); i-- > 0;) {
    result[i] = rank % meshAxes[i].size;
    rank /= meshAxes[i].size;
  }
  return result;
}

int64_t DeviceMesh::coordinate(int64_t rank, const std::string &axis) const {
  std::optional<size_t> index = axisIndex(axis);
  if (!index)
    throw std::runtime_error("the mesh (" + describe() + ") has no axis '" +
                             axis + "'");
  return coordinates(rank)[*index];
}

int64_t DeviceMesh::rankAt(const std::vector<int64_t> &coordinates) const {
  int64_t rank = 0;
  for (size_t i = 0; i < meshAxes.size(); ++i)
    rank = rank * meshAxes[i].size + coordinates[i];
  return rank;
}

std::vector<int64_t>
DeviceMesh::group(int64_t rank, const std::vector<std::string> &axes) const {
  std::vector<bool> varies(meshAxes.size(), false);
  for (const std::string &name : axes) {
    std::optional<size_t> index = axisIndex(name);
    if (!index)
      throw std::runtime_error("the mesh (" + describe() + ") has no axis '" +
                               name + "'");
    varies[*index] = true;
  }
  // Count through the varying axes' coordinates row-major, keeping the
  // others at `rank`'s: the ranks come out in increasing order.
  std::vector<int64_t> at = coordinates(rank);
  for (size_t i = 0; i < at.size(); ++i)
    if (varies[i])
      at[i] = 0;
  std::vector<int64_t> members;
  while (true) {
    members.push_back(rankAt(at));
    size_t i = at.size();
    while (i-- > 0) {
      if (!varies[i])
        continue;
      if (++at[i] < meshAxes[i].size)
        break;
      at[i] = 0;
    }
    if (i == static_cast<size_t>(-1))
      return members;
  }
}

DeviceMesh dataParallelMesh(const DeviceMesh &packageMesh,
                            int64_t dataParallel,
                            const std::vector<std::string> &order) {
  std::vector<MeshAxis> axes = packageMesh.axes();
  if (packageMesh.axisIndex("dp"))
    throw std::runtime_error("the package's mesh (" + packageMesh.describe() +
                             ") already has an axis 'dp'; pp-run adds the "
                             "data-parallel axis itself (--dp)");
  // By default the pipeline axis, then "dp", then the package's other axes
  // (tensor parallelism innermost: its groups on consecutive ranks).
  auto inner = std::find_if(axes.begin(), axes.end(), [](const MeshAxis &axis) {
    return axis.kind != AxisKind::Pipeline;
  });
  axes.insert(inner, {"dp", dataParallel, AxisKind::DataReplicate});
  if (order.empty())
    return DeviceMesh(std::move(axes));
  std::string known;
  for (const MeshAxis &axis : axes)
    known += (known.empty() ? "" : ",") + axis.name;
  std::vector<MeshAxis> arranged;
  for (const std::string &name : order) {
    auto it = std::find_if(axes.begin(), axes.end(),
                           [&](const MeshAxis &axis) { return axis.name == name; });
    if (it == axes.end())
      throw std::runtime_error(
          "--mesh-order names '" + name + "', which is " +
          (std::any_of(arranged.begin(), arranged.end(),
                       [&](const MeshAxis &axis) { return axis.name == name; })
               ? std::string("named twice")
               : "not an axis of this job") +
          "; list each of the axes " + known + " once, outermost first");
    arranged.push_back(*it);
    axes.erase(it);
  }
  if (!axes.empty())
    throw std::runtime_error("--mesh-order misses the axis '" +
                             axes.front().name + "'; list each of the axes " +
                             known + " once, outermost first");
  return DeviceMesh(std::move(arranged));
}

} // namespace pp::runtime

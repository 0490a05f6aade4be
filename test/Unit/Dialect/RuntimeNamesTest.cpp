//===- RuntimeNamesTest.cpp - the IR's enums as the runtime reads them ----===//
//
// The manifest carries mesh axis kinds and stage phases by name: the
// dialect's (ODS) and the runtime's (no MLIR) enums must spell every value
// the same, so that a package pp-opt writes is one the runtime reads.
//
//===----------------------------------------------------------------------===//

#include "dialects/pp/IR/PPOps.h"
#include "runtime/communication/DeviceMesh.h"
#include "runtime/schedules/Phase.h"

#include <gtest/gtest.h>

namespace {

TEST(RuntimeNames, EveryMeshAxisKindIsOneTheRuntimeReads) {
  for (uint32_t value = 0; value <= pp::getMaxEnumValForAxisKind(); ++value) {
    std::string name =
        pp::stringifyAxisKind(static_cast<pp::AxisKind>(value)).str();
    std::optional<pp::runtime::AxisKind> read =
        pp::runtime::parseAxisKind(name);
    ASSERT_TRUE(read) << name;
    EXPECT_EQ(pp::runtime::axisKindName(*read), name);
  }
  using pp::runtime::AxisKind;
  for (AxisKind kind : {AxisKind::Pipeline, AxisKind::DataReplicate,
                        AxisKind::DataShard, AxisKind::Tensor,
                        AxisKind::Context})
    EXPECT_TRUE(pp::symbolizeAxisKind(pp::runtime::axisKindName(kind)))
        << pp::runtime::axisKindName(kind);
}

TEST(RuntimeNames, EveryStagePhaseIsOneTheRuntimeReads) {
  for (uint32_t value = 0; value <= pp::getMaxEnumValForStagePhase(); ++value) {
    std::string name =
        pp::stringifyStagePhase(static_cast<pp::StagePhase>(value)).str();
    std::optional<pp::runtime::Phase> read = pp::runtime::parsePhase(name);
    ASSERT_TRUE(read) << name;
    EXPECT_EQ(pp::runtime::phaseName(*read), name);
  }
}

} // namespace

//===- FusedLoopTest.cpp - fused loops compute the kernels' bits ----------===//
//
// A stage function using every elementwise op (NN_Elementwise), with
// broadcast operands, an i1 condition and an intermediate result, is
// compiled twice by the real code generator: as it is (one kernel call per
// op) and after pp-fuse-elementwise (one generated loop). Both must return
// the same bits.
//
//===----------------------------------------------------------------------===//

#include "LoadedStages.h"

#include "dialects/nn/IR/NNOps.h"
#include "dialects/pp/IR/PPDialect.h"
#include "passes/Passes.h"
#include "runtime/kernels/Frame.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/EmitC/IR/EmitC.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

using namespace mlir;

namespace {

constexpr const char *kProgram = R"mlir(
func.func @stage0_forward(%x: tensor<3x4xf32>, %b: tensor<4xf32>,
                          %c: tensor<3x1xf32>, %m: tensor<3x4xi1>)
    -> (tensor<3x4xf32>, tensor<3x4xf32>) attributes {pp.stage = 0 : i64} {
  %0 = nn.add %x, %b : (tensor<3x4xf32>, tensor<4xf32>) -> tensor<3x4xf32>
  %1 = nn.gelu %0 : (tensor<3x4xf32>) -> tensor<3x4xf32>
  %2 = nn.gelu %0 approximate<tanh> : (tensor<3x4xf32>) -> tensor<3x4xf32>
  %3 = nn.mul %1, %c : (tensor<3x4xf32>, tensor<3x1xf32>) -> tensor<3x4xf32>
  %4 = nn.sub %3, %2 : (tensor<3x4xf32>, tensor<3x4xf32>) -> tensor<3x4xf32>
  %5 = nn.exp %4 : (tensor<3x4xf32>) -> tensor<3x4xf32>
  %6 = nn.log %5 : (tensor<3x4xf32>) -> tensor<3x4xf32>
  %7 = nn.sqrt %5 : (tensor<3x4xf32>) -> tensor<3x4xf32>
  %8 = nn.rsqrt %5 : (tensor<3x4xf32>) -> tensor<3x4xf32>
  %9 = nn.div %7, %8 : (tensor<3x4xf32>, tensor<3x4xf32>) -> tensor<3x4xf32>
  %10 = nn.tanh %9 : (tensor<3x4xf32>) -> tensor<3x4xf32>
  %11 = nn.sigmoid %10 : (tensor<3x4xf32>) -> tensor<3x4xf32>
  %12 = nn.erf %11 : (tensor<3x4xf32>) -> tensor<3x4xf32>
  %13 = nn.relu %4 : (tensor<3x4xf32>) -> tensor<3x4xf32>
  %14 = nn.neg %13 : (tensor<3x4xf32>) -> tensor<3x4xf32>
  %15 = nn.pow %5, %c : (tensor<3x4xf32>, tensor<3x1xf32>) -> tensor<3x4xf32>
  %16 = nn.maximum %14, %6 : (tensor<3x4xf32>, tensor<3x4xf32>) -> tensor<3x4xf32>
  %17 = nn.minimum %16, %12 : (tensor<3x4xf32>, tensor<3x4xf32>) -> tensor<3x4xf32>
  %18 = nn.where %m, %17, %15
      : (tensor<3x4xi1>, tensor<3x4xf32>, tensor<3x4xf32>) -> tensor<3x4xf32>
  %19 = nn.gelu_grad %18, %0 : (tensor<3x4xf32>, tensor<3x4xf32>) -> tensor<3x4xf32>
  %20 = nn.gelu_grad %18, %0 approximate<tanh>
      : (tensor<3x4xf32>, tensor<3x4xf32>) -> tensor<3x4xf32>
  %21 = nn.relu_grad %19, %4 : (tensor<3x4xf32>, tensor<3x4xf32>) -> tensor<3x4xf32>
  %22 = nn.sigmoid_grad %21, %11 : (tensor<3x4xf32>, tensor<3x4xf32>) -> tensor<3x4xf32>
  %23 = nn.tanh_grad %22, %10 : (tensor<3x4xf32>, tensor<3x4xf32>) -> tensor<3x4xf32>
  %24 = nn.sqrt_grad %23, %7 : (tensor<3x4xf32>, tensor<3x4xf32>) -> tensor<3x4xf32>
  %25 = nn.rsqrt_grad %24, %8 : (tensor<3x4xf32>, tensor<3x4xf32>) -> tensor<3x4xf32>
  %26 = nn.erf_grad %25, %11 : (tensor<3x4xf32>, tensor<3x4xf32>) -> tensor<3x4xf32>
  %27 = nn.pow_grad %26, %5, %c operand = 0
      : (tensor<3x4xf32>, tensor<3x4xf32>, tensor<3x1xf32>) -> tensor<3x4xf32>
  %28 = nn.pow_grad %26, %5, %c operand = 1
      : (tensor<3x4xf32>, tensor<3x4xf32>, tensor<3x1xf32>) -> tensor<3x4xf32>
  %29 = nn.maximum_grad %27, %14, %6 operand = 1
      : (tensor<3x4xf32>, tensor<3x4xf32>, tensor<3x4xf32>) -> tensor<3x4xf32>
  %30 = nn.minimum_grad %28, %16, %12 operand = 0
      : (tensor<3x4xf32>, tensor<3x4xf32>, tensor<3x4xf32>) -> tensor<3x4xf32>
  %31 = nn.add %29, %30 : (tensor<3x4xf32>, tensor<3x4xf32>) -> tensor<3x4xf32>
  %32 = nn.add %31, %20 : (tensor<3x4xf32>, tensor<3x4xf32>) -> tensor<3x4xf32>
  return %9, %32 : tensor<3x4xf32>, tensor<3x4xf32>
}
)mlir";

/// A tensor of `shape` whose element i is `value(i)`.
template <typename T, typename Value>
Tensor makeTensor(pp_dtype dtype, std::vector<int64_t> shape, Value value) {
  pp_tensor *tensor = nullptr;
  EXPECT_EQ(pp_tensor_create(dtype, shape.size(), shape.data(), &tensor),
            PP_OK);
  T *data = static_cast<T *>(pp_tensor_data(tensor));
  for (int64_t i = 0; i < pp_tensor_numel(tensor); ++i)
    data[i] = value(i);
  return Tensor(tensor);
}

/// The results of @stage0_forward of `module`, compiled, on `args`.
std::vector<Tensor> run(ModuleOp module, const std::vector<pp_tensor *> &args) {
  LoadedStages stages(module);
  EXPECT_EQ(stages.error(), "");
  StageEntry entry = stages.entry("stage0_forward");
  if (!entry)
    return {};
  return callStage(entry, args);
}

TEST(FusedLoop, ComputesTheBitsOfTheKernels) {
  MLIRContext context;
  context.loadDialect<pp::nn::NNDialect, pp::PPDialect, arith::ArithDialect,
                      func::FuncDialect, emitc::EmitCDialect>();
  OwningOpRef<ModuleOp> unfused =
      parseSourceString<ModuleOp>(kProgram, &context);
  ASSERT_TRUE(unfused);
  OwningOpRef<ModuleOp> fused = cast<ModuleOp>((*unfused)->clone());
  PassManager pm(&context);
  pm.addPass(pp::createFuseElementwise());
  ASSERT_TRUE(succeeded(pm.run(*fused)));
  // Every op went into one fusion.
  auto function = fused->lookupSymbol<func::FuncOp>("stage0_forward");
  ASSERT_EQ(function.getBody().front().getOperations().size(), 2u);
  ASSERT_TRUE(isa<pp::nn::FusionOp>(function.getBody().front().front()));

  Tensor x = makeTensor<float>(PP_DTYPE_F32, {3, 4}, [](int64_t i) {
    return static_cast<float>(std::sin(0.7 * i) * 1.5);
  });
  Tensor b = makeTensor<float>(PP_DTYPE_F32, {4}, [](int64_t i) {
    return 0.25f * static_cast<float>(i) - 0.4f;
  });
  Tensor c = makeTensor<float>(PP_DTYPE_F32, {3, 1}, [](int64_t i) {
    return 0.6f + 0.45f * static_cast<float>(i);
  });
  Tensor m = makeTensor<uint8_t>(PP_DTYPE_BOOL, {3, 4},
                                 [](int64_t i) { return i % 3 != 1; });
  std::vector<pp_tensor *> args = {x.get(), b.get(), c.get(), m.get()};
  std::vector<Tensor> expected = run(*unfused, args);
  std::vector<Tensor> actual = run(*fused, args);
  ASSERT_EQ(expected.size(), 2u);
  ASSERT_EQ(actual.size(), 2u);
  for (size_t r = 0; r < expected.size(); ++r) {
    ASSERT_EQ(pp_tensor_nbytes(actual[r].get()),
              pp_tensor_nbytes(expected[r].get()));
    EXPECT_EQ(std::memcmp(pp_tensor_data(actual[r].get()),
                          pp_tensor_data(expected[r].get()),
                          pp_tensor_nbytes(expected[r].get())),
              0)
        << "result " << r;
  }
}

} // namespace

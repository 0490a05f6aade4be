//===- GradientCheckTest.cpp - pp-autodiff against finite differences -----===//
//
// Every gradient rule (dialects/nn/IR/NNGradients.cpp) is checked on a small
// program: the differentiated @main goes through the real code generator
// (pp-lower-to-runtime, the C++ emitter, the host compiler) into a library
// of the runtime's CPU kernels, and each parameter's gradient is compared
// with central finite differences of the loss. Nothing here names an op:
// a new op with a rule and a kernel needs only a program in the table.
//
//===----------------------------------------------------------------------===//

#include "LoadedStages.h"

#include "dialects/nn/IR/NNOps.h"
#include "dialects/pp/IR/PPDialect.h"
#include "passes/Passes.h"
#include "passes/codegen/RuntimeDtype.h"
#include "runtime/data/SyntheticData.h"
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
#include <memory>

using namespace mlir;

namespace {

float *floats(const Tensor &tensor) {
  return static_cast<float *>(pp_tensor_data(tensor.get()));
}

/// A program compiled by pp's code generator into a loaded library.
class CompiledProgram {
public:
  /// Lowers `function` (renamed `program`) to CPU code and loads it; check
  /// `error()` afterwards.
  explicit CompiledProgram(func::FuncOp function) {
    OwningOpRef<ModuleOp> module = ModuleOp::create(function.getLoc());
    auto copy = cast<func::FuncOp>(function->clone());
    copy.setSymName("program");
    copy->setAttr(pp::kStageAttrName,
                  Builder(function.getContext()).getI64IntegerAttr(0));
    module->getBody()->push_back(copy);
    stages = std::make_unique<LoadedStages>(*module);
    problem = stages->error();
    entry = stages->entry("program");
    if (problem.empty() && !entry)
      problem = "the library has no function 'program'";
  }

  const std::string &error() const { return problem; }

  /// The results of the program on `args` (borrowed).
  std::vector<Tensor> run(const std::vector<pp_tensor *> &args) {
    // A training call: dropout draws the same mask on every run.
    return callStage(entry, args,
                     {/*seed=*/42, /*step=*/3, /*firstSample=*/8,
                      /*training=*/true});
  }

private:
  std::unique_ptr<LoadedStages> stages;
  std::string problem;
  StageEntry entry = nullptr;
};

class GradientCheck : public ::testing::Test {
protected:
  GradientCheck() {
    context.loadDialect<pp::nn::NNDialect, pp::PPDialect, arith::ArithDialect,
                        func::FuncDialect, emitc::EmitCDialect>();
  }

  /// Differentiates `program` (an @main returning a scalar loss whose
  /// parameters have pp.role = "parameter") and compares every parameter's
  /// gradient with central differences. Other arguments get values from
  /// `fill` (default: uniform in [-1, 1)).
  void check(StringRef program,
             std::function<void(unsigned, pp_tensor *)> fill = nullptr) {
    OwningOpRef<ModuleOp> module =
        parseSourceString<ModuleOp>(program, &context);
    ASSERT_TRUE(module);
    PassManager pm(&context);
    pm.addPass(pp::createAutodiff());
    ASSERT_TRUE(succeeded(pm.run(*module)));
    auto main = module->lookupSymbol<func::FuncOp>("main");

    // Arguments: the original ones, then the loss scale (1).
    std::vector<Tensor> args;
    std::vector<unsigned> parameters;
    for (unsigned i = 0; i < main.getNumArguments(); ++i) {
      auto type = cast<RankedTensorType>(main.getArgumentTypes()[i]);
      std::vector<int64_t> shape(type.getShape().begin(),
                                 type.getShape().end());
      pp_dtype dtype;
      ASSERT_EQ(pp_dtype_from_name(
                    pp::getRuntimeDtype(type.getElementType())
                        ->manifestName.data(),
                    &dtype),
                PP_OK);
      pp_tensor *tensor = nullptr;
      ASSERT_EQ(pp_tensor_create(dtype, shape.size(), shape.data(), &tensor),
                PP_OK);
      args.emplace_back(tensor);
      auto role = main.getArgAttrOfType<StringAttr>(i, pp::kRoleAttrName);
      if (role && role.getValue() == pp::kRoleLossScale)
        floats(args.back())[0] = 1.0f;
      else if (fill)
        fill(i, tensor);
      else
        pp::runtime::fillSynthetic(tensor, 42, "arg" + std::to_string(i), 0, 0);
      if (role && role.getValue() == pp::kRoleParameter)
        parameters.push_back(i);
    }
    std::vector<pp_tensor *> raw;
    for (Tensor &arg : args)
      raw.push_back(arg.get());

    CompiledProgram program(main);
    ASSERT_EQ(program.error(), "");
    std::vector<Tensor> results = program.run(raw);
    // Each parameter's gradient: its result, or the sum of its parts (one
    // per op using it, in these programs without nodes).
    std::vector<std::vector<double>> gradients;
    for (unsigned r = 1; r < results.size(); ++r) {
      auto part =
          main.getResultAttrOfType<IntegerAttr>(r, pp::kGradientPartAttrName);
      int64_t count = pp_tensor_numel(results[r].get());
      if (!part || part.getInt() == 0)
        gradients.emplace_back(count, 0.0);
      for (int64_t j = 0; j < count; ++j)
        gradients.back()[j] += floats(results[r])[j];
    }
    ASSERT_EQ(gradients.size(), parameters.size());
    auto lossAt = [&]() {
      return static_cast<double>(floats(program.run(raw)[0])[0]);
    };
    constexpr float step = 1e-2f;
    for (size_t p = 0; p < parameters.size(); ++p) {
      Tensor &parameter = args[parameters[p]];

      for (int64_t j = 0; j < pp_tensor_numel(parameter.get()); ++j) {
        float saved = floats(parameter)[j];
        floats(parameter)[j] = saved + step;
        double plus = lossAt();
        floats(parameter)[j] = saved - step;
        double minus = lossAt();
        floats(parameter)[j] = saved;
        double numeric = (plus - minus) / (2 * step);
        double analytic = gradients[p][j];
        EXPECT_NEAR(analytic, numeric, 2e-3 + 1e-2 * std::abs(numeric))
            << "parameter " << parameters[p] << " element " << j;
      }
    }
  }

  MLIRContext context;
};

/// A program whose loss is the summed squared error of `body`'s value %y
/// (of type `yType`) against a target.
std::string withMseLoss(StringRef params, StringRef body, StringRef yType) {
  return ("func.func @main(" + params + ", %t: " + yType +
          " {pp.role = \"label\"}) -> tensor<f32> {\n" + body +
          "\n  %l = nn.mse_loss %y, %t reduction<sum> : (" + yType + ", " +
          yType + ") -> tensor<f32>\n  return %l : tensor<f32>\n}\n")
      .str();
}

constexpr const char *kParam = "{pp.role = \"parameter\"}";

/// Values in [-1.5, -0.5] and [0.5, 1.5]: away from relu's kink and from
/// the pole of a division.
void awayFromZero(unsigned index, pp_tensor *tensor) {
  pp::runtime::fillSynthetic(tensor, 7, "arg" + std::to_string(index), 0, 0);
  float *data = static_cast<float *>(pp_tensor_data(tensor));
  for (int64_t i = 0; i < pp_tensor_numel(tensor); ++i)
    data[i] = data[i] * 0.5f + (data[i] >= 0 ? 0.5f : -0.5f);
}

/// Values in [0.5, 1.5]: inside the domain of log, sqrt, rsqrt and of pow's
/// base.
void positive(unsigned index, pp_tensor *tensor) {
  awayFromZero(index, tensor);
  float *data = static_cast<float *>(pp_tensor_data(tensor));
  for (int64_t i = 0; i < pp_tensor_numel(tensor); ++i)
    data[i] = std::abs(data[i]);
}

/// Values on a grid of step 0.1 offset by 0.033 times the argument's
/// index: elements of different arguments differ by 0.033 or more, so
/// finite differences never cross a kink of maximum or minimum.
void apart(unsigned index, pp_tensor *tensor) {
  float *data = static_cast<float *>(pp_tensor_data(tensor));
  for (int64_t i = 0; i < pp_tensor_numel(tensor); ++i)
    data[i] = 0.1f * static_cast<float>((i * 5 + index) % 11) +
              0.033f * static_cast<float>(index) - 0.5f;
}

TEST_F(GradientCheck, MatmulEveryTransposition) {
  for (auto [lhs, rhs, flags] :
       {std::make_tuple("3x4", "4x5", ""),
        std::make_tuple("4x3", "4x5", "transpose_lhs"),
        std::make_tuple("3x4", "5x4", "transpose_rhs"),
        std::make_tuple("4x3", "5x4", "transpose_lhs transpose_rhs")}) {
    SCOPED_TRACE(flags);
    std::string params = std::string("%a: tensor<") + lhs + "xf32> " + kParam +
                         ", %b: tensor<" + rhs + "xf32> " + kParam;
    std::string body = std::string("  %y = nn.matmul %a, %b ") + flags +
                       " : (tensor<" + lhs + "xf32>, tensor<" + rhs +
                       "xf32>) -> tensor<3x5xf32>";
    check(withMseLoss(params, body, "tensor<3x5xf32>"));
  }
}

TEST_F(GradientCheck, BatchedMatmulBroadcastsTheWeight) {
  check(withMseLoss(
      std::string("%a: tensor<2x3x4xf32> ") + kParam +
          ", %b: tensor<4x5xf32> " + kParam,
      "  %y = nn.matmul %a, %b : (tensor<2x3x4xf32>, tensor<4x5xf32>) -> "
      "tensor<2x3x5xf32>",
      "tensor<2x3x5xf32>"));
}

TEST_F(GradientCheck, MatmulAttentionShapesSumOverBroadcastBatches) {
  // Attention's products: Q K^T and A V per head, a rank-4 activation by a
  // shared weight (plain and as nn.Linear stores it), batch dimensions of
  // size 1 or missing on either side.
  for (auto [lhs, rhs, flags, result] :
       {std::make_tuple("2x3x4x5", "2x3x4x5", "transpose_rhs", "2x3x4x4"),
        std::make_tuple("2x3x4x4", "2x3x4x5", "", "2x3x4x5"),
        std::make_tuple("2x3x5x4", "2x3x5x2", "transpose_lhs", "2x3x4x2"),
        std::make_tuple("2x3x4x5", "5x2", "", "2x3x4x2"),
        std::make_tuple("2x4x5", "3x5", "transpose_rhs", "2x4x3"),
        std::make_tuple("1x3x4x5", "2x3x5x2", "", "2x3x4x2"),
        std::make_tuple("2x1x4x5", "3x2x5", "transpose_rhs", "2x3x4x2"),
        std::make_tuple("4x5", "2x3x5x2", "", "2x3x4x2")}) {
    SCOPED_TRACE(std::string(lhs) + " x " + rhs + " " + flags);
    std::string lhsType = std::string("tensor<") + lhs + "xf32>";
    std::string rhsType = std::string("tensor<") + rhs + "xf32>";
    std::string resultType = std::string("tensor<") + result + "xf32>";
    check(withMseLoss("%a: " + lhsType + " " + kParam + ", %b: " + rhsType +
                          " " + kParam,
                      std::string("  %y = nn.matmul %a, %b ") + flags + " : (" +
                          lhsType + ", " + rhsType + ") -> " + resultType,
                      resultType));
  }
}

TEST_F(GradientCheck, BroadcastingBinaryOps) {
  // Every operand is a parameter; the rhs broadcasts in the first op, the
  // lhs in the second.
  using Fill = void (*)(unsigned, pp_tensor *);
  for (auto [op, fill] : {std::make_pair("add", Fill(awayFromZero)),
                          std::make_pair("sub", Fill(awayFromZero)),
                          std::make_pair("mul", Fill(awayFromZero)),
                          std::make_pair("div", Fill(awayFromZero)),
                          std::make_pair("pow", Fill(positive)),
                          std::make_pair("maximum", Fill(apart)),
                          std::make_pair("minimum", Fill(apart))}) {
    SCOPED_TRACE(op);
    check(withMseLoss(std::string("%a: tensor<3x4xf32> ") + kParam +
                          ", %b: tensor<4xf32> " + kParam +
                          ", %c: tensor<3x1xf32> " + kParam,
                      std::string("  %s = nn.") + op +
                          " %a, %b : (tensor<3x4xf32>, tensor<4xf32>) -> "
                          "tensor<3x4xf32>\n  %y = nn." +
                          op +
                          " %c, %s : (tensor<3x1xf32>, tensor<3x4xf32>) -> "
                          "tensor<3x4xf32>",
                      "tensor<3x4xf32>"),
          fill);
  }
}

TEST_F(GradientCheck, UnaryOps) {
  for (const char *op : {"neg", "exp", "sigmoid", "tanh", "relu"}) {
    SCOPED_TRACE(op);
    check(withMseLoss(std::string("%a: tensor<3x4xf32> ") + kParam,
                      std::string("  %y = nn.") + op +
                          " %a : (tensor<3x4xf32>) -> tensor<3x4xf32>",
                      "tensor<3x4xf32>"),
          awayFromZero);
  }
}

TEST_F(GradientCheck, MathFunctions) {
  // log, sqrt and rsqrt on positive values.
  using Fill = void (*)(unsigned, pp_tensor *);
  for (auto [op, attributes, fill] :
       {std::make_tuple("log", "", Fill(positive)),
        std::make_tuple("sqrt", "", Fill(positive)),
        std::make_tuple("rsqrt", "", Fill(positive)),
        std::make_tuple("erf", "", Fill(awayFromZero)),
        std::make_tuple("gelu", "", Fill(awayFromZero)),
        std::make_tuple("gelu", " approximate<tanh>", Fill(awayFromZero))}) {
    SCOPED_TRACE(std::string(op) + attributes);
    check(withMseLoss(std::string("%a: tensor<3x4xf32> ") + kParam,
                      std::string("  %y = nn.") + op + " %a" + attributes +
                          " : (tensor<3x4xf32>) -> tensor<3x4xf32>",
                      "tensor<3x4xf32>"),
          fill);
  }
}

TEST_F(GradientCheck, ReductionsWithAndWithoutKeptDimensions) {
  for (const char *op : {"reduce_sum", "reduce_mean", "reduce_max"}) {
    for (auto [axes, flags, result] :
         {std::make_tuple("[1]", " keep_dims", "2x1x4"),
          std::make_tuple("[0, -1]", "", "3")}) {
      SCOPED_TRACE(std::string(op) + " " + axes + flags);
      std::string resultType = std::string("tensor<") + result + "xf32>";
      check(withMseLoss(std::string("%a: tensor<2x3x4xf32> ") + kParam,
                        std::string("  %y = nn.") + op + " %a axes = " + axes +
                            flags + " : (tensor<2x3x4xf32>) -> " + resultType,
                        resultType));
    }
  }
}

TEST_F(GradientCheck, LayerNormWithAndWithoutAffine) {
  // Over the last dimension and over the last two; with weight and bias,
  // with a weight only, and with neither.
  for (auto [axis, features] :
       {std::make_pair("-1", "4"), std::make_pair("1", "3x4")}) {
    std::string featureType = std::string("tensor<") + features + "xf32>";
    for (size_t affine = 0; affine < 3; ++affine) {
      // The first `affine` of the weight and the bias.
      std::vector<std::string> names = {"%w", "%b"};
      names.resize(affine);
      SCOPED_TRACE(std::string(axis) + " affine " + std::to_string(affine));
      std::string params = std::string("%x: tensor<2x3x4xf32> ") + kParam;
      std::string operands = "%x", types = "tensor<2x3x4xf32>";
      for (const std::string &name : names) {
        params += ", " + name + ": " + featureType + " " + kParam;
        operands += ", " + name;
        types += ", " + featureType;
      }
      check(withMseLoss(params,
                        "  %y = nn.layer_norm " + operands + " axis = " + axis +
                            " epsilon = 1.0e-05 : (" + types +
                            ") -> tensor<2x3x4xf32>",
                        "tensor<2x3x4xf32>"));
    }
  }
}

TEST_F(GradientCheck, DropoutRecomputesItsMask) {
  check(withMseLoss(std::string("%a: tensor<4x6xf32> ") + kParam,
                    "  %y = nn.dropout %a ratio = 0.5 key = 3 : "
                    "(tensor<4x6xf32>) -> tensor<4x6xf32>",
                    "tensor<4x6xf32>"));
}

TEST_F(GradientCheck, ReshapeAndConstants) {
  check(
      withMseLoss(std::string("%a: tensor<2x6xf32> ") + kParam,
                  "  %r = nn.reshape %a shape = [3, 4] : (tensor<2x6xf32>) -> "
                  "tensor<3x4xf32>\n"
                  "  %c = arith.constant dense<0.5> : tensor<f32>\n"
                  "  %y = nn.mul %r, %c : (tensor<3x4xf32>, tensor<f32>) -> "
                  "tensor<3x4xf32>",
                  "tensor<3x4xf32>"));
}

TEST_F(GradientCheck, SoftmaxAndLogSoftmaxAlongEachAxis) {
  for (const char *op : {"softmax", "log_softmax"}) {
    for (const char *axis : {"-1", "0"}) {
      SCOPED_TRACE(std::string(op) + " " + axis);
      check(withMseLoss(std::string("%a: tensor<3x4xf32> ") + kParam,
                        std::string("  %y = nn.") + op + " %a axis = " + axis +
                            " : (tensor<3x4xf32>) -> tensor<3x4xf32>",
                        "tensor<3x4xf32>"));
    }
  }
}

TEST_F(GradientCheck, SplitPiecesUsedOrNot) {
  // Pieces 0 and 2 reach the loss, piece 1 does not: its slice of the
  // parameter gets a zero gradient.
  check(withMseLoss(
      std::string("%a: tensor<3x6xf32> ") + kParam + ", %b: tensor<3x2xf32> " +
          kParam,
      "  %p:3 = nn.split %a axis = -1 sizes = [2, 3, 1] : (tensor<3x6xf32>) "
      "-> (tensor<3x2xf32>, tensor<3x3xf32>, tensor<3x1xf32>)\n"
      "  %m = nn.mul %p#0, %b : (tensor<3x2xf32>, tensor<3x2xf32>) -> "
      "tensor<3x2xf32>\n"
      "  %y = nn.add %m, %p#2 : (tensor<3x2xf32>, tensor<3x1xf32>) -> "
      "tensor<3x2xf32>",
      "tensor<3x2xf32>"));
}

TEST_F(GradientCheck, MseLossReductions) {
  for (const char *reduction : {"sum", "mean"}) {
    SCOPED_TRACE(reduction);
    check(std::string("func.func @main(%a: tensor<3x4xf32> ") + kParam +
          ", %t: tensor<3x4xf32>) -> tensor<f32> {\n"
          "  %l = nn.mse_loss %a, %t reduction<" +
          reduction +
          "> : (tensor<3x4xf32>, tensor<3x4xf32>) -> tensor<f32>\n"
          "  return %l : tensor<f32>\n}\n");
  }
}

/// A fill for programs with index and mask arguments: i64 arguments hold
/// `indices` and i1 arguments `mask` (each repeated to the argument's
/// size), float arguments the default values.
std::function<void(unsigned, pp_tensor *)>
withIndicesAndMask(std::vector<int64_t> indices, std::vector<uint8_t> mask) {
  return [=](unsigned index, pp_tensor *tensor) {
    auto repeat = [&](const auto &values) {
      using T = typename std::decay_t<decltype(values)>::value_type;
      T *data = static_cast<T *>(pp_tensor_data(tensor));
      for (int64_t i = 0; i < pp_tensor_numel(tensor); ++i)
        data[i] = values[i % values.size()];
    };
    if (pp_tensor_dtype(tensor) == PP_DTYPE_I64)
      repeat(indices);
    else if (pp_tensor_dtype(tensor) == PP_DTYPE_BOOL)
      repeat(mask);
    else
      pp::runtime::fillSynthetic(tensor, 42, "arg" + std::to_string(index), 0,
                                 0);
  };
}

TEST_F(GradientCheck, CrossEntropyOverLanguageModelLogits) {
  // Logits [batch, sequence, vocabulary] with labels [batch, sequence]; two
  // positions carry ignore_index -100 and count for nothing.
  for (const char *reduction : {"sum", "mean"}) {
    SCOPED_TRACE(reduction);
    check(std::string("func.func @main(%z: tensor<2x3x5xf32> ") + kParam +
              ", %y: tensor<2x3xi64>) -> tensor<f32> {\n"
              "  %l = nn.cross_entropy %z, %y reduction<" +
              reduction +
              "> : (tensor<2x3x5xf32>, tensor<2x3xi64>) -> tensor<f32>\n"
              "  return %l : tensor<f32>\n}\n",
          withIndicesAndMask({4, -100, 0, 2, 2, -100}, {}));
  }
}

TEST_F(GradientCheck, CrossEntropyWithIgnoredLabels) {
  for (const char *reduction : {"sum", "mean"}) {
    SCOPED_TRACE(reduction);
    check(std::string("func.func @main(%z: tensor<4x5xf32> ") + kParam +
              ", %y: tensor<4xi64>) -> tensor<f32> {\n"
              "  %l = nn.cross_entropy %z, %y reduction<" +
              reduction +
              "> ignore_index = -1 : (tensor<4x5xf32>, tensor<4xi64>) -> "
              "tensor<f32>\n  return %l : tensor<f32>\n}\n",
          [](unsigned index, pp_tensor *tensor) {
            if (pp_tensor_dtype(tensor) == PP_DTYPE_I64) {
              int64_t labels[] = {2, -1, 0, 4};
              std::memcpy(pp_tensor_data(tensor), labels, sizeof(labels));
            } else {
              pp::runtime::fillSynthetic(tensor, 3, "logits", 0, 0);
            }
          });
  }
}

TEST_F(GradientCheck, WhereBroadcastsEveryOperand) {
  // The condition broadcasts along columns, each value along rows in one of
  // the selects; both values reach the loss through both.
  check(withMseLoss(
            std::string("%a: tensor<3x4xf32> ") + kParam +
                ", %b: tensor<4xf32> " + kParam + ", %c: tensor<3x1xi1>",
            "  %w = nn.where %c, %a, %b : (tensor<3x1xi1>, tensor<3x4xf32>, "
            "tensor<4xf32>) -> tensor<3x4xf32>\n"
            "  %v = nn.where %c, %b, %w : (tensor<3x1xi1>, tensor<4xf32>, "
            "tensor<3x4xf32>) -> tensor<3x4xf32>\n"
            "  %y = nn.mul %w, %v : (tensor<3x4xf32>, tensor<3x4xf32>) -> "
            "tensor<3x4xf32>",
            "tensor<3x4xf32>"),
        withIndicesAndMask({}, {1, 0, 1}));
}

TEST_F(GradientCheck, GatherSumsRepeatedIndices) {
  // Rows 2 and 4 (also as -1) are gathered twice, rows 1 and 3 never.
  for (auto [axis, data, result] : {std::make_tuple("0", "5x3", "2x3x3"),
                                    std::make_tuple("1", "3x5", "3x2x3"),
                                    std::make_tuple("-1", "3x5", "3x2x3")}) {
    SCOPED_TRACE(axis);
    std::string dataType = std::string("tensor<") + data + "xf32>";
    std::string resultType = std::string("tensor<") + result + "xf32>";
    check(withMseLoss(
              "%d: " + dataType + " " + kParam + ", %i: tensor<2x3xi64>",
              std::string("  %y = nn.gather %d, %i axis = ") + axis + " : (" +
                  dataType + ", tensor<2x3xi64>) -> " + resultType,
              resultType),
          withIndicesAndMask({0, 2, 2, -1, 4, 0}, {}));
  }
}

TEST_F(GradientCheck, TransposeByEveryKindOfPermutation) {
  for (auto [permutation, result] : {std::make_tuple("[2, 0, 1]", "4x2x3"),
                                     std::make_tuple("[0, 2, 1]", "2x4x3"),
                                     std::make_tuple("[0, 1, 2]", "2x3x4")}) {
    SCOPED_TRACE(permutation);
    std::string resultType = std::string("tensor<") + result + "xf32>";
    check(withMseLoss(std::string("%a: tensor<2x3x4xf32> ") + kParam,
                      std::string("  %y = nn.transpose %a permutation = ") +
                          permutation + " : (tensor<2x3x4xf32>) -> " +
                          resultType,
                      resultType));
  }
}

TEST_F(GradientCheck, StridedSliceScattersItsGradient) {
  check(withMseLoss(std::string("%a: tensor<4x7xf32> ") + kParam,
                    "  %y = nn.slice %a starts = [1, 0] limits = [4, 7] "
                    "strides = [2, 3] : (tensor<4x7xf32>) -> tensor<2x3xf32>",
                    "tensor<2x3xf32>"));
}

TEST_F(GradientCheck, ConcatSlicesTheGradientPerInput) {
  // %a is concatenated twice: its two slices add up. %c carries no
  // gradient (it is no parameter).
  check(withMseLoss(std::string("%a: tensor<2x3xf32> ") + kParam +
                        ", %b: tensor<2x1xf32> " + kParam +
                        ", %c: tensor<2x2xf32>",
                    "  %y = nn.concat %a, %b, %c, %a axis = -1 : "
                    "(tensor<2x3xf32>, tensor<2x1xf32>, tensor<2x2xf32>, "
                    "tensor<2x3xf32>) -> tensor<2x9xf32>",
                    "tensor<2x9xf32>"));
}

TEST_F(GradientCheck, BroadcastToSumsTheGradientBack) {
  check(withMseLoss(std::string("%a: tensor<3x1xf32> ") + kParam,
                    "  %y = nn.broadcast_to %a shape = [2, 3, 4] : "
                    "(tensor<3x1xf32>) -> tensor<2x3x4xf32>",
                    "tensor<2x3x4xf32>"));
}

TEST_F(GradientCheck, TriluUpperAndLower) {
  for (const char *attributes : {"diagonal = 1 upper", "diagonal = -1"}) {
    SCOPED_TRACE(attributes);
    check(withMseLoss(std::string("%a: tensor<2x3x4xf32> ") + kParam,
                      std::string("  %y = nn.trilu %a ") + attributes +
                          " : (tensor<2x3x4xf32>) -> tensor<2x3x4xf32>",
                      "tensor<2x3x4xf32>"));
  }
}

TEST_F(GradientCheck, CausalMaskFilledWithMinusInfinity) {
  // The causal attention pattern: an i1 trilu of a splat true, -inf where
  // it is false, then softmax; the masked scores get no gradient. The
  // columns come from an i64 constant through gather.
  check(withMseLoss(
      std::string("%s: tensor<2x4x4xf32> ") + kParam,
      "  %ones = arith.constant dense<true> : tensor<4x4xi1>\n"
      "  %mask = nn.trilu %ones diagonal = 0 : (tensor<4x4xi1>) -> "
      "tensor<4x4xi1>\n"
      "  %columns = arith.constant dense<[3, 0, 1, 2]> : tensor<4xi64>\n"
      "  %g = nn.gather %s, %columns axis = 2 : (tensor<2x4x4xf32>, "
      "tensor<4xi64>) -> tensor<2x4x4xf32>\n"
      "  %ninf = arith.constant dense<0xFF800000> : tensor<f32>\n"
      "  %m = nn.where %mask, %g, %ninf : (tensor<4x4xi1>, tensor<2x4x4xf32>, "
      "tensor<f32>) -> tensor<2x4x4xf32>\n"
      "  %y = nn.softmax %m axis = -1 : (tensor<2x4x4xf32>) -> "
      "tensor<2x4x4xf32>",
      "tensor<2x4x4xf32>"));
}

TEST_F(GradientCheck, AttentionWithBiasAndMask) {
  // nn.attention's rule (nn.attention_grad, recomputing the probabilities)
  // for the query, key and value; the bias and the mask carry none.
  std::string params = std::string("%q: tensor<2x3x4xf32> ") + kParam +
                       ", %kt: tensor<2x4x5xf32> " + kParam +
                       ", %v: tensor<2x5x3xf32> " + kParam;
  check(withMseLoss(
      params,
      "  %b = arith.constant dense<[0.5, -0.25, 0.0, 1.0, -1.0]> : "
      "tensor<5xf32>\n"
      "  %m = arith.constant dense<[[true, false, true, true, true], "
      "[true, true, false, true, true], [false, true, true, true, true]]> : "
      "tensor<3x5xi1>\n"
      "  %y = nn.attention %q, %kt, %v bias %b mask %m scale = 0.5 fill = "
      "-1.0e9 : (tensor<2x3x4xf32>, tensor<2x4x5xf32>, tensor<2x5x3xf32>, "
      "tensor<5xf32>, tensor<3x5xi1>) -> tensor<2x3x3xf32>",
      "tensor<2x3x3xf32>"));
}

TEST_F(GradientCheck, AttentionMaskedFillTransposedKeyDivided) {
  std::string params = std::string("%q: tensor<2x3x4xf32> ") + kParam +
                       ", %k: tensor<2x5x4xf32> " + kParam +
                       ", %v: tensor<2x5x3xf32> " + kParam;
  check(withMseLoss(
      params,
      "  %m = arith.constant dense<[[false, true, false, false, false], "
      "[false, false, false, true, false], [true, false, false, false, "
      "false]]> : tensor<3x5xi1>\n"
      "  %y = nn.attention %q, %k, %v mask %m scale = 2.0 divide fill = "
      "0xFFF0000000000000 fill_where_true transpose_key : "
      "(tensor<2x3x4xf32>, tensor<2x5x4xf32>, tensor<2x5x3xf32>, "
      "tensor<3x5xi1>) -> tensor<2x3x3xf32>",
      "tensor<2x3x3xf32>"));
}

TEST_F(GradientCheck, CastThroughF64) {
  check(
      withMseLoss(std::string("%a: tensor<3x4xf32> ") + kParam +
                      ", %b: tensor<4xf32> " + kParam,
                  "  %d = nn.cast %a : (tensor<3x4xf32>) -> tensor<3x4xf64>\n"
                  "  %s = nn.cast %d : (tensor<3x4xf64>) -> tensor<3x4xf32>\n"
                  "  %y = nn.mul %s, %b : (tensor<3x4xf32>, tensor<4xf32>) -> "
                  "tensor<3x4xf32>",
                  "tensor<3x4xf32>"));
}

} // namespace

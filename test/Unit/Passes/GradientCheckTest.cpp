//===- GradientCheckTest.cpp - pp-autodiff against finite differences -----===//
//
// Every gradient rule of pp-autodiff is checked on a small program: the
// differentiated @main is evaluated with the runtime's CPU kernels, and each
// parameter's gradient is compared with central finite differences of the
// loss.
//
//===----------------------------------------------------------------------===//

#include "dialects/nn/IR/NNOps.h"
#include "dialects/pp/IR/PPDialect.h"
#include "passes/Passes.h"
#include "runtime/Frame.h"
#include "runtime/SyntheticData.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/ADT/TypeSwitch.h"

#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <memory>

using namespace mlir;
namespace nn = pp::nn;

namespace {

struct TensorDeleter {
  void operator()(pp_tensor *tensor) const { pp_tensor_destroy(tensor); }
};
using Tensor = std::unique_ptr<pp_tensor, TensorDeleter>;

float *floats(const Tensor &tensor) {
  return static_cast<float *>(pp_tensor_data(tensor.get()));
}

/// Runs an nn-dialect function on the runtime's CPU kernels.
class Evaluator {
public:
  /// The results of `function` on `args` (borrowed).
  std::vector<Tensor> run(func::FuncOp function,
                          const std::vector<pp_tensor *> &args) {
    pp_frame frame;
    llvm::DenseMap<Value, pp_tensor *> values;
    std::vector<Tensor> owned;
    Block &body = function.getBody().front();
    for (auto [arg, tensor] : llvm::zip(body.getArguments(), args))
      values[arg] = tensor;
    auto in = [&](Operation *op, unsigned i) {
      return values.lookup(op->getOperand(i));
    };
    for (Operation &op : body.without_terminator()) {
      pp_tensor *result =
          llvm::TypeSwitch<Operation *, pp_tensor *>(&op)
              .Case([&](nn::MatmulOp m) {
                return pp_cpu_matmul(&frame, in(m, 0), in(m, 1),
                                     m.getTransposeLhs(), m.getTransposeRhs());
              })
              .Case([&](nn::AddOp a) {
                return pp_cpu_add(&frame, in(a, 0), in(a, 1));
              })
              .Case([&](nn::SubOp s) {
                return pp_cpu_sub(&frame, in(s, 0), in(s, 1));
              })
              .Case([&](nn::MulOp m) {
                return pp_cpu_mul(&frame, in(m, 0), in(m, 1));
              })
              .Case([&](nn::NegOp n) { return pp_cpu_neg(&frame, in(n, 0)); })
              .Case([&](nn::ReluOp r) { return pp_cpu_relu(&frame, in(r, 0)); })
              .Case([&](nn::SigmoidOp s) {
                return pp_cpu_sigmoid(&frame, in(s, 0));
              })
              .Case([&](nn::TanhOp t) { return pp_cpu_tanh(&frame, in(t, 0)); })
              .Case([&](nn::ReluGradOp r) {
                return pp_cpu_relu_grad(&frame, in(r, 0), in(r, 1));
              })
              .Case([&](nn::SigmoidGradOp s) {
                return pp_cpu_sigmoid_grad(&frame, in(s, 0), in(s, 1));
              })
              .Case([&](nn::TanhGradOp t) {
                return pp_cpu_tanh_grad(&frame, in(t, 0), in(t, 1));
              })
              .Case([&](nn::ReshapeOp r) {
                return pp_cpu_reshape(&frame, in(r, 0), r.getShape().size(),
                                      r.getShape().data());
              })
              .Case([&](nn::SumToOp s) {
                return pp_cpu_sum_to(&frame, in(s, 0), s.getShape().size(),
                                     s.getShape().data());
              })
              .Case([&](nn::MseLossOp m) {
                return pp_cpu_mse_loss(&frame, in(m, 0), in(m, 1),
                                       static_cast<int>(m.getReduction()));
              })
              .Case([&](nn::MseLossGradOp m) {
                return pp_cpu_mse_loss_grad(&frame, in(m, 0), in(m, 1),
                                            in(m, 2),
                                            static_cast<int>(m.getReduction()));
              })
              .Case([&](nn::CrossEntropyOp c) {
                return pp_cpu_cross_entropy(&frame, in(c, 0), in(c, 1),
                                            c.getIgnoreIndex(),
                                            static_cast<int>(c.getReduction()));
              })
              .Case([&](nn::CrossEntropyGradOp c) {
                return pp_cpu_cross_entropy_grad(
                    &frame, in(c, 0), in(c, 1), in(c, 2),
                    c.getIgnoreIndex(), static_cast<int>(c.getReduction()));
              })
              .Case([&](arith::ConstantOp c) {
                auto dense = cast<DenseElementsAttr>(c.getValue());
                auto shape = cast<RankedTensorType>(c.getType()).getShape();
                std::vector<float> data(dense.getValues<float>().begin(),
                                        dense.getValues<float>().end());
                return pp_cpu_constant_f32(&frame, shape.size(), shape.data(),
                                           data.data());
              })
              .Default([&](Operation *unknown) -> pp_tensor * {
                ADD_FAILURE() << "no kernel for "
                              << unknown->getName().getStringRef().str();
                return nullptr;
              });
      EXPECT_TRUE(frame.error.empty()) << frame.error;
      owned.emplace_back(result);
      values[op.getResult(0)] = result;
    }
    std::vector<Tensor> results;
    for (Value value : body.getTerminator()->getOperands())
      results.emplace_back(pp_cpu_copy(&frame, values.lookup(value)));
    return results;
  }
};

class GradientCheck : public ::testing::Test {
protected:
  GradientCheck() {
    context.loadDialect<pp::nn::NNDialect, pp::PPDialect, arith::ArithDialect,
                        func::FuncDialect>();
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
      pp_tensor *tensor = nullptr;
      ASSERT_EQ(pp_tensor_create(type.getElementType().isF32() ? PP_DTYPE_F32
                                                               : PP_DTYPE_I64,
                                 shape.size(), shape.data(), &tensor),
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

    Evaluator evaluator;
    std::vector<Tensor> results = evaluator.run(main, raw);
    ASSERT_EQ(results.size(), 1 + parameters.size());
    auto lossAt = [&]() {
      return static_cast<double>(floats(evaluator.run(main, raw)[0])[0]);
    };
    constexpr float step = 1e-2f;
    for (size_t p = 0; p < parameters.size(); ++p) {
      Tensor &parameter = args[parameters[p]];
      const Tensor &gradient = results[1 + p];
      for (int64_t j = 0; j < pp_tensor_numel(parameter.get()); ++j) {
        float saved = floats(parameter)[j];
        floats(parameter)[j] = saved + step;
        double plus = lossAt();
        floats(parameter)[j] = saved - step;
        double minus = lossAt();
        floats(parameter)[j] = saved;
        double numeric = (plus - minus) / (2 * step);
        double analytic = floats(gradient)[j];
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

TEST_F(GradientCheck, BroadcastingAddSubMul) {
  for (const char *op : {"add", "sub", "mul"}) {
    SCOPED_TRACE(op);
    check(withMseLoss(std::string("%a: tensor<3x4xf32> ") + kParam +
                          ", %b: tensor<4xf32> " + kParam +
                          ", %c: tensor<3x1xf32> " + kParam,
                      std::string("  %s = nn.") + op +
                          " %a, %b : (tensor<3x4xf32>, tensor<4xf32>) -> "
                          "tensor<3x4xf32>\n  %y = nn." +
                          op +
                          " %s, %c : (tensor<3x4xf32>, tensor<3x1xf32>) -> "
                          "tensor<3x4xf32>",
                      "tensor<3x4xf32>"));
  }
}

TEST_F(GradientCheck, UnaryOps) {
  for (const char *op : {"neg", "sigmoid", "tanh", "relu"}) {
    SCOPED_TRACE(op);
    check(withMseLoss(std::string("%a: tensor<3x4xf32> ") + kParam,
                      std::string("  %y = nn.") + op +
                          " %a : (tensor<3x4xf32>) -> tensor<3x4xf32>",
                      "tensor<3x4xf32>"),
          [](unsigned, pp_tensor *tensor) {
            // Keep relu's inputs away from its kink at 0.
            pp::runtime::fillSynthetic(tensor, 7, "unary", 0, 0);
            float *data = static_cast<float *>(pp_tensor_data(tensor));
            for (int64_t i = 0; i < pp_tensor_numel(tensor); ++i)
              data[i] += data[i] >= 0 ? 0.1f : -0.1f;
          });
  }
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

} // namespace

//===- EvalFunctionTest.cpp - eval functions compute the forward's loss ---===//
//
// A small model (a skip connection past a stage, a dropout) goes through
// `--pp-compile` and the real code generator; each stage's eval function
// (pp-derive-eval) and forward function then run in the test, their
// messages passed in memory, on the same inputs, labels and parameters.
// The eval loss must equal the forward's bit for bit, the eval functions
// must return nothing but the loss, and every message an eval function
// sends must be received by the next stage's eval function.
//
//===----------------------------------------------------------------------===//

#include "LoadedStages.h"

#include "dialects/nn/IR/NNOps.h"
#include "dialects/pp/IR/PPDialect.h"
#include "passes/Passes.h"
#include "passes/codegen/RuntimeDtype.h"
#include "runtime/data/SyntheticData.h"
#include "runtime/kernels/Frame.h"

#include "mlir/Dialect/EmitC/IR/EmitC.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"

#include <gtest/gtest.h>

#include <cstring>
#include <map>
#include <tuple>

using namespace mlir;

namespace {

/// fc1 -> act -> dropout -> fc2 -> skip (adds fc1) -> out, loss mse on y.
constexpr const char *kModel = R"mlir(
func.func @main(%x: tensor<4x3xf32> {pp.name = "x", pp.role = "input"},
                %w1: tensor<8x3xf32> {pp.name = "w1", pp.role = "parameter"},
                %b1: tensor<8xf32> {pp.name = "b1", pp.role = "parameter"},
                %w2: tensor<8x8xf32> {pp.name = "w2", pp.role = "parameter"},
                %w3: tensor<3x8xf32> {pp.name = "w3", pp.role = "parameter"})
    -> (tensor<4x3xf32> {pp.name = "y"}) {
  %h0 = nn.matmul %x, %w1 transpose_rhs {pp.node = "fc1"} : (tensor<4x3xf32>, tensor<8x3xf32>) -> tensor<4x8xf32>
  %h = nn.add %h0, %b1 {pp.node = "fc1"} : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  %a = nn.tanh %h {pp.node = "act"} : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %d = nn.dropout %a ratio = 2.500000e-01 key = 3 {pp.node = "drop"} : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %z = nn.matmul %d, %w2 transpose_rhs {pp.node = "fc2"} : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
  %s = nn.add %z, %h {pp.node = "skip"} : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %y = nn.matmul %s, %w3 transpose_rhs {pp.node = "out"} : (tensor<4x8xf32>, tensor<3x8xf32>) -> tensor<4x3xf32>
  return %y : tensor<4x3xf32>
}
)mlir";

/// Messages between the stages of one process, held until received.
class MemoryChannel : public pp::runtime::MessageChannel {
public:
  /// The stage whose function runs now.
  int64_t stage = 0;

  void send(int64_t to, const std::string &name,
            const pp_tensor &tensor) override {
    auto *data = static_cast<const char *>(
        pp_tensor_data(const_cast<pp_tensor *>(&tensor)));
    pending[{stage, to, name}].assign(data, data + pp_tensor_nbytes(&tensor));
  }

  std::string recv(int64_t from, const std::string &name,
                   pp_tensor &tensor) override {
    auto it = pending.find({from, stage, name});
    if (it == pending.end())
      return "stage " + std::to_string(from) + " sent nothing named '" + name +
             "' to stage " + std::to_string(stage);
    if (it->second.size() != pp_tensor_nbytes(&tensor))
      return "'" + name + "' has the wrong size";
    std::memcpy(pp_tensor_data(&tensor), it->second.data(), it->second.size());
    pending.erase(it);
    return "";
  }

  /// (from, to, name) of every message sent and not received.
  std::map<std::tuple<int64_t, int64_t, std::string>, std::vector<char>>
      pending;
};

class EvalFunction : public ::testing::TestWithParam<int64_t> {
protected:
  EvalFunction() {
    context.loadDialect<pp::nn::NNDialect, pp::PPDialect, func::FuncDialect,
                        emitc::EmitCDialect>();
    pp::registerPasses();
  }

  /// The model compiled for `stages` stages.
  OwningOpRef<ModuleOp> compile(int64_t stages) {
    OwningOpRef<ModuleOp> module =
        parseSourceString<ModuleOp>(kModel, &context);
    EXPECT_TRUE(module);
    std::string pipeline = "pp-compile{stages=" + std::to_string(stages) +
                           " microbatch-size=4 loss=mse:y" +
                           (stages == 3 ? " split-points=act,skip" : "") + "}";
    PassManager pm(&context);
    EXPECT_TRUE(succeeded(parsePassPipeline(pipeline, pm)));
    // Partition's remarks about stage costs are not this test's business.
    ScopedDiagnosticHandler quiet(&context, [](Diagnostic &diagnostic) {
      return success(diagnostic.getSeverity() == DiagnosticSeverity::Remark);
    });
    EXPECT_TRUE(succeeded(pm.run(*module)));
    return module;
  }

  /// The tensor `name` of `type`, synthetic values drawn once per name.
  pp_tensor *valueOf(StringRef name, Type type) {
    Tensor &tensor = values[name.str()];
    if (!tensor) {
      auto ranked = cast<RankedTensorType>(type);
      pp_dtype dtype;
      EXPECT_EQ(
          pp_dtype_from_name(
              pp::getRuntimeDtype(ranked.getElementType())->manifestName.data(),
              &dtype),
          PP_OK);
      pp_tensor *created = nullptr;
      EXPECT_EQ(pp_tensor_create(dtype, ranked.getRank(),
                                 ranked.getShape().data(), &created),
                PP_OK);
      tensor.reset(created);
      pp::runtime::fillSynthetic(created, 7, name.str(), 0, 0);
    }
    return tensor.get();
  }

  /// Runs the functions @stage<s>_<phase> of every stage in stage order
  /// and returns the loss the last one returns; checks that every message
  /// arrived and, for eval, that nothing but the loss is returned.
  float runPhase(ModuleOp module, const LoadedStages &library, int64_t stages,
                 StringRef phase, bool training) {
    MemoryChannel channel;
    float loss = 0;
    int64_t losses = 0;
    for (int64_t stage = 0; stage < stages; ++stage) {
      std::string symbol = ("stage" + Twine(stage) + "_" + phase).str();
      auto function = module.lookupSymbol<func::FuncOp>(symbol);
      StageEntry entry = library.entry(symbol);
      EXPECT_TRUE(function && entry) << symbol;
      if (!function || !entry)
        return 0;
      pp_frame frame;
      frame.channel = &channel;
      frame.position = {/*seed=*/42, /*step=*/3, /*firstSample=*/8, training};
      for (unsigned i = 0; i < function.getNumArguments(); ++i)
        frame.args.push_back(
            valueOf(function.getArgAttrOfType<StringAttr>(i, pp::kNameAttrName),
                    function.getArgumentTypes()[i]));
      channel.stage = stage;
      entry(&frame);
      EXPECT_EQ(frame.error, "") << symbol;
      for (unsigned i = 0; i < function.getNumResults(); ++i) {
        StringRef role =
            function.getResultAttrOfType<StringAttr>(i, pp::kRoleAttrName);
        if (phase == "eval") {
          EXPECT_EQ(role, pp::kRoleLoss) << symbol << " result " << i;
        }
        if (role == pp::kRoleLoss) {
          loss = *static_cast<float *>(pp_tensor_data(frame.results[i]));
          ++losses;
        }
      }
    }
    EXPECT_EQ(losses, 1) << phase.str();
    EXPECT_TRUE(channel.pending.empty())
        << phase.str() << ": " << channel.pending.size()
        << " messages nobody received";
    return loss;
  }

  MLIRContext context;
  std::map<std::string, Tensor> values;
};

TEST_P(EvalFunction, ComputesTheForwardsLossBitForBit) {
  int64_t stages = GetParam();
  OwningOpRef<ModuleOp> module = compile(stages);
  ASSERT_TRUE(module);
  LoadedStages library(*module);
  ASSERT_EQ(library.error(), "");
  // Outside training (as evaluation runs) dropout is the identity; while
  // training both draw the same mask, so the two agree either way.
  for (bool training : {false, true}) {
    float forward = runPhase(*module, library, stages, "forward", training);
    float eval = runPhase(*module, library, stages, "eval", training);
    EXPECT_NE(forward, 0.0f);
    EXPECT_EQ(std::memcmp(&forward, &eval, sizeof(float)), 0)
        << "training " << training << ": forward " << forward << ", eval "
        << eval;
  }
}

INSTANTIATE_TEST_SUITE_P(Stages, EvalFunction, ::testing::Values(1, 3));

} // namespace

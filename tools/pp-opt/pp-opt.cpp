//===- pp-opt.cpp - the pp compiler driver ----------------------*- C++ -*-===//
//
// An mlir-opt style driver with the nn and pp dialects, the upstream dialects
// their programs use, and every pp pass registered.
//
//===----------------------------------------------------------------------===//

#include "dialects/nn/IR/NNDialect.h"
#include "dialects/pp/IR/PPDialect.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"
#include "mlir/Transforms/Passes.h"

int main(int argc, char **argv) {
  mlir::DialectRegistry registry;
  registry.insert<pp::nn::NNDialect, pp::PPDialect, mlir::arith::ArithDialect,
                  mlir::func::FuncDialect, mlir::tensor::TensorDialect>();
  mlir::registerCanonicalizerPass();
  mlir::registerCSEPass();
  mlir::registerSymbolDCEPass();
  return mlir::asMainReturnCode(mlir::MlirOptMain(
      argc, argv, "pp compiler driver: partitions models into pipelines\n",
      registry));
}

//===- LoadWeights.cpp - pp-opt --weights ---------------------------------===//

#include "tools/pp-opt/LoadWeights.h"

#include "dialects/pp/IR/PPDialect.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/DialectResourceBlobManager.h"

#include <stdexcept>

using namespace mlir;

namespace pp {

LogicalResult loadWeights(ModuleOp module, const std::string &path,
                          const runtime::WeightsNaming &naming,
                          llvm::raw_ostream &log) {
  auto main = module.lookupSymbol<func::FuncOp>("main");
  if (!main)
    return module.emitError() << "--weights: the module has no @main whose "
                                 "parameters the weights would give";
  auto record = module->getAttrOfType<DictionaryAttr>(kImportRecordAttrName);
  auto folded = record ? record.getAs<DictionaryAttr>("folded") : nullptr;
  std::vector<runtime::ModelTensor> tensors;
  std::map<std::string, unsigned> argumentOf;
  for (unsigned i = 0; i < main.getNumArguments(); ++i) {
    auto name = main.getArgAttrOfType<StringAttr>(i, kNameAttrName);
    auto role = main.getArgAttrOfType<StringAttr>(i, kRoleAttrName);
    auto type = dyn_cast<RankedTensorType>(main.getArgument(i).getType());
    if (!name || !role || !type || !main.getArgAttr(i, kInitAttrName) ||
        !type.getElementType().isF32())
      continue;
    tensors.push_back({name.str(),
                       runtime::Shape(type.getShape().begin(),
                                      type.getShape().end()),
                       role.getValue() != kRoleConstant,
                       folded && folded.get(name)
                           ? cast<StringAttr>(folded.get(name)).str()
                           : ""});
    argumentOf[name.str()] = i;
  }
  try {
    runtime::PretrainedWeights weights =
        runtime::PretrainedWeights::open(path);
    runtime::WeightsBinding binding =
        runtime::bindWeights(weights, tensors, naming);
    for (const auto &[model, file] : binding.fileNames) {
      unsigned i = argumentOf.at(model);
      auto type = cast<RankedTensorType>(main.getArgument(i).getType());
      AsmResourceBlob blob = HeapAsmResourceBlob::allocate(
          type.getNumElements() * sizeof(float), alignof(float));
      weights.read(file, reinterpret_cast<float *>(
                             blob.getMutableData().data()));
      main.setArgAttr(i, kInitAttrName,
                      DenseResourceElementsAttr::get(type, model,
                                                     std::move(blob)));
    }
    log << runtime::describeBinding(weights, binding, tensors.size(),
                                    "they keep the model's values")
        << "\n";
  } catch (const std::runtime_error &error) {
    return module.emitError() << error.what();
  }
  return success();
}

} // namespace pp

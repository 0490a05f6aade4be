//===- NodeChecks.cpp - pp's own checks of each ONNX node -----------------===//
//
// libonnx 1.12's checker knows opsets up to 17. These checks hold for every
// opset pp imports and guard the newer ones alone: a node's input and output
// counts and its attributes (names, types, the opsets that have them,
// required ones) against the op's NodeRule.
//
//===----------------------------------------------------------------------===//

#include "frontends/onnx/GraphImporter.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"

using namespace mlir;

namespace pp::onnx_frontend {

/// "2", "1 to 3", "1 or more" for messages.
static std::string countText(int min, int max) {
  if (max < 0)
    return std::to_string(min) + " or more";
  if (min == max)
    return std::to_string(min);
  return std::to_string(min) + " to " + std::to_string(max);
}

static std::string attributeTypeName(int type) {
  if (!onnx::AttributeProto::AttributeType_IsValid(type))
    return "unknown (" + std::to_string(type) + ")";
  return onnx::AttributeProto::AttributeType_Name(
      static_cast<onnx::AttributeProto::AttributeType>(type));
}

LogicalResult checkNode(const NodeContext &ctx, const NodeRule &rule) {
  const onnx::NodeProto &node = ctx.node;
  if (ctx.opset < rule.sinceOpset)
    return ctx.error() << node.op_type() << " exists from opset "
                       << rule.sinceOpset << " on";
  int inputs = node.input_size();
  while (inputs > 0 && node.input(inputs - 1).empty())
    --inputs; // Trailing optional inputs may be given as "".
  int outputs = node.output_size();
  if (inputs < rule.minInputs ||
      (rule.maxInputs >= 0 && inputs > rule.maxInputs))
    return ctx.error() << "takes " << countText(rule.minInputs, rule.maxInputs)
                       << " inputs, found " << inputs;
  if (outputs < rule.minOutputs ||
      (rule.maxOutputs >= 0 && outputs > rule.maxOutputs))
    return ctx.error() << "has " << countText(rule.minOutputs, rule.maxOutputs)
                       << " outputs, found " << outputs;

  auto inOpset = [&](const AttributeRule &attribute) {
    return attribute.sinceOpset <= ctx.opset &&
           ctx.opset <= attribute.untilOpset;
  };
  for (const onnx::AttributeProto &attribute : node.attribute()) {
    auto known = llvm::find_if(rule.attributes, [&](const AttributeRule &r) {
      return r.name == attribute.name() && inOpset(r);
    });
    if (known == rule.attributes.end()) {
      InFlightDiagnostic diag = ctx.error()
                                << "unexpected attribute '" << attribute.name()
                                << "'; in this opset " << node.op_type();
      SmallVector<StringRef> names;
      for (const AttributeRule &r : rule.attributes)
        if (inOpset(r))
          names.push_back(r.name);
      if (names.empty())
        return diag << " takes no attributes";
      return diag << " takes " << llvm::join(names, ", ");
    }
    if (attribute.type() != known->type)
      return ctx.error() << "attribute '" << attribute.name() << "' is "
                         << attributeTypeName(attribute.type()) << ", expected "
                         << attributeTypeName(known->type);
  }
  for (const AttributeRule &r : rule.attributes)
    if (r.required && inOpset(r) && !findAttribute(node, r.name))
      return ctx.error() << "needs attribute '" << r.name << "'";
  return success();
}

} // namespace pp::onnx_frontend

//===- GraphImporter.h - The ONNX importer's shared internals ---*- C++ -*-===//
//
// Private to frontends/onnx. GraphImporter turns one ONNX graph into
// `func.func @main`: OnnxImporter.cpp imports the graph, its values and
// initializers; NodeChecks.cpp checks each node against its NodeRule;
// ConstantFolding.cpp evaluates nodes over constants at import; OnnxOps.cpp
// converts the others into nn ops.
//
//===----------------------------------------------------------------------===//

#ifndef PP_FRONTENDS_ONNX_GRAPHIMPORTER_H
#define PP_FRONTENDS_ONNX_GRAPHIMPORTER_H

#include "frontends/onnx/OnnxImporter.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Diagnostics.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringSet.h"

#include <onnx/onnx_pb.h>

#include <map>
#include <optional>
#include <vector>

namespace pp::onnx_frontend {

/// The oldest and newest default-domain ONNX opsets pp imports, and the
/// newest that libonnx's checker knows (newer models rely on NodeChecks).
constexpr int64_t kMinOpset = 13;
constexpr int64_t kMaxOpset = 21;
constexpr int64_t kMaxCheckerOpset = 17;

/// The MLIR element type of an ONNX tensor element type, or null when pp
/// does not import it (supportedElementTypes lists those it does).
mlir::Type convertElementType(int32_t dataType, mlir::Builder &builder);
/// "FLOAT, FLOAT16, ..." for messages.
llvm::StringRef supportedElementTypes();
/// "FLOAT16" for ONNX's TensorProto::FLOAT16.
std::string onnxTypeName(int32_t dataType);

/// The values of an ONNX tensor: its type and its elements as the
/// little-endian bytes of that type (one byte per bool).
struct TensorValues {
  mlir::RankedTensorType type;
  /// The tensor's raw bytes when it holds them (read in place: no copy of a
  /// weight is made), else null.
  const std::string *raw = nullptr;
  /// The elements of a tensor without raw bytes, read from its typed field.
  std::vector<char> converted;

  /// The elements' bytes; a view of the tensor's raw bytes while it holds
  /// them.
  llvm::ArrayRef<char> bytes() const {
    return raw ? llvm::ArrayRef<char>(raw->data(), raw->size())
               : llvm::ArrayRef<char>(converted);
  }
};
/// `values` as an attribute.
mlir::DenseElementsAttr toElementsAttr(const TensorValues &values);
/// The values of `tensor` (an initializer or an attribute), or an error at
/// `loc` that starts with `what` (which names the tensor) when pp cannot
/// read them.
mlir::FailureOr<TensorValues> readTensor(const onnx::TensorProto &tensor,
                                         const std::string &what,
                                         mlir::Location loc,
                                         mlir::Builder &builder);

/// The attribute `name` of `node`, or null.
const onnx::AttributeProto *findAttribute(const onnx::NodeProto &node,
                                          llvm::StringRef name);
int64_t intAttribute(const onnx::NodeProto &node, llvm::StringRef name,
                     int64_t fallback);
float floatAttribute(const onnx::NodeProto &node, llvm::StringRef name,
                     float fallback);
/// The double nearest to the shortest decimal that reads back as `value`:
/// 0.1 for the float 0.1f (not 0.10000000149...), so that a ratio or an
/// epsilon that ONNX stores as a float is the number the exporter wrote.
double shortestDecimal(float value);

/// The node being imported: what its messages name.
struct NodeContext {
  const onnx::NodeProto &node;
  /// The node's name, made unique (OnnxImporter.cpp names unnamed nodes).
  llvm::StringRef name;
  mlir::Location loc;
  int64_t opset;

  /// An error that starts by naming the node, its op and the opset.
  mlir::InFlightDiagnostic error() const;
  /// "node 'n' (Op, opset 17): `what`", to start messages with.
  std::string describe(llvm::StringRef what) const;
  /// The name of the node's input `index` (for messages).
  llvm::StringRef inputName(int index) const { return node.input(index); }
};

/// One attribute an op takes, in opsets `sinceOpset` to `untilOpset`.
struct AttributeRule {
  const char *name;
  onnx::AttributeProto::AttributeType type;
  int64_t sinceOpset = kMinOpset;
  int64_t untilOpset = kMaxOpset;
  bool required = false;
};

class GraphImporter;

/// The values a node computes, one per ONNX output.
using NodeOutputs = llvm::SmallVector<mlir::Value, 1>;

/// How one op type imports.
struct NodeRule {
  /// Builds the node's outputs from its looked-up inputs; null for ops
  /// that only fold (their inputs must be constants).
  mlir::FailureOr<NodeOutputs> (GraphImporter::*import)(const NodeContext &,
                                                        mlir::ValueRange);
  int minInputs;
  /// -1: any number.
  int maxInputs;
  int minOutputs = 1;
  /// -1: any number.
  int maxOutputs = 1;
  std::vector<AttributeRule> attributes = {};
  /// The first default-domain opset that has the op.
  int64_t sinceOpset = kMinOpset;
  /// Why an op that only folds needs constant inputs (for messages).
  const char *foldOnlyReason = nullptr;
};

/// The rule of each supported op type (OnnxOps.cpp).
const std::map<std::string, NodeRule, std::less<>> &nodeRules();

/// Checks `ctx.node`'s input and output counts and its attributes (names,
/// types, opsets, required ones) against `rule` (NodeChecks.cpp).
mlir::LogicalResult checkNode(const NodeContext &ctx, const NodeRule &rule);

/// Evaluates `ctx.node` at import when its inputs are constants (Shape only
/// needs its input's static type). Returns the outputs' values, nullopt
/// when the node does not fold, failure after an error (ConstantFolding.cpp).
mlir::FailureOr<std::optional<llvm::SmallVector<mlir::DenseElementsAttr>>>
foldNode(const NodeContext &ctx, mlir::ValueRange inputs);

/// The initializers of `parameters` (those that train) that several nodes
/// read (exporters merge initializers with equal values into one): how many
/// there are, and the one that the most nodes read, for messages
/// (SharedInitializers.cpp).
struct SharedInitializers {
  int64_t count = 0;
  std::string example;
  size_t mostReaders = 0;
};
SharedInitializers findSharedInitializers(const onnx::GraphProto &graph,
                                          const llvm::StringSet<> &parameters);

/// Gives every node that reads an initializer of `parameters` read by
/// several nodes its own copy: the first reader (in node order) keeps the
/// name, the later ones read `NAME.1`, `NAME.2`, ... (skipping names the
/// model uses), added to the initializers right after the original and to
/// `parameters`. Unties only the initializers whose elements all have the
/// same bits (an exporter's merge of fresh ones or zeros) unless `all`
/// (ImportOptions::untieSharedWeights). Returns how many initializers it
/// untied.
int64_t untieSharedInitializers(onnx::GraphProto &graph, bool all,
                                llvm::StringSet<> &parameters);

/// Whether ONNX element type `dataType` is a floating-point one.
bool isFloatDataType(int32_t dataType);
/// The bytes of each element of float type `dataType`.
size_t elementBytes(int32_t dataType);
/// The elements of `tensor` as raw little-endian bytes, in place (no copy),
/// or nullopt for data in an external file or in ONNX's 16-bit int32_data.
std::optional<llvm::StringRef> rawElements(const onnx::TensorProto &tensor);
/// `raw`, the elements of a rows x columns matrix of `size`-byte elements,
/// transposed.
std::string transposed(llvm::StringRef raw, int64_t rows, int64_t columns,
                       size_t size);
/// Inserts a Transpose node (`perm` [1, 0]) named `nodeName` from `input` to
/// `output` right before the first node that reads `output`.
void insertTranspose(onnx::GraphProto &graph, const std::string &nodeName,
                     const std::string &input, const std::string &output);

/// A weight that torch.onnx.export's optimizer stored transposed under a
/// generated name: the import trains `parameter` (its module name) in its
/// module layout, and a Transpose node `transpose:STORED` makes `stored`.
struct TransposedWeight {
  std::string parameter, stored;
};

/// Which floating-point initializers train (ParameterRule.cpp, whose
/// header comment states the rule).
struct ParameterPlan {
  /// The model carries torch.export's records of what is a parameter.
  bool exporterRecords = false;
  /// The names of the initializers that train.
  llvm::StringSet<> trained;
  /// The weights stored transposed, in initializer order.
  std::vector<TransposedWeight> transposed;
  /// Initializers that the exporter folded from a weight other than by a
  /// transpose (`stored` trains in place of `parameter`).
  std::vector<TransposedWeight> foldedWeights;
  /// Initializers of one element that the rule without records trains
  /// (learned scalars, or constants stored as initializers: said in a
  /// warning).
  std::vector<std::string> trainedScalars;
};

/// Decides which floating-point initializers of `graph` train, and turns
/// each weight stored transposed into its parameter and a Transpose node
/// (ParameterRule.cpp).
ParameterPlan planParameters(onnx::GraphProto &graph);

/// The prefix of the Transpose node that reads a TransposedWeight's
/// parameter.
constexpr llvm::StringLiteral kTransposeNodePrefix = "transpose:";

/// Parses the model in `contents` (binary protobuf, or ONNX's text syntax
/// when `path` ends in `.onnxtxt`) into `model`. Returns why it does not
/// parse, or "" when it does.
std::string parseOnnxModel(llvm::StringRef contents, llvm::StringRef path,
                           onnx::ModelProto &model);
/// A floating-point initializer (`copy`) whose elements are bitwise those of
/// an earlier one (`original`), or of its 2-D transpose (`transposed`):
/// torch.onnx.export's constant folding turns a tied LM head's transposed
/// embedding into such a second initializer, untying the weights.
struct EqualInitializer {
  std::string original, copy;
  bool transposed = false;
};
/// The initializers equal to an earlier one or to its transpose, in
/// initializer order; initializers whose elements all have the same bits
/// (fresh ones and zeros, equal by chance) are never reported.
std::vector<EqualInitializer>
findEqualInitializers(const onnx::GraphProto &graph);

/// Ties each of `equal`: the copy's initializer is removed and the original
/// takes its place, through a Transpose node (named `tie:COPY`, inserted
/// before the copy's first reader and producing the copy's name) where the
/// copy was the transpose (ImportOptions::tieEqualWeights).
void tieEqualInitializers(onnx::GraphProto &graph,
                          llvm::ArrayRef<EqualInitializer> equal);

/// The graph as the import trains it, and how it got so.
struct PreparedGraph {
  /// What trains; `trained` names the initializers after the ties below.
  ParameterPlan plan;
  /// The trained initializers equal to an earlier trained one (tied when
  /// ImportOptions::tieEqualWeights).
  std::vector<EqualInitializer> equal;
  /// How many shared initializers were untied.
  int64_t untied = 0;
};

/// Prepares `graph` as the import and `--export-onnx` see it: the
/// parameter plan (planParameters), then the equal trained initializers
/// tied (ImportOptions::tieEqualWeights), then the shared ones untied
/// (ImportOptions::untieSharedWeights) (ParameterRule.cpp).
PreparedGraph prepareGraph(onnx::GraphProto &graph,
                           const ImportOptions &options);

/// Turns one ONNX graph into `func.func @main`.
class GraphImporter {
public:
  GraphImporter(mlir::MLIRContext *context, llvm::StringRef path, int64_t opset,
                const ImportOptions &options)
      : context(context), builder(context),
        fileLoc(mlir::FileLineColLoc::get(context, path, 0, 0)),
        options(options), opset(opset) {}

  /// Imports `model`; the raw bytes of its floating-point initializers move
  /// into the module's blobs (the model keeps none of them).
  mlir::OwningOpRef<mlir::ModuleOp> import(onnx::ModelProto &model);

  // Op converters (OnnxOps.cpp), named after the ONNX op they import.
  mlir::FailureOr<NodeOutputs> importGemm(const NodeContext &ctx,
                                          mlir::ValueRange inputs);
  mlir::FailureOr<NodeOutputs> importMatMul(const NodeContext &ctx,
                                            mlir::ValueRange inputs);
  mlir::FailureOr<NodeOutputs> importCast(const NodeContext &ctx,
                                          mlir::ValueRange inputs);
  mlir::FailureOr<NodeOutputs> importCastLike(const NodeContext &ctx,
                                              mlir::ValueRange inputs);
  /// A sequence's tensors go to `sequences`; SequenceAt picks one.
  mlir::FailureOr<NodeOutputs> importSplitToSequence(const NodeContext &ctx,
                                                     mlir::ValueRange inputs);
  mlir::FailureOr<NodeOutputs> importSequenceAt(const NodeContext &ctx,
                                                mlir::ValueRange inputs);
  mlir::FailureOr<NodeOutputs> importGather(const NodeContext &ctx,
                                            mlir::ValueRange inputs);
  mlir::FailureOr<NodeOutputs> importConstant(const NodeContext &ctx,
                                              mlir::ValueRange inputs);
  mlir::FailureOr<NodeOutputs> importFlatten(const NodeContext &ctx,
                                             mlir::ValueRange inputs);
  template <typename OpTy>
  mlir::FailureOr<NodeOutputs> importBinary(const NodeContext &ctx,
                                            mlir::ValueRange inputs);
  template <typename OpTy>
  mlir::FailureOr<NodeOutputs> importVariadic(const NodeContext &ctx,
                                              mlir::ValueRange inputs);
  template <typename OpTy>
  mlir::FailureOr<NodeOutputs> importUnary(const NodeContext &ctx,
                                           mlir::ValueRange inputs);
  mlir::FailureOr<NodeOutputs> importPow(const NodeContext &ctx,
                                         mlir::ValueRange inputs);
  mlir::FailureOr<NodeOutputs> importReciprocal(const NodeContext &ctx,
                                                mlir::ValueRange inputs);
  mlir::FailureOr<NodeOutputs> importGelu(const NodeContext &ctx,
                                          mlir::ValueRange inputs);
  mlir::FailureOr<NodeOutputs> importWhere(const NodeContext &ctx,
                                           mlir::ValueRange inputs);
  mlir::FailureOr<NodeOutputs> importIdentity(const NodeContext &ctx,
                                              mlir::ValueRange inputs);
  template <typename OpTy>
  mlir::FailureOr<NodeOutputs> importSoftmax(const NodeContext &ctx,
                                             mlir::ValueRange inputs);
  template <typename OpTy>
  mlir::FailureOr<NodeOutputs> importReduce(const NodeContext &ctx,
                                            mlir::ValueRange inputs);
  mlir::FailureOr<NodeOutputs>
  importLayerNormalization(const NodeContext &ctx, mlir::ValueRange inputs);
  mlir::FailureOr<NodeOutputs> importSplit(const NodeContext &ctx,
                                           mlir::ValueRange inputs);
  mlir::FailureOr<NodeOutputs> importConcat(const NodeContext &ctx,
                                            mlir::ValueRange inputs);
  mlir::FailureOr<NodeOutputs> importTranspose(const NodeContext &ctx,
                                               mlir::ValueRange inputs);
  mlir::FailureOr<NodeOutputs> importReshape(const NodeContext &ctx,
                                             mlir::ValueRange inputs);
  mlir::FailureOr<NodeOutputs> importUnsqueeze(const NodeContext &ctx,
                                               mlir::ValueRange inputs);
  mlir::FailureOr<NodeOutputs> importSqueeze(const NodeContext &ctx,
                                             mlir::ValueRange inputs);
  mlir::FailureOr<NodeOutputs> importSlice(const NodeContext &ctx,
                                           mlir::ValueRange inputs);
  mlir::FailureOr<NodeOutputs> importExpand(const NodeContext &ctx,
                                            mlir::ValueRange inputs);
  mlir::FailureOr<NodeOutputs> importTrilu(const NodeContext &ctx,
                                           mlir::ValueRange inputs);
  mlir::FailureOr<NodeOutputs> importDropout(const NodeContext &ctx,
                                             mlir::ValueRange inputs);

private:
  /// The element type of a tensor called `what` (for messages).
  mlir::FailureOr<mlir::Type>
  elementTypeOf(int32_t dataType, llvm::StringRef what, mlir::Location loc);
  /// The type of graph input `input`, each symbolic dimension sized as
  /// ImportOptions says.
  mlir::FailureOr<mlir::RankedTensorType>
  convertInputType(const onnx::ValueInfoProto &input);
  /// Checks the declared type of graph output `output` against `value`, the
  /// value pp computes for it, where the declaration gives a size: static,
  /// or named by `--dim`.
  mlir::LogicalResult checkOutputType(const onnx::ValueInfoProto &output,
                                      mlir::Value value);
  /// Checks that every name of ImportOptions::dimSizes is a symbolic
  /// dimension of a graph input or output.
  mlir::LogicalResult checkDimNames(const onnx::GraphProto &graph);
  /// Refuses names of tensors and nodes that are not valid UTF-8: the
  /// package's manifest (JSON) carries them.
  mlir::LogicalResult checkUtf8Names(const onnx::GraphProto &graph);
  mlir::LogicalResult importNode(const onnx::NodeProto &node,
                                 llvm::StringRef nodeName);
  mlir::FailureOr<mlir::Value> lookup(const NodeContext &ctx, int index);
  /// The node's inputs (a trailing optional input given as "" is left out;
  /// one in the middle is a null Value). The first `required` must be
  /// given.
  mlir::FailureOr<llvm::SmallVector<mlir::Value>>
  lookupInputs(const NodeContext &ctx, int required);

  /// The integers of input `index`, which must fold to a constant at
  /// import (pp compiles static shapes); `what` says what it is.
  mlir::FailureOr<llvm::SmallVector<int64_t>>
  constantInts(const NodeContext &ctx, mlir::ValueRange inputs, int index,
               llvm::StringRef what);
  /// The error of input `index` that does not fold to a constant.
  mlir::InFlightDiagnostic notConstant(const NodeContext &ctx, int index,
                                       llvm::StringRef what);

  /// Creates an OpTy after checking that its result types infer, so that
  /// bad models never abort; a failure is an error at the node that says
  /// what the inference found.
  template <typename OpTy>
  mlir::FailureOr<mlir::Operation *>
  createCheckedOp(const NodeContext &ctx, mlir::ValueRange operands,
                  typename OpTy::Properties properties = {});
  /// createCheckedOp for an op with one result; returns that result.
  template <typename OpTy>
  mlir::FailureOr<mlir::Value>
  createChecked(const NodeContext &ctx, mlir::ValueRange operands,
                typename OpTy::Properties properties = {});
  /// `input` reshaped to `shape` (itself when it has that shape).
  mlir::Value reshaped(mlir::Location loc, mlir::Value input,
                       llvm::ArrayRef<int64_t> shape);

  /// A rank-0 constant of `elementType` (a float type) holding `value`.
  mlir::Value scalarConstant(mlir::Location loc, double value,
                             mlir::Type elementType);

  mlir::MLIRContext *context;
  mlir::OpBuilder builder;
  mlir::Location fileLoc;
  const ImportOptions &options;
  int64_t opset;
  llvm::StringMap<mlir::Value> values;
  /// The tensors of each sequence (SplitToSequence's output), by name.
  llvm::StringMap<llvm::SmallVector<mlir::Value>> sequences;
  /// The names that some node reads or the graph outputs.
  llvm::StringSet<> consumedNames;
  /// True when `name` is a value that some node or the graph output reads:
  /// optional outputs (LayerNormalization's statistics) are computed only
  /// then.
  bool consumed(llvm::StringRef name) const {
    return !name.empty() && consumedNames.contains(name);
  }
  /// Outputs that pp does not compute (a training Dropout's mask),
  /// with the reason, for the node that would read one.
  llvm::StringMap<std::string> unavailable;
  mlir::StringAttr currentNode;
};

} // namespace pp::onnx_frontend

#endif // PP_FRONTENDS_ONNX_GRAPHIMPORTER_H

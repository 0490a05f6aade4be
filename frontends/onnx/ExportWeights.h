//===- ExportWeights.h - trained parameters back into ONNX ------*- C++ -*-===//
//
// `pp-run MODEL.onnx ... --export-onnx OUT.onnx` writes the model's ONNX
// graph with its initializers replaced by the trained parameters (those of
// `--save-params`, by name). The import named each floating-point
// initializer's parameter after it, and gave later readers of a shared one
// copies `NAME.1`, `NAME.2`, ... (SharedInitializers.cpp): the export
// unties the graph the same way, so that every copy, trained apart, gets an
// initializer of its own and exactly the nodes that read it. A parameter
// that stays tied (one parameter, several readers) is written once;
// initializers that are no parameter (integer constants, values folded away
// at import) keep their values. A model that keeps tensors in external data
// files (ExternalData.h) is exported the same way: the initializers' bytes,
// trained or not, go to one external data file `OUT.onnx.data` beside the
// export, which names it (OUT.onnx and OUT.onnx.data move together); the
// model's own files are left as they are.
//
//===----------------------------------------------------------------------===//

#ifndef PP_FRONTENDS_ONNX_EXPORTWEIGHTS_H
#define PP_FRONTENDS_ONNX_EXPORTWEIGHTS_H

#include "runtime/checkpoints/ParameterFile.h"

#include <cstdint>
#include <map>
#include <string>

namespace pp::onnx_frontend {

/// Writes the ONNX model at `modelPath` (`.onnx` or `.onnxtxt`), tied and
/// untied as its import with `tieEqualWeights` and `untieSharedWeights`
/// did (a re-tied copy is gone, read through the original), to
/// `outputPath` as a
/// binary ONNX model whose floating-point initializers hold `parameters`
/// (f32, little-endian raw data). The file is replaced atomically.
/// Throws std::runtime_error, before writing anything, when the model does
/// not read, a parameter is no f32 initializer of it or has another shape
/// (the parameters come from another model), or writing fails. Returns how
/// many initializers it replaced.
int64_t exportTrainedWeights(
    const std::string &modelPath, bool untieSharedWeights,
    bool tieEqualWeights,
    const std::map<std::string, runtime::ParameterValues> &parameters,
    const std::string &outputPath);

} // namespace pp::onnx_frontend

#endif // PP_FRONTENDS_ONNX_EXPORTWEIGHTS_H

//===- Passes.td - code generation passes ------------------*- tablegen -*-===//
//
// Lower outlined stage functions to calls of the runtime's C ABI and write
// them out as a pipeline package.
//
//===----------------------------------------------------------------------===//

#ifndef PP_PASSES_CODEGEN_PASSES_TD
#define PP_PASSES_CODEGEN_PASSES_TD

include "mlir/Pass/PassBase.td"

def HoistParameterCasts : Pass<"pp-hoist-parameter-casts", "mlir::ModuleOp"> {
  let summary = "stage functions take each weight's compute-type copy as an argument";
  let description = [{
    In every stage function (`pp.stage`), replaces the `nn.cast`s of a
    parameter (frozen, constant) argument, the f32 master copy that
    `pp-apply-precision` casts to the compute type in each node, by one new
    argument per target type: `pp.name` the master's, `pp.role =
    "compute_copy"`, inserted right after the master. The runtime converts
    each master once per step (per gather at ZeRO-3) and passes the copy to
    every call of every function that takes it, where the stage functions
    would convert it again in each microbatch's forward and backward
    (docs/precision.md). The conversion is the same kernel, so the bits do
    not change; the gradient's cast back to f32 stays in the IR. The master
    argument stays, used or not, so that the package still lists the
    parameter with its stage. `pp-compile` runs it after `pp-derive-eval`.
  }];
  let dependentDialects = ["::pp::nn::NNDialect"];
}

def FuseElementwise : Pass<"pp-fuse-elementwise", "mlir::ModuleOp"> {
  let summary = "groups elementwise ops of stage functions into nn.fusion";
  let description = [{
    In every stage function (`pp.stage`), groups maximal connected sets of
    elementwise ops (trait `NN_Elementwise`) whose results have one static
    shape and whose kernels compute their element types into one
    `nn.fusion`. Values the group's ops take from outside become its inputs
    (broadcasting ones included); values used outside the group become its
    results. A group is only grown while the fused op can stand where its
    last op stood: no op outside the group may use one of its values before
    that point. `pp-lower-to-runtime` turns each fusion into one generated
    loop that calls the ops' per-element formulas, so the program computes
    the same bits with fewer passes over memory. `pp-compile` runs it last
    (`fuse=false` leaves it out): stage membership and the backward are
    final then, and the eval functions are fused too.
  }];
  let dependentDialects = ["::pp::nn::NNDialect"];
}

def LowerToRuntime : Pass<"pp-lower-to-runtime", "mlir::ModuleOp"> {
  let summary = "lowers stage functions to EmitC calls of the runtime ABI";
  let description = [{
    Rewrites every `@stage<N>_<phase>` function into a function of one
    `pp_frame*` argument: arguments come from `pp_frame_arg`, results go to
    `pp_frame_result`, `pp.send`/`pp.recv` become `pp_frame_send` and
    `pp_frame_recv`, and every nn op becomes a call of the target's kernel
    (`pp_cpu_*` or `pp_cuda_*`, runtime/pp_kernels.h). Each tensor is
    released, and each result handed over, after its last use; a gradient
    result that nothing else reads, of an f32 `nn.gather_grad` or an
    `nn.matmul` of 2-D f32 matrices, is added into the step's sum instead
    (`pp_frame_gradient_sum`, `pp_<target>_gather_grad_add` or
    `_matmul_add`, `pp_frame_gradient_added`). An `nn.cross_entropy_grad`
    whose logits are a value saved for the function that nothing after it
    reads takes them from the caller (`pp_frame_take_arg`) and writes the
    gradient over them (`pp_<target>_cross_entropy_grad_in_place`), and a
    reshape of a tensor so taken, read no more as it was, renames it in
    place (`pp_frame_reshape_owned`): neither allocates. Each
    function gets its memory plan, `pp.memory_plan = {arena_bytes,
    allocations = array<i64: bytes, offset, ...>}`: per tensor it allocates,
    in call order, an offset in one arena by first fit over the tensors'
    lifetimes (-1 for a result, which outlives the call); on the CPU a
    reshape whose operand is released before the next allocation takes the
    operand's offset (its kernel then copies nothing). The result is EmitC that
    `mlir::emitc::translateToCpp` prints as C++ (or CUDA C++).
  }];
  let options = [
    Option<"target", "target", "std::string", "\"cpu\"",
           "kernels to call: cpu or cuda">,
  ];
  let dependentDialects = ["::mlir::emitc::EmitCDialect"];
}

def EmitPackage : Pass<"pp-emit-package", "mlir::ModuleOp"> {
  let summary = "writes a pipeline package for pp-run";
  let description = [{
    Writes `dir`: `stages.cpp` and `stages.cu` (the stage functions lowered
    for the CPU and CUDA kernels), `manifest.json` (stages, parameters with
    shapes, inputs, labels, boundary tensors with names and shapes, the
    loss), `parameters.bin` (initial parameter values) and `libstages.so`,
    compiled with the host C++ compiler. The CUDA library is compiled when
    a run first needs it (pp-run --device cuda keeps it in its cache), so
    that CPU work never runs nvcc; `compile-cuda=true` compiles it into the
    package at once as `libstages_cuda.so` (for a package taken to a GPU
    machine). `pp-opt --pp-emit=DIR` runs it after the pipeline. The module
    itself is left unchanged.
  }];
  let options = [
    Option<"dir", "dir", "std::string", "", "the package directory">,
    Option<"compile", "compile", "bool", "true",
           "compile the CPU source into libstages.so">,
    Option<"compileCuda", "compile-cuda", "bool", "false",
           "also compile the CUDA source into libstages_cuda.so now, with "
           "nvcc (else a CUDA run compiles it when it first needs it)">,
  ];
  let dependentDialects = ["::mlir::emitc::EmitCDialect"];
}

#endif // PP_PASSES_CODEGEN_PASSES_TD

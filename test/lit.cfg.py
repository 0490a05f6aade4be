# -*- Python -*-
# lit configuration of the pp FileCheck tests.

import os

import lit.formats
from lit.llvm import llvm_config

config.name = "pp"
config.test_format = lit.formats.ShTest(not llvm_config.use_lit_shell)
config.suffixes = [".mlir", ".test"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.pp_obj_root, "test")
config.excludes = ["Device", "Inputs", "Unit", "Reference", "models",
                   "corpus", "regressions",
                   "CMakeLists.txt", "lit.cfg.py",
                   "lit.site.cfg.py"]

# pp-run partitions with the cost model's constant rates, so that a test's
# stages are the same on every machine (a test asks for measured rates by
# --cost-rates measured).
config.environment["PP_COST_RATES"] = "default"

# Every FileCheck variable is local to its CHECK-LABEL block.
config.environment["FILECHECK_OPTS"] = "-enable-var-scope"

llvm_config.use_default_substitutions()
llvm_config.with_environment("PATH", config.llvm_tools_dir, append_path=True)
llvm_config.add_tool_substitutions(
    ["pp-opt", "pp-run", "pp-rank", "pp-data", "pp-gemm-rate", "pp-torch-reference",
     "pp-fuzz-onnx", "pp-fuzz-onnx-text", "pp-fuzz-package",
     "pp-fuzz-parameter-file", "pp-fuzz-token-dataset", "pp-fuzz-torchscript",
     "pp-fuzz-safetensors", "pp-fuzz-weights-index", "pp-fuzz-checkpoint",
     "pp-fuzz-schedule-file"],
    [config.pp_tools_dir])
config.substitutions.append(("%pp_src_root", config.pp_src_root))
config.substitutions.append(("%pp_obj_root", config.pp_obj_root))
if config.pp_have_cuda:
    config.available_features.add("cuda")
# Tests that make device nodes (mknod) or act as another user (setpriv) to
# attack a run: only root can.
if os.geteuid() == 0:
    config.available_features.add("root")

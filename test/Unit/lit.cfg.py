# -*- Python -*-
# lit configuration of the pp GoogleTest binaries: every executable under
# build/test/Unit whose name ends in "Tests" is run, one lit test per case.

import os

import lit.formats

config.name = "pp-unit"
config.test_format = lit.formats.GoogleTest(".", "Tests")
config.test_source_root = os.path.join(config.pp_obj_root, "test", "Unit")
config.test_exec_root = config.test_source_root

#!/usr/bin/python3
"""Prints the largest absolute difference between two ONNX tensor files
(pp-run --infer's output_0.pb and a reference's logits) and whether it is
within TOLERANCE: `max |difference| 8.3e-07 within 1e-04`, or `... over`.

    logits_difference.py GOT.pb WANT.pb TOLERANCE
"""

import sys

import numpy as np
import onnx
from onnx import numpy_helper


def main():
    got, want = (numpy_helper.to_array(onnx.load_tensor(path)).astype(
        np.float64) for path in sys.argv[1:3])
    tolerance = float(sys.argv[3])
    if got.shape != want.shape:
        print("shapes differ: %s and %s" % (list(got.shape),
                                            list(want.shape)))
        return 1
    diff = float(np.max(np.abs(got - want)))
    print("max |difference| %.2g %s %.0e" % (
        diff, "within" if diff <= tolerance else "over", tolerance))
    return 0


if __name__ == "__main__":
    sys.exit(main())

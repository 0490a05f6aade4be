#!/usr/bin/python3
"""Runs ONNX's backend node tests (Debian's libonnx-testdata) through pp.

Every test case is a directory holding model.onnx (usually one node) and
test_data_set_*/{input,output}_N.pb. A case belongs to the op it tests: the
longest ONNX op type whose lowercase name starts the case's name
(test_logsoftmax_axis_0 tests LogSoftmax, test_layer_normalization_2d
LayerNormalization). Cases of the ops pp claims (`pp-opt --list-onnx-ops`)
run forward through `pp-run MODEL --infer`; each ends as

  passed   every output within ONNX's backend tolerance (rtol 1e-3,
           atol 1e-7) of the expected one, with the right dtype and shape;
  refused  pp-run could not compile the model (something pp does not
           support: a dtype, an attribute value, another op), the
           diagnostic's first line being the reason, or an input file holds
           an element type pp-run does not read (a dtype refusal too);
  failed   anything else: wrong numbers, a crash, a timeout, a run-time
           error, missing outputs.

The report is Markdown: a table of counts per op, then every refusal reason
with the cases that hit it, then every failure. `--check` exits 1 when any
case failed. `--docs` writes docs/onnx-conformance.md (the report under its
header); regenerate it, after building, with

  /usr/bin/python3 test/Frontends/ONNX/onnx_backend_tests.py --docs \
      --pp-opt build/bin/pp-opt --pp-run build/bin/pp-run \
      --cache-dir /tmp/pp-conformance --report docs/onnx-conformance.md
"""

import argparse
import collections
import concurrent.futures
import os
import re
import subprocess
import sys
import tempfile

import numpy as np
import onnx
from onnx import numpy_helper

RTOL = 1e-3
ATOL = 1e-7


def op_under_test(case, ops):
    """The op of `ops` whose lowercase name longest prefixes the case name."""
    name = case[len("test_"):].replace("_", "")
    matches = [op for op in ops if name.startswith(op.lower())]
    return max(matches, key=len) if matches else None


def read_tensor(path):
    tensor = onnx.TensorProto()
    with open(path, "rb") as f:
        tensor.ParseFromString(f.read())
    return numpy_helper.to_array(tensor)


def data_files(data_set, prefix):
    files = [f for f in os.listdir(data_set) if re.fullmatch(prefix + r"_\d+\.pb", f)]
    return [os.path.join(data_set, f)
            for f in sorted(files, key=lambda f: int(re.findall(r"\d+", f)[0]))]


DOCS_HEADER = """# ONNX backend node tests

pp runs ONNX's backend node tests (Debian's `libonnx-testdata`, the
`data/node` cases of onnx 1.12) for every op it imports (`pp-opt
--list-onnx-ops`), forward, through `pp-run MODEL --infer`: a case passes
when every output matches within ONNX's tolerance (rtol 1e-3, atol 1e-7);
it is refused, with the reason below, when pp cannot compile the model or
pp-run does not read an input file's element type; any other outcome is a
failure, and test/Frontends/ONNX/backend-node-tests.test allows none. This
file is generated: regenerate it with the command in
test/Frontends/ONNX/onnx_backend_tests.py (docs/development.md).

"""


def reason_of(stderr, case_dir):
    """Why pp-run refused the case (the diagnostic after its "cannot
    compile" line, without locations and paths, or the element type of an
    input file it does not read), or None when it did not refuse."""
    unread = re.search(r"cannot read the tensor file .*: its element type (\w+) "
                       r"is not one pp-run reads \(([^)]*)\)", stderr)
    if unread:
        return (f"an input file holds {unread.group(1)} tensors; pp-run reads "
                f"{unread.group(2)}")
    lines = stderr.splitlines()
    for index, line in enumerate(lines):
        if "cannot compile" in line and index + 1 < len(lines):
            reason = lines[index + 1].replace(case_dir + "/", "")
            # loc("model.onnx":0:0): or loc("Node"("model.onnx":0:0)):
            reason = re.sub(r'^loc\((?:"[^"]*"|\([^()]*\)|[^()"])*\): ', "", reason)
            return re.sub(r"^.*?error: ", "", reason).strip()
    return None


def bfloat16_values(bits):
    """The float32 values of bfloat16 `bits` (a uint16 array)."""
    return (bits.astype(np.uint32) << 16).view(np.float32)


def compare(expected, actual):
    """None when `actual` matches `expected`, else what differs."""
    if expected.dtype == np.uint16 and actual.dtype == np.float32:
        # ONNX's test data stores a bfloat16 output as its bits in a UINT16
        # tensor, rounded by truncation (onnx 1.12); pp rounds to nearest
        # even, as PyTorch and later onnx do: within one bfloat16 ulp.
        reference = bfloat16_values(expected)
        if actual.shape != reference.shape:
            return f"shape {list(actual.shape)}, expected {list(reference.shape)}"
        if not np.allclose(actual, reference, rtol=2.0**-7, atol=0, equal_nan=True):
            return "bfloat16 values differ by more than one ulp"
        return None
    if actual.shape != expected.shape:
        return f"shape {list(actual.shape)}, expected {list(expected.shape)}"
    if actual.dtype != expected.dtype:
        return f"dtype {actual.dtype}, expected {expected.dtype}"
    if expected.dtype.kind in "biu":
        if not np.array_equal(actual, expected):
            return "integer values differ"
        return None
    if not np.allclose(actual, expected, rtol=RTOL, atol=ATOL, equal_nan=True):
        diff = np.abs(actual.astype(np.float64) - expected.astype(np.float64))
        return f"max abs error {np.nanmax(diff):.3g}"
    return None


def run_case(case_dir, pp_run, cache_dir, timeout):
    """Returns (outcome, detail) for one case."""
    data_sets = sorted(d for d in os.listdir(case_dir) if d.startswith("test_data_set_"))
    if not data_sets:
        return "failed", "no test_data_set"
    with tempfile.TemporaryDirectory() as work:
        for data_set in data_sets:
            data_dir = os.path.join(case_dir, data_set)
            inputs = data_files(data_dir, "input")
            outputs_dir = os.path.join(work, data_set)
            command = [pp_run, os.path.join(case_dir, "model.onnx"), "--infer",
                       "--outputs-dir", outputs_dir, "--cache-dir", cache_dir]
            if inputs:
                command += ["--inputs", ",".join(inputs)]
            try:
                run = subprocess.run(command, capture_output=True, text=True,
                                     timeout=timeout)
            except subprocess.TimeoutExpired:
                return "failed", f"timed out after {timeout} s"
            if run.returncode != 0:
                # A case pp does not compile is refused; a signal, or an error
                # while running, is a failure.
                reason = reason_of(run.stderr, case_dir)
                if run.returncode == 1 and reason:
                    return "refused", reason
                tail = run.stderr.strip().splitlines()[-1:] or [""]
                return "failed", f"exit {run.returncode}: {tail[0]}"
            for index, expected_path in enumerate(data_files(data_dir, "output")):
                actual_path = os.path.join(outputs_dir, f"output_{index}.pb")
                if not os.path.exists(actual_path):
                    return "failed", f"no output_{index}.pb"
                difference = compare(read_tensor(expected_path), read_tensor(actual_path))
                if difference:
                    return "failed", f"{data_set} output {index}: {difference}"
    return "passed", None


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", default="/usr/share/libonnx-testdata/data/node")
    parser.add_argument("--pp-opt", default="pp-opt")
    parser.add_argument("--pp-run", default="pp-run")
    parser.add_argument("--cache-dir", required=True)
    parser.add_argument("--report", required=True)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--timeout", type=int, default=120)
    parser.add_argument("--filter", default="", help="regex on case names")
    parser.add_argument("--check", action="store_true",
                        help="exit 1 when a case failed")
    parser.add_argument("--docs", action="store_true",
                        help="write the report under the header of "
                        "docs/onnx-conformance.md")
    args = parser.parse_args()

    if not os.path.isdir(args.data):
        sys.exit(f"error: no ONNX backend node tests at {args.data}; "
                 "install Debian's libonnx-testdata (scripts/setup.sh)")
    claimed = subprocess.run([args.pp_opt, "--list-onnx-ops"], check=True,
                             capture_output=True, text=True).stdout.split()
    all_ops = {schema.name for schema in onnx.defs.get_all_schemas()}
    cases = collections.defaultdict(list)
    for case in sorted(os.listdir(args.data)):
        op = op_under_test(case, all_ops)
        if op in claimed and re.search(args.filter, case):
            cases[op].append(case)

    results = {}
    with concurrent.futures.ThreadPoolExecutor(args.jobs) as pool:
        futures = {pool.submit(run_case, os.path.join(args.data, case),
                               args.pp_run, args.cache_dir, args.timeout): case
                   for op_cases in cases.values() for case in op_cases}
        for future in concurrent.futures.as_completed(futures):
            results[futures[future]] = future.result()

    counts = {op: collections.Counter(results[c][0] for c in op_cases)
              for op, op_cases in cases.items()}
    reasons = collections.defaultdict(list)
    failures = []
    for case, (outcome, detail) in sorted(results.items()):
        if outcome == "refused":
            reasons[detail].append(case)
        elif outcome == "failed":
            failures.append((case, detail))

    total = collections.Counter(outcome for outcome, _ in results.values())
    lines = ["| op | cases | passed | refused | failed |", "|---|---|---|---|---|"]
    for op in sorted(counts):
        c = counts[op]
        lines.append(f"| {op} | {sum(c.values())} | {c['passed']} | "
                     f"{c['refused']} | {c['failed']} |")
    lines.append(f"| **all** | {sum(total.values())} | {total['passed']} | "
                 f"{total['refused']} | {total['failed']} |")
    lines += ["", "Refused, by reason:", ""]
    for reason, reason_cases in sorted(reasons.items()):
        lines.append(f"- {reason}: {', '.join(reason_cases)}")
    if not reasons:
        lines.append("- none")
    lines += ["", "Failed:", ""]
    lines += [f"- {case}: {detail}" for case, detail in failures] or ["- none"]
    with open(args.report, "w") as f:
        f.write((DOCS_HEADER if args.docs else "") + "\n".join(lines) + "\n")
    print(f"{len(results)} cases of {len(counts)} ops: {total['passed']} passed, "
          f"{total['refused']} refused, {total['failed']} failed")
    if args.check and failures:
        sys.exit(1)


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""The engine's greedy continuation against the float64 reference (issue 34): the engine generates
--steps ids; the float64 forward then reads the prompt and those ids in one pass, and at every step
its argmax must be the engine's id wherever its top-2 margin exceeds --margin. Teacher-forcing the
engine's own ids is the same test as a float64 greedy run while they agree, and it needs one pass.

  greedy_vs_f64.py BUILD/bin/deltafin MODEL_DIR --ids 1,2,3 [--steps 32] [--margin 1e-6] [--device cpu|cuda]

Prints one line and exits 1 when a step with a clear margin differs. Needs numpy.
"""
import argparse
import json
import os
import struct
import subprocess
import sys
import tempfile

import numpy as np


def read_tensor(path, name):
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(n))
        t = header[name]
        dt = {"F64": np.float64, "F32": np.float32}[t["dtype"]]
        a, b = t["data_offsets"]
        f.seek(8 + n + a)
        return np.frombuffer(f.read(b - a), dtype=dt).reshape(t["shape"])


def main():
    p = argparse.ArgumentParser()
    p.add_argument("deltafin")
    p.add_argument("model")
    p.add_argument("--ids", required=True)
    p.add_argument("--steps", type=int, default=32)
    p.add_argument("--margin", type=float, default=1e-6)
    p.add_argument("--device", default="cpu")
    p.add_argument("--threads", default="2")
    a = p.parse_args()
    prompt = [int(x) for x in a.ids.split(",")]
    gen = json.loads(subprocess.check_output(
        [a.deltafin, "generate-ids", "--model-root", a.model, "--ids", a.ids, "--max-new", str(a.steps),
         "--threads", a.threads, "--device", a.device], stderr=subprocess.DEVNULL))
    seq = prompt + gen[:-1]
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "logits.safetensors")
        subprocess.check_output(
            [a.deltafin, "logits", "--model-root", a.model, "--ids", ",".join(map(str, seq)), "--reference",
             "--out", out, "--threads", a.threads], stderr=subprocess.DEVNULL)
        ref = read_tensor(out, "reference_logits")
    clear = equal = bad = 0
    smallest = float("inf")
    for i, tok in enumerate(gen):
        row = ref[len(prompt) - 1 + i]
        top2 = np.partition(row, -2)[-2:]
        margin = float(top2[1] - top2[0])
        smallest = min(smallest, margin)
        same = int(np.argmax(row)) == tok
        equal += same
        if margin > a.margin:
            clear += 1
            bad += not same
    print(f"{os.path.basename(a.model.rstrip('/'))} ({a.device}): {equal} of {len(gen)} greedy ids equal to float64's "
          f"argmax; {clear} steps with a top-2 margin above {a.margin:g}, {bad} of them differ; smallest margin "
          f"{smallest:.3g}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())

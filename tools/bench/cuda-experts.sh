#!/bin/sh
# On the GPU machine: every kernel against its CPU reference, then the kernel table
# (D2D copy, expert MLP per call and kernel alone at T = 1, 2, 4, 8, read-only floor, BF16 GEMV).
set -eu
BIN=${BIN:-build/cu/bin}
"$BIN/deltafin-cuda-check"
"$BIN/deltafin-cuda-bench" --json cuda-bench.json

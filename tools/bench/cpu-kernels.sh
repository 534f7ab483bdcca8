#!/bin/sh
# Every CPU kernel version this machine has, at K3's expert and spine shapes, T = 1, 2, 4, 8.
set -eu
BIN=${BIN:-build/cpu/bin}
"$BIN/deltafin-cpu-bench" --reps "${REPS:-5}" --json cpu-bench.json

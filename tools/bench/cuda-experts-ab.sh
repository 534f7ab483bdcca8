#!/bin/sh
# On the GPU machine: A/B of two expert kernel versions (e.g. v212 v134), one version per process,
# the processes alternating ROUNDS times; % of D2D per process in cuda-bench-<version>-<round>.json.
set -eu
BIN=${BIN:-build/cu/bin}
A=$1 B=$2 ROUNDS=${ROUNDS:-3} ROWS=${ROWS:-1,2,4,8}
"$BIN/deltafin-cuda-check" > /dev/null
i=1
while [ "$i" -le "$ROUNDS" ]; do
  for v in "$A" "$B"; do
    "$BIN/deltafin-cuda-bench" --experts-only --variant "$v " --rows "$ROWS" --json "cuda-bench-$v-$i.json"
  done
  i=$((i + 1))
done

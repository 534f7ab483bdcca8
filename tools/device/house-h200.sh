#!/bin/sh
# On the H200, in one command (issue 37, "the house": the kernels moved, the product compiling only
# the expert versions it chooses): the 'after' figures to set beside the 'before' ones of
# docs/PERFORMANCE.md ("The expert kernel", 2026-12-04).
#   1. deltafin-cuda-check: every GPU op against its CPU reference, one table (op, shape, max abs /
#      rel error, PASS/FAIL), batch invariance and version-vs-version bits, K3-shape experts included.
#   2. deltafin-cuda-k3 check k3-tiny: the K3 forward on the GPU against the goldens (ids and logits),
#      transactions, GPU greedy == CPU greedy.
#   3. deltafin-cuda-bench at K3's shapes, kernel alone and per call, % of D2D at T = 1, 2, 4, 8: the
#      versions the H200 chooses (v212 for these calls, v194 and v134 beside it), one version per
#      process, alternating ROUNDS times, as tools/bench/cuda-experts-ab.sh.
# The binaries come from tools/device/pack-cuda-tools.sh (carry build/carry). Output under $OUT:
# check-table.txt, k3-check.txt, gpu.txt and cuda-bench-<version>-<round>.json (+ .txt). About 5-6
# minutes: the check ~2 min, k3-tiny ~20 s, each bench process ~25 s.
set -eu
CARRY=${CARRY:-build/carry}
OUT=${OUT:-/tmp/house-out}
ROUNDS=${ROUNDS:-2}
VERSIONS=${VERSIONS:-"v212 v194 v134"}
SEED=${SEED:-37}
TOOLS=$CARRY
if [ ! -d "$CARRY/bin" ] && [ -f "$CARRY/cuda-tools.tar.xz" ]; then  # packed as one archive
  TOOLS=${TOOLS_DIR:-/tmp/cuda-tools}
  mkdir -p "$TOOLS"
  python3 -c 'import sys, tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' "$CARRY/cuda-tools.tar.xz" "$TOOLS"
fi
BIN="$TOOLS/bin"
export LD_LIBRARY_PATH="$TOOLS/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
mkdir -p "$OUT"
nvidia-smi --query-gpu=name,serial,memory.total,clocks.sm,clocks.mem --format=csv > "$OUT/gpu.txt" 2>&1 || true
status=0
"$BIN/deltafin-cuda-check" --seed "$SEED" > "$OUT/check-table.txt" 2>&1 || status=1
grep -c ' FAIL ' "$OUT/check-table.txt" | sed 's/^/failed rows: /' || true
tail -1 "$OUT/check-table.txt"
"$BIN/deltafin-cuda-k3" check tests/fixtures/k3-tiny "$SEED" > "$OUT/k3-check.txt" 2>&1 || status=1
tail -1 "$OUT/k3-check.txt"
i=1
while [ "$i" -le "$ROUNDS" ]; do
  for v in $VERSIONS; do
    "$BIN/deltafin-cuda-bench" --experts-only --variant "$v " --rows 1,2,4,8 \
      --json "$OUT/cuda-bench-$v-$i.json" > "$OUT/cuda-bench-$v-$i.txt" 2>&1 || status=1
    grep -i "d2d\|T=1 \|kernel" "$OUT/cuda-bench-$v-$i.txt" | head -12 || true
  done
  i=$((i + 1))
done
exit $status

#!/bin/sh
# On the H200, in one command (issue 32, with issue 33's GPU overlap): the forward split between the
# GPU and the CPU, then the placement measurement.
#   1. deltafin-cuda-k3 split: k3-tiny greedy ids at every split point (GPU | CPU, GPU | streamed to
#      the GPU, GPU | CPU decode with GPU prefill, lm_head on either side) and under planned budgets,
#      against the goldens, the whole-GPU and the CPU forwards; the budget errors.
#   2. a real-dimension slice of K3 (12 layers: 9 KDA + 3 MLA, 16 experts per MoE layer, all active,
#      so each layer reads its share of the real model's 16 experts per token), written once to $SLICE.
#   3. deltafin-cuda-k3 hybrid: for each real machine (GPU GB:RAM GB) the real K3's plan gives the
#      shares of the spine and experts in VRAM, RAM and on disk; the slice runs under budgets holding
#      the same shares (over the slice's own smallest working sets), predicted vs measured decode and
#      prefill s/token, ids compared across every arm and the whole-slice GPU and CPU references;
#      each row's decode is re-predicted with the CPU and disk rates probed around its runs.
# DELTAFIN_SHARED_SPINE=1 in the environment runs the rows with RAM units held once (owned, pinned in
# place, the GPU copying from them) instead of mapped plus a pinned copy.
# MACHINES lists the rows (GPU GB:RAM GB, 0 for no GPU); a word no-references among them skips the
# whole-slice GPU and CPU references.
# The binaries come from tools/device/pack-hybrid.sh (carry build/carry). Output under $OUT:
# split-checks.txt and hybrid-table.md (written row by row, so a run cut short keeps its rows), and
# hybrid-stderr.txt: progress, errors and, with DELTAFIN_CUDA_TIMELINE=prefill in the environment,
# each prompt pass's timeline (docs/CUDA.md "Where a pass in parts waits").
set -eu
CARRY=${CARRY:-build/carry}
OUT=${OUT:-/tmp/hybrid-out}
SLICE=${SLICE:-/tmp/slice12}
MACHINES=${MACHINES:-"24:64 32:64 48:64 96:64 24:128 32:128 48:128 96:128 24:256 32:256 48:256 96:256"}
if [ ! -d "$CARRY/bin" ] && [ -f "$CARRY/cuda-tools.tar.xz" ]; then  # pack-cuda-tools.sh's archive
  tools=${TOOLS_DIR:-/tmp/cuda-tools}
  mkdir -p "$tools"
  python3 -c 'import sys, tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' "$CARRY/cuda-tools.tar.xz" "$tools"
  CARRY=$tools
fi
BIN="$CARRY/bin/deltafin-cuda-k3"
export LD_LIBRARY_PATH="$CARRY/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
mkdir -p "$OUT"
nvidia-smi --query-gpu=name,memory.total,memory.used --format=csv > "$OUT/gpu.txt" 2>&1 || true
status=0
env -u DELTAFIN_CUDA_TIMELINE "$BIN" split tests/fixtures/k3-tiny > "$OUT/split-checks.txt" 2>&1 || status=1
tail -3 "$OUT/split-checks.txt"
# Again with the GPU streaming RAM units from the host's own (pinned) buffers (placement::shared_spine_copy).
env -u DELTAFIN_CUDA_TIMELINE DELTAFIN_SHARED_SPINE=1 "$BIN" split tests/fixtures/k3-tiny > "$OUT/split-checks-shared.txt" 2>&1 ||
  status=1
tail -1 "$OUT/split-checks-shared.txt"
if [ ! -f "$SLICE/config.json" ]; then
  "$BIN" synth slice-2l "$SLICE" layers=12 experts=16 mla_layers=4+8+12 shards=4
fi
# 16 prompt ids (one prefill pass of the GPU session's 16 rows), 6 new tokens, 2 runs per arm
# (the first cold, the second reported); GPU_TFLOPS gives the planner's GPU matmul rate (default: measured).
# shellcheck disable=SC2086
"$BIN" hybrid "$SLICE" tests/fixtures/k3-real-meta "${PROMPT:-16}" "${NEW:-6}" "${REPS:-2}" "${GPU_TFLOPS:-0}" $MACHINES \
  > "$OUT/hybrid-table.md" 2> "$OUT/hybrid-stderr.txt" || status=1
cat "$OUT/hybrid-table.md"
[ "$status" -eq 0 ] || tail -5 "$OUT/hybrid-stderr.txt"
exit $status

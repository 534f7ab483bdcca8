#!/bin/sh
# On a CUDA machine, in one command (issue 39): the K3 forward over several GPUs. With two or more
# GPUs it uses them all; with one (an H200) it runs two logical GPUs on it (DELTAFIN_CUDA_DEVICES=0,0),
# so the per-GPU models, the layer ranges and the hand-over of the residual stream between GPUs run
# for real (the copies stay within the device instead of crossing NVLink/PCIe).
#   1. deltafin-cuda-k3 multi: k3-tiny greedy ids with the layers split between two GPUs at every
#      layer boundary, lm_head on either, hand-overs device to device and through pinned host memory,
#      a planner's two-GPU plan through the engine's factory: against the goldens, exactly the
#      one-GPU ids, prefill logits bit for bit; device list errors.
#   2. a real-dimension slice of K3 (12 layers: 9 KDA + 3 MLA, 16 experts per MoE layer), written once
#      to $SLICE (the one tools/device/hybrid-h200.sh writes, reused when present).
#   3. deltafin-cuda-k3 multigpu: the slice planned over the GPUs with budgets that each hold
#      1.25 / GPUs of its spine (so no one GPU holds it), per-GPU layer ranges, predicted vs measured
#      decode and prefill s/token, hand-overs, ids against the whole slice on one GPU.
# The binary comes from tools/device/pack-hybrid.sh (carry build/carry). Output under $OUT:
# multi-checks.txt and multigpu-table.md. About 3-4 minutes on an H200 (most of it writing the slice).
set -eu
CARRY=${CARRY:-build/carry}
OUT=${OUT:-/tmp/multigpu-out}
SLICE=${SLICE:-/tmp/slice12}
if [ ! -d "$CARRY/bin" ] && [ -f "$CARRY/cuda-tools.tar.xz" ]; then  # pack-cuda-tools.sh's archive
  tools=${TOOLS_DIR:-/tmp/cuda-tools}
  mkdir -p "$tools"
  python3 -c 'import sys, tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' "$CARRY/cuda-tools.tar.xz" "$tools"
  CARRY=$tools
fi
BIN="$CARRY/bin/deltafin-cuda-k3"
export LD_LIBRARY_PATH="$CARRY/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
mkdir -p "$OUT"
nvidia-smi --query-gpu=index,name,memory.total,memory.used --format=csv > "$OUT/gpu.txt" 2>&1 || true
nvidia-smi topo -m >> "$OUT/gpu.txt" 2>&1 || true
NGPU=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU' || true)
if [ "${NGPU:-0}" -ge 2 ]; then
  GPUS=$NGPU
  echo "$NGPU GPUs: the forward spreads over all of them" | tee "$OUT/mode.txt"
else
  export DELTAFIN_CUDA_DEVICES=0,0
  GPUS=2
  echo "one GPU: two logical GPUs on it (DELTAFIN_CUDA_DEVICES=0,0)" | tee "$OUT/mode.txt"
fi
status=0
"$BIN" multi tests/fixtures/k3-tiny > "$OUT/multi-checks.txt" 2>&1 || status=1
grep -c '^PASS' "$OUT/multi-checks.txt" | sed 's/$/ checks passed/'
grep '^FAIL' "$OUT/multi-checks.txt" || true
tail -1 "$OUT/multi-checks.txt"
if [ ! -f "$SLICE/config.json" ]; then
  "$BIN" synth slice-2l "$SLICE" layers=12 experts=16 mla_layers=4+8+12 shards=4
fi
# 16 prompt ids (one prefill pass of 16 rows), 8 new tokens, 2 runs (the first cold, the second
# reported); GPU_TFLOPS gives the planner's GPU matmul rate (default: measured).
"$BIN" multigpu "$SLICE" "${PROMPT:-16}" "${NEW:-8}" "${REPS:-2}" "${GPU_TFLOPS:-0}" "$GPUS" \
  > "$OUT/multigpu-table.md" 2>&1 || status=1
cat "$OUT/multigpu-table.md"
exit $status

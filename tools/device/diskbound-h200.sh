#!/bin/sh
# On the GPU machine's host CPU (issue 33, CPU path): disk-bound decode against its floors on a host
# whose reads do not share the compute's cores (16 vCPUs; the development VM has 2).
#   1. a real-dimension slice of K3 written once to $SLICE ($LAYERS MoE layers, default 4, of
#      $EXPERTS experts, 17.55 MB each, uniform random routers: 16 of them per token and layer; MLA at
#      every fourth layer, KDA elsewhere);
#   2. `deltafin bench`: RAM expert caches of two layers' working set (32 experts), 1 GB and 4 GB,
#      each beside the streaming buffer, cold and warm, and the compute floor (every expert resident)
#      in the same run; ids compared across every arm (the bench fails if any differ).
# Expert reads are O_DIRECT, so the page cache holds none of them whatever the machine's RAM; the
# bench drops the shards' pages before each cold run. About 4-6 minutes with the slice's writing.
#
# GPU=1 (issue 33, GPU path) adds GPU arms to the same bench invocation, so that the oracle compares
# their ids with the CPU arms': the same three RAM tiers under `--device cuda --vram-experts $VRAM`
# (experts stream disk -> RAM tier -> VRAM tier -> GPU; default 256 slots, a quarter of the
# LAYERS=8 EXPERTS=128 slice's 1024 experts and two decode steps' worth, so the VRAM tier is never
# the whole slice) and the GPU compute floor (`--device cuda --compute-floor`, the same tier with each
# decode step's experts copied in before the step). Each GPU run is compared with max(disk floor,
# PCIe floor, GPU compute floor), all three measured in this run (docs/STREAMING.md, "GPU arms").
# The slice for it: LAYERS=8 EXPERTS=128 (25.6 GB). GPU=1 doubles the arms, so it defaults to REPS=1:
# about 5-7 minutes on that slice, plus its writing the first time (an estimate from the CPU arms'
# 1.1 s/token there, not yet measured with the GPU arms; the slice is reused while the machine is up).
# The binaries come from the one-archive carry (tools/device/README.md), unpacked to $CARRY; GPU=1
# needs a CUDA build's `deltafin` (e.g. BUILD=build/cu tools/device/pack-cli.sh).
# CPU=0 (with GPU=1) leaves the CPU arms out: the GPU arms alone, e.g. REPS=3 for their medians
# (LAYERS=8 EXPERTS=128: 202 s on a warm machine whose slice was written, session 42).
# ALSO_THREADS=N adds the CPU arms again with `--threads N` (ws2-tN, c1g-tN, c4g-tN and their own
# floor-tN) to the same invocation, to see whether the reads keep up with the probe when the thread
# that reaps and resubmits them has a core of its own (on the 2-vCPU VM they fell short with every
# core computing: docs/history/PERFORMANCE-LOG.md, "The read rate while the compute holds every
# core"; on the H100 host they did with every core computing: "On the host the reads have their
# core"); N = cores - 1 leaves it one.
# ALSO_QD=N adds the CPU arms again at a fixed queue depth (`--qd N`: ws2-qN, c1g-qN, c4g-qN) to the
# same invocation, beside the default arms at the probe's pick, so that one run compares the two
# depths on the same disk minutes apart (the default is at least 8, store/queue_depth_probe.h;
# GPU=1 ALSO_QD=1 LAYERS=8 EXPERTS=128 took 490 s with the slice's writing, session 41).
# Output under $OUT: diskbound.json and diskbound.txt.
set -eu
CARRY=${CARRY:-/tmp/t}
OUT=${OUT:-/tmp/diskbound-out}
EXPERTS=${EXPERTS:-384}
LAYERS=${LAYERS:-4}
SLICE=${SLICE:-/tmp/slice-${LAYERS}l-${EXPERTS}e}
MLA=$(seq 4 4 "$LAYERS" | paste -sd+)
BIN=${BIN:-"$CARRY/bin/deltafin"}  # another build (an A/B) may be named
GPU=${GPU:-0}
CPU=${CPU:-1}
[ "$CPU" = 1 ] || [ "$GPU" = 1 ] || { echo "CPU=0 leaves no arms without GPU=1" >&2; exit 2; }
VRAM=${VRAM:-256}
if [ "$GPU" = 1 ]; then REPS=${REPS:-1}; else REPS=${REPS:-2}; fi
export LD_LIBRARY_PATH="$CARRY/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
mkdir -p "$OUT"
if [ ! -f "$SLICE/config.json" ]; then
  "$BIN" synth --preset slice-2l --set layers="$LAYERS" --set experts="$EXPERTS" --set mla_layers="$MLA" --set shards=4 \
    --out "$SLICE" --quiet
fi
sync
[ -w /proc/sys/vm/drop_caches ] && echo 3 > /proc/sys/vm/drop_caches || true
{
  nproc
  free -g | head -2
  if [ "$GPU" = 1 ] && command -v nvidia-smi > /dev/null; then nvidia-smi --query-gpu=name,memory.total,memory.used --format=csv,noheader 2>&1 || true; fi
} > "$OUT/diskbound.txt"
set --
if [ "$CPU" = 1 ]; then
  set -- --arm 'ws2:--ram-cache 0.562' --arm 'c1g:--ram-cache 1' --arm 'c4g:--ram-cache 4' --arm 'floor:--compute-floor'
fi
if [ -n "${ALSO_THREADS:-}" ]; then
  t=$ALSO_THREADS
  set -- "$@" --arm "ws2-t$t:--ram-cache 0.562 --threads $t" --arm "c1g-t$t:--ram-cache 1 --threads $t" \
    --arm "c4g-t$t:--ram-cache 4 --threads $t" --arm "floor-t$t:--compute-floor --threads $t"
fi
if [ -n "${ALSO_QD:-}" ]; then
  q=$ALSO_QD
  set -- "$@" --arm "ws2-q$q:--ram-cache 0.562 --qd $q" --arm "c1g-q$q:--ram-cache 1 --qd $q" \
    --arm "c4g-q$q:--ram-cache 4 --qd $q"
fi
if [ "$GPU" = 1 ]; then
  set -- "$@" --arm "g-ws2:--ram-cache 0.562 --device cuda --vram-experts $VRAM" \
    --arm "g-c1g:--ram-cache 1 --device cuda --vram-experts $VRAM" \
    --arm "g-c4g:--ram-cache 4 --device cuda --vram-experts $VRAM" \
    --arm "g-floor:--compute-floor --device cuda --vram-experts $VRAM"
fi
status=0
"$BIN" bench --model-root "$SLICE" "$@" --prompt-len "${PROMPT:-4}" --new "${NEW:-6}" \
  --reps "$REPS" --out "$OUT/diskbound.json" >> "$OUT/diskbound.txt" 2>&1 || status=$?
tail -60 "$OUT/diskbound.txt"
exit $status

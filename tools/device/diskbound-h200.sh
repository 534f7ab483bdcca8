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
# The binaries come from the one-archive carry (tools/device/README.md), unpacked to $CARRY.
# Output under $OUT: diskbound.json and diskbound.txt.
set -eu
CARRY=${CARRY:-/tmp/t}
OUT=${OUT:-/tmp/diskbound-out}
SLICE=${SLICE:-/tmp/slice-4l}
EXPERTS=${EXPERTS:-384}
LAYERS=${LAYERS:-4}
MLA=$(seq 4 4 "$LAYERS" | paste -sd+)
BIN=${BIN:-"$CARRY/bin/deltafin"}  # another build (an A/B) may be named
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
} > "$OUT/diskbound.txt"
status=0
"$BIN" bench --model-root "$SLICE" --arm 'ws2:--ram-cache 0.562' --arm 'c1g:--ram-cache 1' \
  --arm 'c4g:--ram-cache 4' --arm 'floor:--compute-floor' --prompt-len "${PROMPT:-4}" --new "${NEW:-6}" \
  --reps "${REPS:-2}" --out "$OUT/diskbound.json" >> "$OUT/diskbound.txt" 2>&1 || status=$?
tail -40 "$OUT/diskbound.txt"
exit $status

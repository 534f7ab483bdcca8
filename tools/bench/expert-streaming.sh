#!/bin/sh
# Expert streaming on the CPU: a 25.8 GB slice (2 MoE layers of the real K3 size) decoded with RAM
# caches smaller than the model, each arm cold then warm, 3 repetitions in alternating order.
set -eu
BIN=${BIN:-build/cpu/bin}
ROOT=${ROOT:-/work/models/slice-24g}
[ -d "$ROOT" ] || "$BIN/deltafin" synth --preset slice-24g --out "$ROOT"
"$BIN/deltafin" bench --model-root "$ROOT" \
  --arm 'lfu12:--ram-cache 12 --policy lfu' --arm 'lfu4:--ram-cache 4 --policy lfu' \
  --arm 'lru4:--ram-cache 4 --policy lru' --arm 'heat4:--ram-cache 4 --policy heat --heat heat.bin' \
  --arm 'nopf4:--ram-cache 4 --policy lfu --no-prefetch' \
  --arm 'lfu12t1:--ram-cache 12 --policy lfu --threads 1' \
  --arm 'heat4t1:--ram-cache 4 --policy heat --heat heat.bin --threads 1' \
  --prompt-len 16 --new 24 --reps 3 --out run3.json
"$BIN/deltafin" bench --model-root "$ROOT" \
  --arm 'lfu12t1:--ram-cache 12 --policy lfu --threads 1' \
  --arm 'heat2t1:--ram-cache 2 --policy heat --heat heat.bin --threads 1' \
  --arm 'nopf2t1:--ram-cache 2 --policy heat --heat heat.bin --no-prefetch --threads 1' \
  --arm 'heat3t1:--ram-cache 3 --policy heat --heat heat.bin --threads 1' \
  --prompt-len 16 --new 24 --reps 3 --out run4.json

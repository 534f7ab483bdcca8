#!/bin/sh
# On the H200, in one command (issue 34, the fp64 GPU forward): every GPU op against its CPU
# reference, the K3 forward's checks on k3-tiny, the GPU and CPU logits against the float64
# reference on the deep tiny models with greedy ids for 32 steps, then the GPU forward's speed
# before and after on a real-dimension slice.
#   CARRY=DIR OUT=DIR tools/device/precision-h200.sh
# CARRY: an unpacked tool set (bin/deltafin, bin/deltafin-cuda-check, bin/deltafin-cuda-k3, lib/;
# bin/deltafin-cuda-k3-bench when the kernels' speed is wanted)
# and, for the speed A/B, bin/deltafin-before (the binary before the change). Output under $OUT:
# checks.txt, k3-checks.txt, precision.txt, greedy.txt, speed.txt. DEVICES="cuda" leaves out the CPU's
# precision rows (the CPU ids are still compared with the GPU's); LAYERS, NEW, ROUNDS, SLICE_SET.
set -u
CARRY=${CARRY:?unpacked tools}
OUT=${OUT:-/tmp/precision-out}
SLICE=${SLICE:-/tmp/slice6}
export LD_LIBRARY_PATH="$CARRY/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
mkdir -p "$OUT"
bin=$CARRY/bin
py=python3
# [BOS] + 11 byte-level ids, the prompt of every model here (measure_deep.sh's).
prompt() { echo "$($py -c "import json,sys; print(json.load(open(sys.argv[1]))['bos_token_id'])" "$1/config.json"),72,101,108,108,111,44,32,119,111,114,108"; }
"$bin/deltafin-cuda-check" ${CHECK_ARGS:---quick} > "$OUT/checks.txt" 2>&1
echo "deltafin-cuda-check rc $?"; tail -2 "$OUT/checks.txt"
"$bin/deltafin-cuda-k3" check tests/fixtures/k3-tiny > "$OUT/k3-checks.txt" 2>&1
echo "deltafin-cuda-k3 check rc $?"; tail -1 "$OUT/k3-checks.txt"
# The forward's fp64 GEMV and experts against the copy rate (when carried).
if [ -x "$bin/deltafin-cuda-k3-bench" ]; then
  "$bin/deltafin-cuda-k3-bench" --json "$OUT/k3-bench.json" > "$OUT/k3-bench.txt" 2>&1
  grep -E "D2D|forward" "$OUT/k3-bench.txt"
fi
{
  for dev in ${DEVICES:-cuda cpu}; do
    echo "== $dev"
    DEVICE=$dev tests/precision/measure_deep.sh "$bin/deltafin" ${LAYERS:-24 48 93}
  done
  # k3-tiny, the fixture: the engine's logits and numpy fp32's against the float64 reference.
  k=tests/fixtures/k3-tiny
  p=$(prompt "$k")
  for dev in ${DEVICES:-cuda cpu}; do
    printf 'k3-tiny, %s: ' "$dev"
    "$bin/deltafin" logits --model-root "$k" --ids "$p" --reference --json --out "/tmp/k3-tiny-$dev.safetensors" --device "$dev"
    printf 'k3-tiny, numpy fp32: '
    $py tests/precision/numpy_forward.py "$k" --ids "$p" --dtype float32 --against "/tmp/k3-tiny-$dev.safetensors"
  done
} > "$OUT/precision.txt" 2>&1
cat "$OUT/precision.txt"
{
  for L in ${LAYERS:-24 48 93} k3-tiny; do
    d=${TMPDIR:-/tmp}/deltafin-precision/deep-$L
    [ "$L" = k3-tiny ] && d=tests/fixtures/k3-tiny
    p=$(prompt "$d")
    for dev in ${DEVICES:-cuda cpu}; do
      printf '%s layers, %s: ' "$L" "$dev"
      $py tests/precision/greedy_vs_f64.py "$bin/deltafin" "$d" --ids "$p" --steps 32 --device "$dev" 2>&1 | tail -1
    done
    g=$("$bin/deltafin" generate-ids --model-root "$d" --ids "$p" --max-new 32 --device cuda 2>/dev/null)
    c=$("$bin/deltafin" generate-ids --model-root "$d" --ids "$p" --max-new 32 --device cpu 2>/dev/null)
    if [ -n "$g" ] && [ "$g" = "$c" ]; then echo "$L layers: GPU and CPU greedy ids identical"; else
      echo "$L layers: GPU and CPU greedy ids DIFFER"; echo " gpu $g"; echo " cpu $c"; fi
  done
} > "$OUT/greedy.txt" 2>&1
cat "$OUT/greedy.txt"
if [ -x "$bin/deltafin-before" ]; then
  [ -f "$SLICE/config.json" ] || "$bin/deltafin-cuda-k3" synth slice-2l "$SLICE" ${SLICE_SET:-layers=6 experts=16 mla_layers=4+6 shards=2} > /dev/null
  DEVICE=cuda tools/bench/precision-ab.sh "$bin/deltafin-before" "$bin/deltafin" "$SLICE" "${NEW:-32}" "${ROUNDS:-3}" \
    > "$OUT/speed.txt" 2>&1
  cat "$OUT/speed.txt"
fi

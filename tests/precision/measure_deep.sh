#!/bin/sh
# Engine and numpy fp32 against the float64 reference on deep tiny K3-format models (the real
# layer pattern: KDA, MLA at every 4th layer and the last, AttnRes blocks of 12).
#   tests/precision/measure_deep.sh BUILD/bin/deltafin [LAYERS...]   (default 24 48 93)
#   DEVICE=cuda tests/precision/measure_deep.sh ...   the engine's GPU forward instead of its CPU one
# Prints one line per model: layers, the engine's logits rel-L2 and argmax agreement, numpy fp32's.
# Needs python3 with numpy (Debian: python3-numpy). Work files go to ${TMPDIR:-/tmp}/deltafin-precision.
set -eu
bin=$(realpath "$1"); shift
here=$(dirname "$(realpath "$0")")
# The first python3 that has numpy: Debian's (python3-numpy) or the one on PATH (a virtual
# environment, as on the GPU machines).
py=
for c in /usr/bin/python3 python3; do
  if "$c" -c 'import numpy' 2>/dev/null; then py=$c; break; fi
done
[ -n "$py" ] || { echo "measure_deep.sh: no python3 with numpy (Debian: apt-get install python3-numpy)" >&2; exit 2; }
work=${TMPDIR:-/tmp}/deltafin-precision
mkdir -p "$work"
[ $# -gt 0 ] || set -- 24 48 93
echo "layers | engine rel-L2 | engine argmax agree | numpy fp32 rel-L2 | numpy argmax agree | min f64 margin"
for L in "$@"; do
  mla=""
  i=4
  while [ $i -le "$L" ]; do mla="$mla${mla:++}$i"; i=$((i + 4)); done
  [ $((L % 4)) -eq 0 ] || mla="$mla+$L"
  dir="$work/deep-$L"
  "$bin" synth --preset tiny-alt --out "$dir" --force --quiet --seed 1 --set layers="$L" --set attn_res_block=12 \
    --set mla_layers="$mla" --set first_k_dense=1 --set shared_experts=2
  bos=$("$py" -c "import json,sys; print(json.load(open(sys.argv[1]))['bos_token_id'])" "$dir/config.json")
  ids=$bos,72,101,108,108,111,44,32,119,111,114,108  # [BOS] + 11 byte-level ids
  eng=$("$bin" logits --model-root "$dir" --ids "$ids" --reference --json --out "$dir/logits.safetensors" --threads 2 \
    --device "${DEVICE:-cpu}")
  np=$("$py" "$here/numpy_forward.py" "$dir" --ids "$ids" --dtype float32 --against "$dir/logits.safetensors")
  "$py" - "$L" "$eng" "$np" <<'PY'
import json, sys
L, e, n = sys.argv[1], json.loads(sys.argv[2]), json.loads(sys.argv[3])
print(f"{L} | {e['rel_l2']:.3g} | {e['argmax_agree']:.3f} | {n['rel_l2']:.3g} | {n['argmax_agree']:.3f} | {e['min_f64_margin']:.3g}")
PY
done

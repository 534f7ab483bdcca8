#!/bin/sh
# Alternating A/B of two deltafin binaries on one model: prefill seconds, decode s/token and a hash
# of the generated text per run (the texts must agree). Used for the fp64 CPU forward's speed
# (PERFORMANCE.md, "Precision").
#   tools/bench/precision-ab.sh BEFORE_BIN AFTER_BIN MODEL_DIR [NEW_TOKENS=24] [ROUNDS=3]
#   DEVICE=cuda tools/bench/precision-ab.sh ...   the GPU forward (the fp64 GPU forward's speed)
set -eu
[ $# -ge 3 ] || { echo "usage: $0 BEFORE_BIN AFTER_BIN MODEL_DIR [NEW_TOKENS] [ROUNDS]" >&2; exit 2; }
before=$1 after=$2 model=$3 n=${4:-24} rounds=${5:-3}
r=1
while [ "$r" -le "$rounds" ]; do
  for which in before after; do
    bin=$before
    [ "$which" = after ] && bin=$after
    # The text is stdout alone: notes, the first run's rate probe and the stats go to stderr.
    err=$(mktemp)
    text=$("$bin" run --model-root "$model" --device "${DEVICE:-cpu}" --prompt "the quick brown fox" --max-new "$n" \
      --stats --draft off 2> "$err" | md5sum | cut -c1-8)
    out=$(cat "$err")
    rm -f "$err"
    prefill=$(printf '%s\n' "$out" | sed -n 's/.*(prefill \([0-9.]*\) s.*/\1/p')
    # decode s/token from "generated tokens N (decode S s": S / (N - 1), the first token being prefill's
    decode=$(printf '%s\n' "$out" | sed -n 's/^generated tokens *\([0-9]*\) (decode \([0-9.]*\) s.*/\1 \2/p' |
      awk '$1 > 1 { printf "%.4f", $2 / ($1 - 1) }')
    echo "$which round $r: prefill $prefill s, decode $decode s/token, text $text"
  done
  r=$((r + 1))
done

#!/usr/bin/env bash
# The whole demo pipeline in one command: prepare (unless tools/train/work/data exists), train the
# `demo` K3, export it, train and export its DSpark drafter, print samples and sizes.
#   tools/train/run-demo.sh [OUT_DIR]        (default: tools/train/work/out)
# Environment: SEED (default 1), PYTHON (default python3), DRAFT_STEPS (default 3000), MINUTES and
# DRAFT_MINUTES (time limits; the bundled demo: MINUTES=5.2 DRAFT_MINUTES=1, tools/train/README.md).
# On a machine without network, run `python3 tools/train/k3train.py prepare --config demo
# --data tools/train/work/data` where Debian's bible-kjv is installed and bring that folder along.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
out=${1:-$here/work/out}
py=${PYTHON:-python3}
seed=${SEED:-1}
work=$here/work
mkdir -p "$out" "$work"
export PYTHONDONTWRITEBYTECODE=1
start=$(date +%s)
"$py" "$here/k3train.py" selftest
"$py" "$here/k3train.py" check-fixtures
"$py" "$here/k3train.py" all --config demo --seed "$seed" --work "$work" --out "$out/demo-model" \
  ${MINUTES:+--minutes "$MINUTES"} 2>&1 | tee "$out/train.log"
trained=$(date +%s)
"$py" "$here/k3train.py" dspark --target "$out/demo-model" --data "$work/data" --out "$out/demo-dspark" \
  --seed "$seed" --steps "${DRAFT_STEPS:-3000}" ${DRAFT_MINUTES:+--minutes "$DRAFT_MINUTES"} 2>&1 | tee "$out/dspark.log"
done_at=$(date +%s)
"$py" "$here/k3train.py" sample --model "$out/demo-model" --max-new 40 \
  --prompt Hello --prompt "In the beginning" --prompt "The Lord is my shepherd" --prompt "Blessed are" \
  --prompt "And it came to pass" --prompt "What is love" --prompt "The king said" --prompt "Hello, how are you" \
  --prompt "Once upon a time" --prompt "The light" 2>&1 | tee "$out/samples.txt"
"$py" "$here/k3train.py" sample --model "$out/demo-model" --chat --think --max-new 80 \
  --prompt Hello --prompt "Who are you?" --prompt "What does John 3:16 say?" 2>&1 | tee -a "$out/samples.txt"
# Without a think block the answer must come from the question alone (the first demo answered every
# such question with the same sentence).
"$py" "$here/k3train.py" sample --model "$out/demo-model" --chat --max-new 60 \
  --prompt Hello --prompt "Who are you?" --prompt "Which book comes after Genesis?" \
  --prompt "Which book comes after Ruth?" --prompt "How many chapters does Jonah have?" \
  --prompt "Tell me a verse about water." --prompt "How does the book of John begin?" 2>&1 | tee -a "$out/samples.txt"
echo "model: $(du -sb "$out/demo-model" | cut -f1) bytes, drafter: $(du -sb "$out/demo-dspark" | cut -f1) bytes"
echo "time: K3 $((trained - start)) s, DSpark $((done_at - trained)) s (seed $seed)"

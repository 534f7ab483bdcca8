#!/bin/sh
# The real K3 planned for the reference machines (docs/PLACEMENT.md "Reference machines", the same
# table in docs/PERFORMANCE.md): one `deltafin plan --other-machine` per machine and disk rate, with
# the assumed desktop rates; prints the table's markdown rows.
#   tools/placement/reference-plans.sh [BUILD/bin/deltafin] [MODEL=tests/fixtures/k3-real-meta]
set -eu
bin=${1:-build/ci-cuda/bin/deltafin}
model=${2:-tests/fixtures/k3-real-meta}
# "8.73 disk" -> "8.73 (disk)"; "20.72 / 53.87" -> "20.7 / 53.9"
fmt() { printf '%.2f (%s)' "${1% *}" "${1#* }"; }
gb() { printf '%s\n' "$1" | awk -F' / ' '{ for (i = 1; i <= NF; ++i) printf "%s%.1f", (i > 1 ? " / " : ""), $i }'; }
echo "| machine | disk GB/s | spine GB: VRAM / RAM / disk | expert tiers GB: VRAM / RAM | decode s/token (bound) | prefill s/token (bound) | what would help most |"
echo "| --- | ---: | --- | --- | --- | --- | --- |"
for disk in 7 14; do
  # name|vram budgets (empty: no GPU)|RAM GB
  for m in "24 GB GPU + 64 GB RAM|24|64" "32 GB GPU + 128 GB RAM|32|128" "48 GB GPU + 192 GB RAM|48|192" \
    "96 GB GPU + 256 GB RAM|96|256" "no GPU + 512 GB RAM||512" "2 x 32 GB GPUs + 128 GB RAM|32,32|128" \
    "4 x 48 GB GPUs + 256 GB RAM|48,48,48,48|256"; do
    name=${m%%|*}
    rest=${m#*|}
    vram=${rest%%|*}
    ram=${rest#*|}
    if [ -n "$vram" ]; then
      out=$("$bin" plan --model-root "$model" --other-machine --ram-budget "$ram" --vram-budget "$vram" --disk-gbps "$disk" 2>&1)
    else
      out=$("$bin" plan --model-root "$model" --other-machine --ram-budget "$ram" --disk-gbps "$disk" 2>&1)
    fi
    summary=$(printf '%s\n' "$out" | grep '^plan: ')
    spine=$(printf '%s\n' "$summary" | sed -n 's/.*= \([0-9.]*\) GB VRAM + \([0-9.]*\) GB RAM + \([0-9.]*\) GB disk-streamed.*/\1 \/ \2 \/ \3/p')
    tiers=$(printf '%s\n' "$summary" | sed -n 's/.*expert tiers \([0-9.]*\) GB VRAM + \([0-9.]*\) GB RAM.*/\1 \/ \2/p')
    decode=$(printf '%s\n' "$out" | sed -n 's/^decode *\([0-9.]*\) s\/token.*bound by \([A-Za-z]*\).*/\1 \2/p')
    prefill=$(printf '%s\n' "$out" | sed -n 's/^prefill *\([0-9.]*\) s\/token.*bound by \([A-Za-z]*\).*/\1 \2/p')
    help=$(printf '%s\n' "$out" | sed -n 's/^what would help most: //p')
    spine=$(gb "$spine")
    tiers=$(gb "$tiers")
    echo "| $name | $disk | $spine | $tiers | $(fmt "$decode") | $(fmt "$prefill") | $help |"
  done
done

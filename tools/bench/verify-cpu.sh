#!/bin/sh
# Verify passes on the CPU: slice-2l with resident and with streamed experts.
set -eu
BIN=${BIN:-build/cpu/bin}
"$BIN/deltafin" synth --preset slice-2l --out build/slice-2l --force --quiet
"$BIN/deltafin" bench-verify --model-root build/slice-2l --reps 5 --context 32 --out cpu_resident.json
"$BIN/deltafin" bench-verify --model-root build/slice-2l --reps 5 --context 32 --experts streamed --out cpu_streamed.json

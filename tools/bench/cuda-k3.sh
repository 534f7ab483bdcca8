#!/bin/sh
# On the GPU machine: the K3 forward. Goldens on k3-tiny, a 2-layer slice of the real K3 written
# locally (4.4 GB), the layers at T rows against their byte floors, verify passes and streamed decode.
set -eu
BIN=${BIN:-build/cu/bin}
SLICE=${SLICE:-/tmp/slice}
"$BIN/deltafin-cuda-k3" check k3-tiny 1
[ -d "$SLICE" ] || "$BIN/deltafin-cuda-k3" synth slice-2l "$SLICE"
S=$SLICE/model-00001-of-000002.safetensors
"$BIN/deltafin-cuda-k3" layers "$SLICE" 64 10 "$S" 1 2 4 8   # roofline, then each layer at T rows
"$BIN/deltafin-cuda-k3" verify "$SLICE" resident 64 10
"$BIN/deltafin-cuda-k3" verify "$SLICE" ram 64 5
"$BIN/deltafin-cuda-k3" verify "$SLICE" disk 64 5
"$BIN/deltafin-cuda-k3" stream "$SLICE" 1024 48 8 32 "$S"    # RAM tier 1 GiB, VRAM tier 48 experts
"$BIN/deltafin-cuda-k3" stream "$SLICE" 3072 48 16 32 "$S"   # RAM tier holds every expert

#!/usr/bin/env bash
# (Re)makes the bundled demo in resources/demo/ from an export of tools/train/k3train.py:
#   tools/train/bundle.sh MODEL_DIR DRAFT_DIR
# MODEL_DIR: `k3train.py export` output (config.json, shards, tokenizer); DRAFT_DIR: `k3train.py dspark`
# output. Writes demo-model.tar.zst, demo-dspark.tar.zst (lossless: the engine reads the extracted
# files byte for byte) and SHA256SUMS (each extracted file, as `sha256sum -c` reads it), which the build
# checks after extracting (cmake/DemoBundle.cmake). The archives are reproducible: sorted names, fixed
# times and owners, single-threaded zstd, so the same export gives the same bytes.
set -euo pipefail
[ $# -eq 2 ] || { echo "usage: $0 MODEL_DIR DRAFT_DIR" >&2; exit 2; }
model=$(cd "$1" && pwd); draft=$(cd "$2" && pwd)
out=$(cd "$(dirname "${BASH_SOURCE[0]}")/../../resources/demo" && pwd)
for f in "$model/config.json" "$model/tiktoken.model" "$model/model.safetensors.index.json" "$draft/config.json" \
         "$draft/model.safetensors"; do
  [ -f "$f" ] || { echo "missing $f: MODEL_DIR must be a k3train.py export, DRAFT_DIR a k3train.py dspark output" >&2; exit 1; }
done
command -v zstd >/dev/null || { echo "zstd is not installed (apt-get install zstd)" >&2; exit 1; }
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
# Only the files the engine reads: nothing else of the export folder (logs, checkpoints) travels.
mkdir -p "$stage/demo-model" "$stage/demo-dspark"
cp "$model"/config.json "$model"/generation_config.json "$model"/model.safetensors.index.json \
   "$model"/tiktoken.model "$model"/tokenizer_config.json "$model"/model-*-of-*.safetensors "$stage/demo-model/"
cp "$draft"/config.json "$draft"/model.safetensors "$stage/demo-dspark/"
chmod 0644 "$stage"/demo-*/*
for d in demo-model demo-dspark; do
  tar -C "$stage" --sort=name --mtime=@0 --owner=0 --group=0 --numeric-owner --format=gnu -cf - "$d" |
    zstd -q -19 --single-thread -f -o "$out/$d.tar.zst"
done
(cd "$stage" && find demo-model demo-dspark -type f | LC_ALL=C sort | xargs sha256sum) >"$out/SHA256SUMS"
ls -l "$out"/*.tar.zst
echo "extracted: $(du -sb "$stage" | cut -f1) bytes in $(wc -l <"$out/SHA256SUMS") files; wrote $out/SHA256SUMS"

# The README's table of this run, from the `deltafin_trained` blocks the export and the drafter carry.
python3 - "$out" "$stage" <<'PY'
import json, os, re, sys
out, stage = sys.argv[1], sys.argv[2]
m = json.load(open(f"{stage}/demo-model/config.json"))
d = json.load(open(f"{stage}/demo-dspark/config.json"))
t, dt, tc = m.get("deltafin_trained", {}), d.get("deltafin_trained", {}), m["text_config"]
size = lambda sub: sum(os.path.getsize(os.path.join(stage, sub, f)) for f in os.listdir(os.path.join(stage, sub)))
mb = lambda n: f"{n / 1e6:.1f} MB"
rows = [
    ("model", f"config `{t.get('config', '?')}`: hidden {tc['hidden_size']}, {tc['num_hidden_layers']} layers, "
              f"{tc['num_experts']} experts top-{tc['num_experts_per_token']}, vocabulary {tc['vocab_size']}"),
    ("model training", f"seed {t.get('seed', '?')}, {t.get('steps', '?')} steps in {t.get('train_seconds', '?')} s, "
                       f"validation loss {t.get('validation_loss', '?')} (MXFP4 experts); data: {t.get('data', '?')}"),
    ("drafter training", f"seed {dt.get('seed', '?')}, {dt.get('steps', '?')} steps in {dt.get('train_seconds', '?')} s, "
                         f"taps {d.get('target_layer_ids')}, block {d.get('block_size')}, teacher-forced accuracy per "
                         f"block row {dt.get('row_accuracy', '?')}"),
    ("sizes", f"model {mb(size('demo-model'))} ({mb(os.path.getsize(f'{out}/demo-model.tar.zst'))} compressed), "
              f"drafter {mb(size('demo-dspark'))} ({mb(os.path.getsize(f'{out}/demo-dspark.tar.zst'))} compressed)"),
]
table = "| | |\n|---|---|\n" + "".join(f"| {k} | {v} |\n" for k, v in rows)
p = f"{out}/README.md"
s = open(p).read()
s = re.sub(r"(<!-- bundle.sh: begin -->\n).*?(<!-- bundle.sh: end -->)", lambda g: g.group(1) + table + g.group(2), s, flags=re.S)
open(p, "w").write(s)
PY
echo "updated the table in $out/README.md"

#!/usr/bin/env bash
# Regenerates docs/screenshots/*.png: every main view of deltafin-studio rendered under Xvfb, with
# real work behind it (a chat reply from the demo model, installs from a local hub, the demo model
# with the RAM expert cache after a warm-up run, a benchmark run), at 1280x720.
# usage: tests/gui/screenshots.sh [BUILD_DIR]       (default: build/cpu)
# Needs: xvfb-run, and a build with deltafin, deltafin-studio, deltafin_local_hub and demo-model.
set -euo pipefail
src=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
build=$(cd "${1:-$src/build/cpu}" && pwd)
bin=$build/bin
demo=$build/demo-model
out=$src/docs/screenshots
for f in "$bin/deltafin" "$bin/deltafin-studio" "$bin/deltafin_local_hub" "$demo/config.json"; do
  [ -e "$f" ] || { echo "missing $f: build the tree first (cmake --build $build)" >&2; exit 1; }
done
command -v xvfb-run >/dev/null || { echo "xvfb-run is not installed (apt-get install xvfb)" >&2; exit 1; }

work=$(mktemp -d)
hub_pid=
cleanup() { [ -n "$hub_pid" ] && kill "$hub_pid" 2>/dev/null; rm -rf "$work"; }
trap cleanup EXIT
# Nothing of the user's own data, settings or models is read or changed.
export HOME=$work/home XDG_DATA_HOME=$work/home/data XDG_CONFIG_HOME=$work/home/config
mkdir -p "$HOME" "$out"
unset DELTAFIN_MODEL_ROOT DELTAFIN_HUB_URL

# A local hub serving the demo model as K3, throttled so that a running install shows speed and ETA.
mkfifo "$work/hub.in"
"$bin/deltafin_local_hub" "$demo" 2000000 <"$work/hub.in" >"$work/hub.url" &
hub_pid=$!
exec 9>"$work/hub.in"
for _ in $(seq 50); do [ -s "$work/hub.url" ] && break; sleep 0.1; done
hub=$(head -1 "$work/hub.url")
echo "local hub: $hub"

shot() {  # shot VIEW [ARGS...]
  local view=$1; shift
  echo "screenshot: $view"
  xvfb-run -a -s "-screen 0 1280x900x24" env QT_QPA_PLATFORM=xcb \
    "$bin/deltafin-studio" --screenshot "$out/$view.png" --view "$view" --language en "$@"
}

# Settings a view starts with, in its own data folder: the chat with its side panel open, the cache
# page on a full install with the engine's RAM expert cache (the tier map in RAM and disk).
mkdir -p "$work/chat" "$work/ram"
printf '[window]\nchatOptionsOpen=true\n' >"$work/chat/settings.ini"
printf '[engine]\nramCache=true\nramCacheMiB=64\n' >"$work/ram/settings.ini"

shot chat --model-root "$demo" --data-dir "$work/chat" --prompt "Hello! Who are you?"
shot setup --hub-url "$hub"
shot jobs --hub-url "$hub"
shot bench --model-root "$demo"
shot settings --model-root "$demo"

# The cache page after a short warm-up run: where every expert is (RAM or disk) and how often it
# was used.
shot cache --model-root "$demo" --data-dir "$work/ram"

ls -l "$out"

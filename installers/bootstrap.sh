#!/usr/bin/env bash
# One entry point for a fresh Debian 12 / Ubuntu 24.04 machine (see README.md):
#   installers/bootstrap.sh run    install what is missing, build, start Deltafin
#   installers/bootstrap.sh test   install what is missing, build, run the whole test suite
#        [--require-gpu] [ctest arguments]   --require-gpu: tests that need a GPU fail without one
# With CI=true every set-up step must succeed and no test may skip for a missing tool.
set -euo pipefail
mode=${1:-run}; shift || true
here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$here"
ci=false; [ "${CI:-}" = true ] && ci=true
args=()
if [ "$mode" = test ]; then
  for a in "$@"; do
    if [ "$a" = --require-gpu ]; then export DELTAFIN_REQUIRE_GPU=1; else args+=("$a"); fi
  done
  # Read by the tests (tests/support/test_support.h): a missing node or npm package fails there.
  if $ci; then export DELTAFIN_NO_SKIPS=1; fi
fi

say() { printf '\033[1m[deltafin]\033[0m %s\n' "$*"; }
as_root() { if [ "$(id -u)" -eq 0 ]; then "$@"; elif command -v sudo >/dev/null; then sudo "$@"; else
  say "need root to run: $* (install sudo or run as root)"; exit 1; fi; }

# Build and run dependencies, all from the distribution's archive.
packages=(build-essential cmake ninja-build pkg-config git
  qt6-base-dev libqt6opengl6-dev qt6-charts-dev qtkeychain-qt6-dev qt6-tools-dev qt6-tools-dev-tools qt6-l10n-tools linguist-qt6
  libgl-dev libcurl4-openssl-dev libzstd-dev nlohmann-json3-dev libcli11-dev libcpp-httplib-dev
  liburing-dev libssl-dev libicu-dev zlib1g-dev python3 xvfb xauth dpkg-dev file)
# Node.js and npm run test-only tools; a Node.js from elsewhere (which bundles npm) is fine too.
# The package validators are test-only too (tests/gui/test_package.sh), and so is the word list of
# tests/train/test_demo_speaks.cpp (wamerican's /usr/share/dict/words).
if [ "$mode" = test ]; then
  command -v npm >/dev/null || packages+=(nodejs npm)
  packages+=(appstream desktop-file-utils wamerican)
fi
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  say "installing: ${missing[*]}"
  as_root env DEBIAN_FRONTEND=noninteractive apt-get update -qq
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

# The CUDA preset is chosen automatically when the toolkit's compiler is present.
if ! command -v nvcc >/dev/null && [ -x /usr/local/cuda/bin/nvcc ]; then export PATH=/usr/local/cuda/bin:$PATH; fi
kind=cpu; command -v nvcc >/dev/null && kind=cuda
if [ "${DELTAFIN_REQUIRE_GPU:-}" = 1 ] && [ "$kind" != cuda ]; then
  say "--require-gpu: no CUDA compiler (nvcc) here, so no GPU test can run; install the CUDA toolkit"
  exit 1
fi
preset=${DELTAFIN_PRESET:-$([ "${CI:-}" = true ] && echo "ci-$kind" || echo "$kind")}
jobs=${DELTAFIN_JOBS:-$(nproc)}
say "preset $preset, $jobs build jobs"
cmake --preset "$preset" >/dev/null
cmake --build --preset "$preset" -j "$jobs"
bin="$here/build/$preset/bin"

case "$mode" in
  run)
    root=${DELTAFIN_MODEL_ROOT:-${XDG_DATA_HOME:-$HOME/.local/share}/deltafin/models/kimi-k3}
    # With a display, the desktop app (it offers the demo model when no K3 is installed).
    if [ -n "${DISPLAY:-}${WAYLAND_DISPLAY:-}" ] && [ -x "$bin/deltafin-studio" ]; then
      say "starting the Deltafin desktop app"
      exec "$bin/deltafin-studio" "$@"
    fi
    if [ -f "$root/config.json" ]; then
      say "starting Deltafin on $root"
      exec "$bin/deltafin" run --model-root "$root" --prompt "${DELTAFIN_PROMPT:-Hello}" --stats "$@"
    fi
    say "no Kimi K3 installed at $root: starting on the bundled demo (a small K3 trained on the King James Bible)"
    # Its DSpark drafter (build/$preset/demo-dspark, beside it) is found and used automatically.
    exec "$bin/deltafin" run --model-root "$here/build/$preset/demo-model" \
      --prompt "${DELTAFIN_PROMPT:-Hello}" --chat --max-new 80 --stats "$@"
    ;;
  test)
    export QT_QPA_PLATFORM=offscreen
    for dir in tests/node tests/node-serve; do
      npm ci --prefix "$dir" --no-audit --no-fund && continue
      # npm's own message above says why (offline, a lock file that does not verify, ...).
      if $ci; then say "npm ci --prefix $dir failed: CI=true needs every test-only package"; exit 1; fi
      say "npm ci --prefix $dir failed: the tests that need its packages will be skipped"
    done
    status=0
    ctest --preset "$preset" -j "$jobs" ${args[@]+"${args[@]}"} || status=$?
    # Skipped test functions, with their reasons (Qt Test prints "SKIP   : Class::function() reason").
    log="build/$preset/Testing/Temporary/LastTest.log"
    skips=$(grep -E '^SKIP +: ' "$log" 2>/dev/null || true)
    say "skipped test functions: $(grep -c . <<<"$skips" || true)"
    [ -z "$skips" ] || printf '%s\n' "$skips"
    exit "$status"
    ;;
  *) say "unknown mode '$mode': use run or test"; exit 2 ;;
esac

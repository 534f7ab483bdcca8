#!/usr/bin/env bash
# installers/bootstrap.sh's `test` mode with every tool it calls replaced by a stub (nothing is
# installed, built or downloaded): with CI=true a failing `npm ci` fails the run before any test
# runs and DELTAFIN_NO_SKIPS=1 reaches the tests; without CI it goes on, saying what will be
# skipped; the skipped test functions are counted at the end; --require-gpu reaches the tests as
# DELTAFIN_REQUIRE_GPU=1 (or stops at once where no CUDA compiler exists).
# usage: test_bootstrap_ci.sh SOURCE_DIR
set -uo pipefail
src=$1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

mkdir -p "$work/tree/installers" "$work/stubs"
cp "$src/installers/bootstrap.sh" "$work/tree/installers/"
stub() { printf '#!/usr/bin/env bash\n%s\n' "$2" >"$work/stubs/$1"; chmod +x "$work/stubs/$1"; }
stub dpkg-query 'echo "install ok installed"'
stub apt-get 'echo "apt-get must not run: every package is installed" >&2; exit 1'
stub cmake 'exit 0'
stub npm 'echo "npm $*" >>"$STUB_DIR/npm.calls"; [ "${STUB_NPM_FAIL:-0}" != 1 ] || { echo "npm ERR! integrity checksum failed" >&2; exit 1; }'
stub ctest 'env | grep "^DELTAFIN_" >"$STUB_DIR/ctest.env"; echo "ctest $*" >"$STUB_DIR/ctest.calls"
log=build/$DELTAFIN_PRESET/Testing/Temporary/LastTest.log; mkdir -p "$(dirname "$log")"
printf "PASS   : A::one()\nSKIP   : A::two() node is not installed\n   Loc: [a.cpp(3)]\nSKIP   : B::three() no GPU\n" >"$log"
exit "${STUB_CTEST_RC:-0}"'

run() {  # run NAME [VAR=VALUE ...] -- ARGS: output in $work/NAME.out, status in $work/NAME.rc
  local name=$1; shift
  local vars=()
  while [ "$1" != -- ]; do vars+=("$1"); shift; done; shift
  rm -f "$work"/stubs/*.calls "$work"/stubs/ctest.env
  (cd "$work/tree" && env -u CI -u DELTAFIN_NO_SKIPS -u DELTAFIN_REQUIRE_GPU PATH="$work/stubs:$PATH" \
     STUB_DIR="$work/stubs" DELTAFIN_PRESET=ci-cpu DELTAFIN_JOBS=1 "${vars[@]}" installers/bootstrap.sh test "$@") \
    >"$work/$name.out" 2>&1
  echo $? >"$work/$name.rc"
}
rc() { cat "$work/$1.rc"; }

run ci-npm-fails CI=true STUB_NPM_FAIL=1 --
[ "$(rc ci-npm-fails)" != 0 ] || fail "CI=true with a failing npm ci exited 0: $(cat "$work/ci-npm-fails.out")"
[ ! -e "$work/stubs/ctest.calls" ] || fail "CI=true with a failing npm ci still ran the tests"
grep -q "npm ci --prefix tests/node failed" "$work/ci-npm-fails.out" || fail "no message naming the failed npm step"

run local-npm-fails STUB_NPM_FAIL=1 --
[ "$(rc local-npm-fails)" = 0 ] || fail "without CI a failing npm ci failed the run: $(cat "$work/local-npm-fails.out")"
[ -e "$work/stubs/ctest.calls" ] || fail "without CI a failing npm ci stopped the tests"
grep -q "will be skipped" "$work/local-npm-fails.out" || fail "without CI the skip is not announced"
grep -q "DELTAFIN_NO_SKIPS" "$work/stubs/ctest.env" && fail "DELTAFIN_NO_SKIPS set outside CI"

run ci-ok CI=true -- -R something
[ "$(rc ci-ok)" = 0 ] || fail "CI=true with everything working failed: $(cat "$work/ci-ok.out")"
grep -qx "DELTAFIN_NO_SKIPS=1" "$work/stubs/ctest.env" || fail "CI=true did not set DELTAFIN_NO_SKIPS=1 for the tests"
grep -q -- "-R something" "$work/stubs/ctest.calls" || fail "ctest arguments not passed on: $(cat "$work/stubs/ctest.calls")"
grep -q "skipped test functions: 2" "$work/ci-ok.out" || fail "skip count missing: $(cat "$work/ci-ok.out")"
grep -q "SKIP   : B::three() no GPU" "$work/ci-ok.out" || fail "skip reasons not listed"

run tests-fail STUB_CTEST_RC=8 --
[ "$(rc tests-fail)" = 8 ] || fail "a failing ctest gave status $(rc tests-fail), not its own (8)"

run gpu -- --require-gpu
if command -v nvcc >/dev/null || [ -x /usr/local/cuda/bin/nvcc ]; then
  [ "$(rc gpu)" = 0 ] || fail "--require-gpu failed: $(cat "$work/gpu.out")"
  grep -qx "DELTAFIN_REQUIRE_GPU=1" "$work/stubs/ctest.env" || fail "--require-gpu did not reach the tests"
  grep -q -- "--require-gpu" "$work/stubs/ctest.calls" && fail "--require-gpu was passed on to ctest"
else
  [ "$(rc gpu)" != 0 ] || fail "--require-gpu without a CUDA compiler ran on"
fi
echo "PASS: bootstrap.sh test mode (CI and local npm failures, skip count, --require-gpu)"

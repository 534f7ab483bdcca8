#!/usr/bin/python3
"""Paired A/B wall times of two commands, run alternately (A B A B ...), with medians.

  decode_ab.py --runs N --warmup W -- 'COMMAND A' 'COMMAND B'

Each command is split as a shell splits words and run without a shell, its output discarded.
Prints every pair, then the median wall seconds of A and of B and the median of the per-pair
ratios A/B (pairing keeps the ratio meaningful when a shared machine's speed drifts). Used for
the CPU decode figures of docs/PERFORMANCE.md ("Precision"), e.g.

  decode_ab.py --runs 7 -- 'build/ci-cpu/bin/deltafin generate-ids --model-root SLICE --ids 4096,72,101 --max-new 16' \\
                           '/tmp/deltafin-before generate-ids --model-root SLICE --ids 4096,72,101 --max-new 16'
"""
import argparse
import shlex
import statistics
import subprocess
import time


def wall(cmd):
    t0 = time.monotonic()
    r = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    t = time.monotonic() - t0
    if r.returncode != 0:
        raise SystemExit(f'{cmd[0]} exited with {r.returncode}')
    return t


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--runs', type=int, default=5)
    ap.add_argument('--warmup', type=int, default=1)
    ap.add_argument('a')
    ap.add_argument('b')
    o = ap.parse_args()
    a, b = shlex.split(o.a), shlex.split(o.b)
    for _ in range(o.warmup):
        wall(a)
        wall(b)
    ta, tb = [], []
    for i in range(o.runs):
        ta.append(wall(a))
        tb.append(wall(b))
        print(f'pair {i + 1}: A {ta[-1]:.3f} s  B {tb[-1]:.3f} s  A/B {ta[-1] / tb[-1]:.3f}', flush=True)
    ratios = [x / y for x, y in zip(ta, tb)]
    print(f'median A {statistics.median(ta):.3f} s (min {min(ta):.3f}, max {max(ta):.3f}); '
          f'median B {statistics.median(tb):.3f} s (min {min(tb):.3f}, max {max(tb):.3f}); '
          f'median A/B {statistics.median(ratios):.3f} (min {min(ratios):.3f}, max {max(ratios):.3f})')


if __name__ == '__main__':
    main()

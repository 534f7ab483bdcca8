#!/usr/bin/python3
"""Paired A/B wall and CPU times of two commands, run alternately (A B A B ...), with medians.

  decode_ab.py --runs N --warmup W -- 'COMMAND A' 'COMMAND B'

Each command is split as a shell splits words and run without a shell, its output discarded.
Prints every pair, then for wall seconds and for user + sys CPU seconds the medians of A and of B
and the median of the per-pair ratios A/B (pairing keeps the ratio meaningful when a shared
machine's speed drifts). Used for
the CPU decode figures of docs/PERFORMANCE.md ("Precision"), e.g.

  decode_ab.py --runs 7 -- 'build/ci-cpu/bin/deltafin generate-ids --model-root SLICE --ids 4096,72,101 --max-new 16' \\
                           '/tmp/deltafin-before generate-ids --model-root SLICE --ids 4096,72,101 --max-new 16'
"""
import argparse
import resource
import shlex
import statistics
import subprocess
import time


def cpu_of_children():
    u = resource.getrusage(resource.RUSAGE_CHILDREN)
    return u.ru_utime + u.ru_stime


def wall(cmd):
    """(wall s, user + sys s) of one run."""
    c0, t0 = cpu_of_children(), time.monotonic()
    r = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    t, c = time.monotonic() - t0, cpu_of_children() - c0
    if r.returncode != 0:
        raise SystemExit(f'{cmd[0]} exited with {r.returncode}')
    return t, c


def summary(what, ta, tb):
    ratios = [x / y for x, y in zip(ta, tb)]
    med = statistics.median
    print(f'{what}: median A {med(ta):.3f} s (min {min(ta):.3f}, max {max(ta):.3f}); '
          f'median B {med(tb):.3f} s (min {min(tb):.3f}, max {max(tb):.3f}); '
          f'median A/B {med(ratios):.3f} (min {min(ratios):.3f}, max {max(ratios):.3f})')


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
    ra, rb = [], []
    for i in range(o.runs):
        ra.append(wall(a))
        rb.append(wall(b))
        print(f'pair {i + 1}: A {ra[-1][0]:.3f} s ({ra[-1][1]:.3f} CPU s)  B {rb[-1][0]:.3f} s ({rb[-1][1]:.3f} CPU s)', flush=True)
    summary('wall', [r[0] for r in ra], [r[0] for r in rb])
    summary('user + sys', [r[1] for r in ra], [r[1] for r in rb])

if __name__ == '__main__':
    main()

#!/usr/bin/env python3
"""Checks that every #include "folder/file.h" in engine/, kernels/ and app/ goes down the layering.

Each folder may include headers of its own folder and of the folders ALLOWED lists for it; anything
else (an upward or sideways edge) is printed with its file and line, and the exit status is 1.
ALLOWED is the dependency table of the engine (docs/ENGINE.md): it must stay a DAG, which
main() checks too. With --cmake FILE (the build's engine-layering.txt, one "folder:dep;dep" line
per engine library, written by engine/CMakeLists.txt) it also checks that every library links only
folders the table allows, so the build's layering and this table agree.
Usage: tools/check_layering.py [repository root] [--cmake build/engine-layering.txt]
"""
import os
import re
import sys

# folder -> folders it may include (transitively closed by hand: each lists every lower folder it uses).
ALLOWED = {
    "kernels/cpu": set(),
    "kernels/cuda": {"kernels/cpu"},
    # The models' own GPU ops, over the shared kernels (kernels/cuda never includes them).
    "kernels/cuda/k3": {"kernels/cpu", "kernels/cuda"},
    "kernels/cuda/qwen3": {"kernels/cpu", "kernels/cuda"},
    # Kernel versions the product never runs (the fp32 expert MLP among them): only the benchmark
    # (kernels/cuda/bench) and the checkers include them; no product folder may. The lab's variants of
    # K3's ops build on those ops' own pieces (cuda/k3/gemm64_tiles.cuh).
    "kernels/cuda/lab": {"kernels/cpu", "kernels/cuda", "kernels/cuda/k3"},
    "engine/base": {"generated"},
    "engine/model": {"engine/base"},
    "engine/tokenizer": {"engine/base"},
    "engine/stream": {"engine/base", "engine/model"},
    "engine/install": {"engine/base", "engine/model", "engine/stream", "generated"},
    "engine/store": {"engine/base", "engine/model", "engine/stream", "engine/install"},
    "engine/synth": {"engine/base", "engine/model", "engine/tokenizer"},
    "engine/runtime": {"engine/base", "engine/model", "engine/tokenizer", "engine/stream", "engine/store",
                       "kernels/cpu", "kernels/cuda", "kernels/cuda/qwen3"},
    "engine/reference": {"engine/base", "engine/model", "engine/tokenizer", "engine/stream", "engine/store",
                         "engine/runtime", "kernels/cpu"},
    "engine/drafts": {"engine/base", "engine/model", "engine/tokenizer", "engine/stream", "engine/store",
                      "engine/runtime", "kernels/cpu", "kernels/cuda", "kernels/cuda/qwen3"},
    "engine/cuda": {"engine/base", "engine/model", "engine/tokenizer", "engine/stream", "engine/store",
                    "engine/runtime", "engine/drafts", "engine/placement", "kernels/cpu", "kernels/cuda",
                    "kernels/cuda/k3"},
    "engine/placement": {"engine/base", "engine/model", "engine/tokenizer", "engine/stream", "engine/store",
                         "engine/runtime", "engine/drafts", "kernels/cpu"},
    # Measurement code, linked only by the CLI and the tests that measure (never by the facade).
    "engine/bench": {"engine/base", "engine/model", "engine/tokenizer", "engine/stream", "engine/store",
                     "engine/runtime", "engine/drafts", "engine/placement", "engine/cuda", "kernels/cpu",
                     "kernels/cuda", "kernels/cuda/k3"},
    "engine/serve": {"engine/base", "engine/model", "engine/tokenizer", "engine/stream", "engine/store",
                     "engine/runtime", "engine/drafts"},
    # The public API (headers in engine/include/deltafin/, code in engine/facade/): on top of the
    # engine, below the applications. It does not reach the server or the measurement code.
    "engine/facade": {"engine/base", "engine/model", "engine/tokenizer", "engine/stream", "engine/store",
                      "engine/runtime", "engine/reference", "engine/drafts", "engine/cuda", "engine/placement",
                      "kernels/cpu", "kernels/cuda", "kernels/cuda/k3", "generated"},
}
# The applications sit on top: they may include any engine or kernel folder.
TOP = ("app/",)
# Folders that an #include's first path component names, besides engine/<x> and kernels/<x>.
GENERATED = {"deltafin": "generated"}  # deltafin/build_info.h, written by CMake


def target_folder(root, inc):
    first = inc.split("/")[0]
    if first == "deltafin" and os.path.exists(os.path.join(root, "engine", "include", inc)):
        return "engine/facade"  # the public headers are the facade's
    if first in GENERATED:
        return GENERATED[first]
    if first == "cpu":
        return "kernels/cpu"
    if first == "cuda":  # engine/cuda/..., kernels/cuda/<model>/... or kernels/cuda/...
        if os.path.exists(os.path.join(root, "engine", inc)):
            return "engine/cuda"
        sub = "kernels/" + "/".join(inc.split("/")[:2])
        return sub if sub in ALLOWED else "kernels/cuda"
    if os.path.isdir(os.path.join(root, "engine", first)):
        return "engine/" + first
    return None  # a test-support or local header


def acyclic(table):
    state = {}

    def visit(n):
        if state.get(n) == 1:
            return False
        if state.get(n) == 2:
            return True
        state[n] = 1
        ok = all(visit(m) for m in table.get(n, ()) if m in table)
        state[n] = 2
        return ok

    return all(visit(n) for n in table)


def check_cmake(path):
    """Counts the library edges in the build's engine-layering.txt that the table does not allow."""
    bad = 0
    with open(path) as f:
        for line in f:
            folder, _, deps = line.strip().partition(":")
            if not folder:
                continue
            allowed = ALLOWED.get("engine/" + folder, set())
            for dep in filter(None, deps.split(";")):
                if "engine/" + dep not in allowed:
                    print(f"{path}: the engine/{folder} library links engine/{dep}, which the table does not allow")
                    bad += 1
    return bad


def main():
    args = sys.argv[1:]
    cmake_table = None
    if "--cmake" in args:
        i = args.index("--cmake")
        cmake_table = args[i + 1]
        del args[i:i + 2]
    root = args[0] if args else os.path.join(os.path.dirname(__file__), "..")
    if not acyclic(ALLOWED):
        print("check_layering: the ALLOWED table has a cycle")
        return 1
    bad = check_cmake(cmake_table) if cmake_table else 0
    for top in ("engine", "kernels", "app"):
        for dirpath, _, files in os.walk(os.path.join(root, top)):
            rel_dir = os.path.relpath(dirpath, root)
            parts = rel_dir.split(os.sep)
            folder = "/".join(parts[:2])
            if folder == "engine/include":
                folder = "engine/facade"
            if "/".join(parts[:3]) in ALLOWED:
                folder = "/".join(parts[:3])  # kernels/cuda/k3, kernels/cuda/qwen3, kernels/cuda/lab
            if "/".join(parts[:3]) == "kernels/cuda/bench":
                # measurement code over the kernels it measures, the lab's included
                folder_allowed = ALLOWED["kernels/cuda"] | {"kernels/cuda/lab"}
            elif "/".join(parts[:4]) == "kernels/cuda/k3/bench":
                # the K3 bench: K3's ops, the shared bench helpers and the lab's variants it compares
                folder_allowed = ALLOWED["kernels/cuda/k3"] | {"kernels/cuda/lab"}
            else:
                folder_allowed = ALLOWED.get(folder)
            for name in files:
                if not re.search(r"\.(h|hpp|cpp|cu|cuh)$", name):
                    continue
                path = os.path.join(dirpath, name)
                with open(path, errors="replace") as f:
                    for line_no, line in enumerate(f, 1):
                        m = re.match(r'\s*#\s*include\s+"([^"]+)"', line)
                        if not m or "/" not in m.group(1):
                            continue
                        tgt = target_folder(root, m.group(1))
                        if tgt is None or tgt == folder or folder.startswith(TOP):
                            continue
                        if folder_allowed is None or tgt not in folder_allowed:
                            print(f"{os.path.relpath(path, root)}:{line_no}: {folder} includes {m.group(1)} ({tgt})")
                            bad += 1
    print(f"check_layering: {bad} include(s) or library edge(s) against the layering")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())

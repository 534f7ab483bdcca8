#!/usr/bin/env python3
"""One-line mutants of the chat renderer, the MoE router and the MXFP4 decode, each compiled and
run against the tests that cover that code; every mutant must make at least one test fail.

usage: tests/mutation/run.py [--preset ci-cpu] [--only ID_REGEX] [--list]

Works in place on this checkout: each mutant replaces one exact, unique line fragment, builds the
covering test targets in build/<preset>, runs them with ctest, and restores the file (also on
Ctrl-C or an error). Needs a configured build (cmake --preset <preset>). Prints one line per
mutant (caught by which tests and test functions, or SURVIVED) and exits 1 if any survived or did
not compile.
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))

# Per area: the file under mutation, the targets to build and the ctest regex to run.
AREAS = {
    "chat": ("engine/tokenizer/chat_template.cpp", ["test_chat_template", "test_chat_renderings"],
             "^test_chat_(template|renderings)$"),
    "router": ("engine/runtime/moe_router.cpp", ["test_moe_router", "test_k3_golden", "test_batch_invariance"],
               "^test_(moe_router|k3_golden|batch_invariance)$"),
    "mxfp4-table": ("kernels/cpu/dispatch.cpp", ["test_cpu_kernels", "test_k3_golden"], "^test_(cpu_kernels|k3_golden)$"),
    "mxfp4-scalar": ("kernels/cpu/gemm_scalar.cpp", ["test_cpu_kernels", "test_k3_golden"],
                     "^test_(cpu_kernels|k3_golden)$"),
    "mxfp4-avx2": ("kernels/cpu/gemm_avx2.cpp", ["test_cpu_kernels", "test_k3_golden"], "^test_(cpu_kernels|k3_golden)$"),
    "mxfp4-avx512": ("kernels/cpu/gemm_avx512.cpp", ["test_cpu_kernels", "test_k3_golden"],
                     "^test_(cpu_kernels|k3_golden)$"),
    "mxfp4-scale": ("kernels/cpu/gemm.h", ["test_cpu_kernels", "test_k3_golden"], "^test_(cpu_kernels|k3_golden)$"),
}

# (id, area, exact fragment, replacement). Each fragment must occur exactly once in its file.
MUTANTS = [
    # Chat renderer (engine/tokenizer/chat_template.cpp)
    ("chat-drop-think-close", "chat", '      close_tag(sink, "think");\n', ""),
    ("chat-tool-as-assistant", "chat", 'if (m.role == "assistant") {', 'if (m.role == "assistant" || m.role == "tool") {'),
    ("chat-invert-empty-reasoning", "chat", "if (!m.reasoning.empty()) {", "if (m.reasoning.empty()) {"),
    ("chat-drop-reasoning-text", "chat", "      sink.text(m.reasoning);\n", ""),
    ("chat-drop-end-of-msg", "chat", "  close_tag(sink, \"message\");\n  sink.special(kEndOfMsg);\n}",
     "  close_tag(sink, \"message\");\n}"),
    ("chat-swap-generation-block", "chat", 'options.thinking ? "think" : "response"', 'options.thinking ? "response" : "think"'),
    ("chat-close-as-open", "chat", "  sink.special(kClose);\n", "  sink.special(kOpen);\n"),
    ("chat-drop-response-close", "chat", '    close_tag(sink, "response");\n', ""),
    ("chat-role-attribute-name", "chat", 'std::string attributes = attribute("role", m.role);',
     'std::string attributes = attribute("name", m.role);'),
    ("chat-text-allows-specials", "chat", "tok_.encode(text, /*allow_special=*/false)", "tok_.encode(text, /*allow_special=*/true)"),
    ("chat-escape-quote-first", "chat", "    if (c == '&') amp += \"&amp;\";", "    if (c == '\"') amp += \"&quot;\";"),
    # MoE router (engine/runtime/moe_router.cpp)
    ("router-invert-tie-break", "router", ": a < b; }", ": a > b; }"),
    ("router-invert-order", "router", "key[a] > key[b] :", "key[a] < key[b] :"),
    ("router-drop-bias", "router", "key[e] = s[e] + bias[e];", "key[e] = s[e];"),
    ("router-subtract-bias", "router", "key[e] = s[e] + bias[e];", "key[e] = s[e] - bias[e];"),
    ("router-weight-by-key", "router", "const float sc = s[order[i]];", "const float sc = key[order[i]];"),
    ("router-sum-keys", "router", "sum += s[order[i]];", "sum += key[order[i]];"),
    ("router-unsorted-ids", "router", "  std::sort(order.begin(), order.end());\n", ""),
    ("router-invert-renormalize", "router", "(renormalize ? sc / (sum + 1e-20f) : sc)", "(!renormalize ? sc / (sum + 1e-20f) : sc)"),
    ("router-divide-scaling", "router", ": sc) * scaling;", ": sc) / scaling;"),
    ("router-sum-one-short", "router", "for (int i = 0; i < k; ++i) sum +=", "for (int i = 1; i < k; ++i) sum +="),
    # MXFP4 decode: the E2M1 table, the scalar reference, the AVX2/AVX-512 shuffle table, the scales
    ("mxfp4-table-1.5-to-1.25", "mxfp4-table", "0.f, .5f, 1.f, 1.5f, 2.f,", "0.f, .5f, 1.f, 1.25f, 2.f,"),
    ("mxfp4-table-6-to-8", "mxfp4-table", "3.f, 4.f, 6.f, -0.f,", "3.f, 4.f, 8.f, -0.f,"),
    ("mxfp4-table-negative-zero", "mxfp4-table", "6.f, -0.f, -.5f", "6.f, 0.f, -.5f"),
    ("mxfp4-table-sign-3", "mxfp4-table", "-2.f, -3.f, -4.f", "-2.f, 3.f, -4.f"),
    ("mxfp4-e8m0-shift", "mxfp4-table", "static_cast<uint32_t>(s) << 23;", "static_cast<uint32_t>(s) << 22;"),
    ("mxfp4-e8m0-zero", "mxfp4-table", "if (s == 0) return 0x1p-127f;", "if (s == 0) return 0x1p-126f;"),
    ("mxfp4-scalar-swap-nibbles", "mxfp4-scalar", "acc += kE2M1[byte & 15] * s", "acc += kE2M1[byte >> 4] * s"),
    ("mxfp4-scalar-odd-column", "mxfp4-scalar", "* s * x[b * 32 + 2 * j + 1];", "* s * x[b * 32 + 2 * j];"),
    ("mxfp4-scalar-block-scale", "mxfp4-scalar", "const float s = e8m0_to_float(srow[b]);",
     "const float s = e8m0_to_float(srow[0]);"),
    ("mxfp4-avx2-shuffle-3", "mxfp4-avx2", "_mm_setr_epi8(0, 1, 2, 3, 4, 6, 8, 12,", "_mm_setr_epi8(0, 1, 2, 3, 4, 7, 8, 12,"),
    ("mxfp4-avx2-negative-6", "mxfp4-avx2", "-3, -4, -6, -8, -12);", "-3, -4, -6, -8, 12);"),
    ("mxfp4-avx2-nibble-shift", "mxfp4-avx2", "_mm_srli_epi16(bytes, 4)", "_mm_srli_epi16(bytes, 3)"),
    ("mxfp4-avx2-permute-odd", "mxfp4-avx2", "xp[b + 8 + j] = x[b + 2 * j + 1];", "xp[b + 8 + j] = x[b + 2 * j];"),
    ("mxfp4-avx2-one-ulp", "mxfp4-avx2", "for (int r = 0; r < R; ++r) y[r * ldy + o] = hsum(acc[o][r]);",
     "for (int r = 0; r < R; ++r) y[r * ldy + o] = std::nextafter(hsum(acc[o][r]), 1e30f);"),
    ("mxfp4-avx512-lut-4", "mxfp4-avx512", "3.f, 4.f, 6.f, 8.f, 12.f, -0.f,", "3.f, 4.f, 6.f, 9.f, 12.f, -0.f,"),
    ("mxfp4-avx512-nibble-shift", "mxfp4-avx512", "_mm512_srli_epi32(v, 4)", "_mm512_srli_epi32(v, 5)"),
    ("mxfp4-avx512-one-ulp", "mxfp4-avx512", "for (int r = 0; r < R; ++r) y[r * ldy + o] = hsum(acc[o][r]);",
     "for (int r = 0; r < R; ++r) y[r * ldy + o] = std::nextafter(hsum(acc[o][r]), 1e30f);"),
    ("mxfp4-half-scale", "mxfp4-scale", "uint32_t(s - 1) << 23", "uint32_t(s) << 23"),
]


def sh(cmd, log):
    with open(log, "w") as f:
        return subprocess.run(cmd, cwd=ROOT, stdout=f, stderr=subprocess.STDOUT).returncode


def failures(log_text):
    """The failing ctest tests and Qt Test functions in a ctest log."""
    tests = sorted(set(re.findall(r"^\s*\d+ - (\S+) \(Failed\)", log_text, re.M)))
    funcs = sorted(set(re.findall(r"^(?:FAIL!  |XPASS  ): (\w+::\w+)\(", log_text, re.M)))
    return tests, funcs


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--preset", default="ci-cpu")
    ap.add_argument("--only", default="", help="a regular expression the mutant ids must match")
    ap.add_argument("--list", action="store_true")
    args = ap.parse_args()
    chosen = [m for m in MUTANTS if re.search(args.only, m[0])]
    if args.list:
        for mid, area, old, new in chosen:
            print(f"{mid}: {AREAS[area][0]}: {old.strip()!r} -> {new.strip()!r}")
        return 0
    env_jobs = os.environ.get("DELTAFIN_JOBS", "2")
    work = tempfile.mkdtemp(prefix="deltafin-mutation-")
    bad = []
    for mid, area, old, new in chosen:
        path, targets, regex = AREAS[area]
        full = os.path.join(ROOT, path)
        with open(full) as f:
            original = f.read()
        if original.count(old) != 1:
            print(f"{mid}: the fragment occurs {original.count(old)} times in {path}, not once", flush=True)
            bad.append(mid)
            continue
        try:
            with open(full, "w") as f:
                f.write(original.replace(old, new))
            build_log = os.path.join(work, mid + ".build.log")
            if sh(["cmake", "--build", "--preset", args.preset, "-j", env_jobs, "--target", *targets], build_log):
                print(f"{mid}: DID NOT COMPILE (see {build_log})", flush=True)
                bad.append(mid)
                continue
            test_log = os.path.join(work, mid + ".test.log")
            rc = sh(["ctest", "--preset", args.preset, "-j", env_jobs, "-R", regex, "--output-on-failure"], test_log)
            with open(test_log, errors="replace") as f:
                tests, funcs = failures(f.read())
            if rc == 0 or not tests:
                print(f"{mid}: SURVIVED ({path})", flush=True)
                bad.append(mid)
            else:
                print(f"{mid}: caught by {', '.join(tests)} [{', '.join(funcs) or 'crash/timeout'}]", flush=True)
        finally:
            with open(full, "w") as f:
                f.write(original)
    # Rebuild the restored sources so the build tree matches the checkout again.
    sh(["cmake", "--build", "--preset", args.preset, "-j", env_jobs, "--target",
        *sorted({t for m in chosen for t in AREAS[m[1]][1]})], os.path.join(work, "restore.build.log"))
    print(f"{len(chosen) - len(bad)} of {len(chosen)} mutants caught; logs in {work}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())

// deltafin-qwen3-gpu-check: the Qwen3 drafter's GPU checks (and, with --bench, its throughput) on
// machines without Qt. Exit 0: all passed; 1: a check failed; 2: no GPU backend here (skipped).
#include <cstdio>
#include <cstring>
#include <fstream>
#include <string>

#include "qwen3_gpu_checks.h"

using namespace deltafin::qwen3_checks;

int main(int argc, char** argv) {
  std::string dir, json;
  bool run_bench = false, synthetic = true;
  int reps = 3;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--fixture" && i + 1 < argc) dir = argv[++i];
    else if (a == "--bench") run_bench = true;
    else if (a == "--no-synthetic") synthetic = false;
    else if (a == "--reps" && i + 1 < argc) reps = std::max(1, std::atoi(argv[++i]));
    else if (a == "--json" && i + 1 < argc) json = argv[++i];
    else {
      std::fprintf(stderr, "usage: %s --fixture QWEN3_TINY_DIR [--bench [--no-synthetic] [--reps N] [--json FILE]]\n",
                   argv[0]);
      return 64;
    }
  }
  if (dir.empty()) {
    std::fprintf(stderr, "--fixture QWEN3_TINY_DIR is required (shared/fixtures/qwen3-tiny)\n");
    return 64;
  }
  const std::string why = gpu_unavailable_reason(dir);
  if (!why.empty()) {
    std::printf("SKIP: %s\n", why.c_str());
    return 2;
  }
  bool ok = true;
  for (const Outcome& o : {golden(dir), gpu_matches_cpu(dir, 11), gpu_matches_cpu(dir, 12)}) {
    std::printf("%s  %s: %s\n", o.ok ? "PASS" : "FAIL", o.name.c_str(), o.detail.c_str());
    ok &= o.ok;
  }
  if (run_bench) {
    const auto rows = bench(dir, synthetic, reps);
    std::printf("\n%-18s %-5s %8s %12s %12s %10s %10s\n", "model", "dev", "context", "prefill t/s", "decode t/s",
                "draft4 ms", "weights MB");
    std::string js = "[\n";
    for (size_t i = 0; i < rows.size(); ++i) {
      const BenchRow& r = rows[i];
      std::printf("%-18s %-5s %8d %12.0f %12.1f %10.3f %10.1f\n", r.model.c_str(), r.device.c_str(), r.context,
                  r.prefill_tok_s, r.decode_tok_s, r.draft4_ms, r.weight_bytes / 1e6);
      char buf[512];
      std::snprintf(buf, sizeof buf,
                    "  {\"model\": \"%s\", \"device\": \"%s\", \"context\": %d, \"prefill_tok_s\": %.1f, "
                    "\"decode_tok_s\": %.2f, \"draft4_ms\": %.4f, \"weight_bytes\": %llu}%s\n",
                    r.model.c_str(), r.device.c_str(), r.context, r.prefill_tok_s, r.decode_tok_s, r.draft4_ms,
                    static_cast<unsigned long long>(r.weight_bytes), i + 1 < rows.size() ? "," : "");
      js += buf;
    }
    js += "]\n";
    if (!json.empty()) std::ofstream(json) << js;
  }
  return ok ? 0 : 1;
}

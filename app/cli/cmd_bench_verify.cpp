// `deltafin bench-verify`: cost of T-row verify passes vs a plain step, and the
// acceptance at which drafting breaks even. Prints JSON and saves it with --out.
#include <cstdio>
#include <fstream>
#include <memory>
#include <sstream>

#include "base/error.h"
#include "cli_common.h"
#include "commands.h"
#include "bench/gpu_verify_bench.h"
#include "bench/verifier_bench.h"
#include "deltafin/backend.h"

namespace deltafin::cli {

void add_bench_verify(CLI::App& app) {
  struct Opts {
    std::string root, rows = "1,2,4,8", experts = "resident", out, device = "cpu";
    int context = 64, reps = 5, threads = 0;
  };
  auto o = std::make_shared<Opts>();
  auto* c =
      app.add_subcommand("bench-verify", "Time verify passes of T rows and print the break-even acceptance (JSON)");
  c->add_option("--model-root", o->root, "Model folder")->required();
  c->add_option("--rows", o->rows, "Row counts T, comma separated")->capture_default_str();
  c->add_option("--experts", o->experts, "resident (page cache, warmed) or streamed (read from disk every pass)")
      ->check(CLI::IsMember({"resident", "streamed"}))
      ->capture_default_str();
  c->add_option("--context", o->context, "Tokens prefilled before timing")
      ->check(CLI::Range(0, 1 << 20))
      ->capture_default_str();
  c->add_option("--reps", o->reps, "Timed passes per T (median reported)")
      ->check(CLI::Range(1, 1000))
      ->capture_default_str();
  c->add_option("--threads", o->threads, "Worker threads (0 = all cores)");
  c->add_option("--out", o->out, "Also write the JSON here");
  add_device_option(c, o->device);
  c->callback([o] {
    apply_threads(o->threads);
    if (wants_cuda(o->device)) {  // a Markdown table of GPU pass costs (--out unused)
      std::vector<int> rows;
      for (int32_t t : parse_ids(o->rows)) rows.push_back(t);
      std::printf("%s", cuda_bench_verify(o->root, rows, o->context, o->reps, o->experts).c_str());
      return;
    }
    VerifyBenchOptions b;
    b.model_root = o->root;
    b.context = o->context;
    b.reps = o->reps;
    b.streamed = o->experts == "streamed";
    b.rows.clear();
    for (int32_t t : parse_ids(o->rows)) {
      if (t < 1 || t > 64) throw Error("--rows entry " + std::to_string(t) + " is outside 1..64");
      b.rows.push_back(t);
    }
    const std::string json = run_verify_bench(b).json();
    std::printf("%s\n", json.c_str());
    if (!o->out.empty()) {
      std::ofstream f(o->out);
      if (!(f << json << "\n")) throw Error("cannot write " + o->out, "choose a writable --out path");
    }
  });
}

}  // namespace deltafin::cli

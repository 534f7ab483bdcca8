// `deltafin doctor`: an offline audit of the install, the stream cache and the backends.
#include <cstdio>
#include <memory>

#include "commands.h"
#include "install/doctor.h"
#include "model/model_root.h"

namespace deltafin::cli {

void add_doctor(CLI::App& app) {
  struct Opts {
    std::string root;
    bool verify = false, json = false;
  };
  auto o = std::make_shared<Opts>();
  auto* c = app.add_subcommand(
      "doctor", "Check what is installed, complete and verified, and what to do about problems (offline)");
  c->add_option("--model-root", o->root,
                "K3's folder (default $DELTAFIN_MODEL_ROOT or ~/.local/share/deltafin/models/kimi-k3)");
  c->add_flag("--verify", o->verify, "Re-hash every installed file against the Hub's hash (reads everything)");
  c->add_flag("--json", o->json, "Print the report as JSON");
  c->callback([o] {
    auto report = run_doctor(resolve_model_root(o->root), o->verify, [&](const std::string& what) {
      if (!o->json) std::fprintf(stderr, "%s\n", what.c_str());
    });
    std::fputs((o->json ? report.json() + "\n" : report.text()).c_str(), stdout);
    exit_code = report.healthy() ? 0 : 1;
  });
}

}  // namespace deltafin::cli

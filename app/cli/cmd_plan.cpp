// `deltafin plan`: where the model's spine and expert tiers would live on this machine (or on one
// described by the flags), the predicted speed, its bound, and the change that would help most.
#include <cstdio>
#include <memory>

#include "cli_common.h"
#include "commands.h"
#include "placement/plan_report.h"
#include "plan_flags.h"

namespace deltafin::cli {

void add_plan(CLI::App& app) {
  struct Opts {
    std::string root;
    PlanFlags flags;
    bool json = false;
    int threads = 0;
  };
  auto o = std::make_shared<Opts>();
  auto* c =
      app.add_subcommand("plan", "Show where the model's layers and expert tiers would live and the predicted speed");
  c->add_option("--model-root", o->root, "Model folder (a folder with only config.json is planned from the config)");
  o->flags.add_budget_options(c);
  o->flags.add_rate_options(c);
  c->add_flag("--json", o->json, "Print the plan as JSON");
  c->add_option("--threads", o->threads, "CPU threads the rates are measured with (0 = all cores)");
  c->callback([o] {
    apply_threads(o->threads);
    if (o->root.empty()) o->root = default_model_root();
    auto say = [](const std::string& s) { std::fprintf(stderr, "%s\n", s.c_str()); };
    const placement::Plan p = o->flags.make(o->root, say);
    if (o->json) {
      std::printf("%s\n", placement::plan_json(p).c_str());
      return;
    }
    std::printf("%s", placement::plan_table(p).c_str());
    std::printf("%s\n", placement::plan_rates(p).c_str());
    std::printf("%s\n", placement::plan_summary(p).c_str());
    const std::string help = placement::what_would_help(p);
    std::printf("what would help most: %s\n",
                help.empty() ? "nothing the planner tries (more RAM, a GPU, a second disk) gains 5%" : help.c_str());
  });
}

}  // namespace deltafin::cli

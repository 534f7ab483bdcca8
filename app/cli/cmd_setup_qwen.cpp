// `deltafin setup-qwen`: installs only the Qwen3 base add-ons next to K3.
#include <memory>

#include "commands.h"
#include "install/setup.h"

namespace deltafin::cli {

struct HubCliOptions {
  std::string hub_url, model_root, revision, token_file, k3_repo, dspark_repo, qwen_repos;
  bool dry_run = false, json = false;
  int parts = 4;
  std::string part_size = "32MiB";
  long stall_timeout = 60;
};
void bind_hub_options(CLI::App* c, HubCliOptions& o);
SetupOptions setup_options_from(const HubCliOptions& o);
void run_setup_command(const SetupOptions& s, bool json);

void add_setup_qwen(CLI::App& app) {
  auto o = std::make_shared<HubCliOptions>();
  auto* c = app.add_subcommand("setup-qwen", "Install the Qwen3 0.6B and 1.7B base models (add-ons)");
  bind_hub_options(c, *o);
  c->callback([o] {
    SetupOptions s = setup_options_from(*o);
    s.k3 = false;
    s.with_dspark = false;
    s.include_qwen = true;
    run_setup_command(s, o->json);
  });
}

}  // namespace deltafin::cli

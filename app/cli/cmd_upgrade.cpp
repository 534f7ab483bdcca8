// `deltafin upgrade`: fast-forward the source checkout and rebuild it as it was configured.
#include <cstdio>
#include <memory>

#include "commands.h"
#include "install/upgrade.h"

namespace deltafin::cli {

void add_upgrade(CLI::App& app) {
  struct Opts {
    UpgradeOptions u;
    bool no_build = false;
  };
  auto o = std::make_shared<Opts>();
  auto* c =
      app.add_subcommand("upgrade", "Update this deltafin from its git upstream (fast-forward only) and rebuild it");
  c->add_option("--source-dir", o->u.source_dir, "The git checkout (default: the one this binary was built from)");
  c->add_option("--build-dir", o->u.build_dir, "Its CMake build folder (default: the one this binary was built in)");
  c->add_flag("--dry-run", o->u.dry_run, "Check and say what would happen; change nothing");
  c->add_flag("--no-build", o->no_build, "Fast-forward only; do not rebuild");
  c->add_option("--jobs", o->u.jobs, "Parallel build jobs (default: CMake's)")->check(CLI::Range(0, 1024));
  c->callback([o] {
    o->u.build = !o->no_build;
    run_upgrade(o->u, [](const std::string& line) {
      std::printf("%s\n", line.c_str());
      std::fflush(stdout);
    });
  });
}

}  // namespace deltafin::cli

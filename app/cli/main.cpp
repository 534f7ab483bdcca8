#include <cstdio>
#include <exception>

#include "base/error.h"
#include "commands.h"

namespace deltafin::cli {
int exit_code = 0;
}

int main(int argc, char** argv) {
  using namespace deltafin;
  CLI::App app{"deltafin: the full Kimi K3, exact, on one machine"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "deltafin 0.1.0");

  cli::add_run(app);
  cli::add_bench(app);
  cli::add_logits(app);
  cli::add_generate_ids(app);
  cli::add_synth(app);
  cli::add_bench_verify(app);
  cli::add_tokenize(app);
  cli::add_detokenize(app);
  cli::add_setup(app);
  cli::add_setup_qwen(app);
  cli::add_doctor(app);
  cli::add_cache(app);
  cli::add_upgrade(app);
  cli::add_serve(app);
  cli::add_plan(app);
  cli::add_render_chat(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  } catch (const Error& e) {
    std::fprintf(stderr, "deltafin: %s\n", e.what());
    return 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "deltafin: %s\n", e.what());
    return 1;
  }
  return cli::exit_code;
}

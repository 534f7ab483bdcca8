#pragma once
#include <CLI/CLI.hpp>

// Each subcommand lives in its own file and registers itself here. A command's
// callback returns the process exit code through `cli::exit_code`.
namespace deltafin::cli {

extern int exit_code;

void add_logits(CLI::App& app);
void add_generate_ids(CLI::App& app);
void add_synth(CLI::App& app);
void add_run(CLI::App& app);
void add_bench(CLI::App& app);
void add_bench_verify(CLI::App& app);
void add_tokenize(CLI::App& app);
void add_detokenize(CLI::App& app);
void add_setup(CLI::App& app);
void add_setup_qwen(CLI::App& app);
void add_doctor(CLI::App& app);
void add_cache(CLI::App& app);
void add_upgrade(CLI::App& app);
void add_serve(CLI::App& app);
void add_plan(CLI::App& app);
void add_render_chat(CLI::App& app);

}  // namespace deltafin::cli

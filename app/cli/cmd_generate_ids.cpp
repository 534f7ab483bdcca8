// `deltafin generate-ids`: greedy continuation ids as a JSON array (no tokenizer).
#include <cstdio>
#include <memory>

#include "cli_common.h"
#include "commands.h"
#include "runtime/generate.h"

namespace deltafin::cli {

void add_generate_ids(CLI::App& app) {
  struct Opts {
    std::string root, ids;
    int max_new = 16, threads = 0;
  };
  auto o = std::make_shared<Opts>();
  auto* c = app.add_subcommand("generate-ids", "Print the greedy continuation of --ids as a JSON array");
  c->add_option("--model-root", o->root, "Model folder")->required();
  c->add_option("--ids", o->ids, "Prompt token ids, comma separated")->required();
  c->add_option("--max-new", o->max_new, "Tokens to generate")->check(CLI::Range(1, 1 << 20));
  c->add_option("--threads", o->threads, "Worker threads (0 = all cores)");
  c->callback([o] {
    apply_threads(o->threads);
    auto ids = parse_ids(o->ids);
    auto model = K3Model::load(o->root);
    K3Session s(*model);
    GenerateOptions g;
    g.max_new = o->max_new;
    auto r = generate(s, ids, g);
    std::printf("%s\n", ids_json(r.ids).c_str());
  });
}

}  // namespace deltafin::cli

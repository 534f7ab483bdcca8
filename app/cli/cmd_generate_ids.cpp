// `deltafin generate-ids`: greedy continuation ids as a JSON array (no tokenizer).
// With --draft the ids are verified guesses: always the same as --draft off.
#include <cstdio>
#include <memory>

#include "cli_common.h"
#include "commands.h"
#include "deltafin/backend.h"
#include "runtime/generate.h"
#include "drafts/speculative_drafters.h"
#include "runtime/speculative_stats.h"

namespace deltafin::cli {

void add_generate_ids(CLI::App& app) {
  struct Opts {
    std::string root, ids, draft = "off", draft_model, device = "cpu";
    int max_new = 16, threads = 0, draft_max = 0;
    bool stats = false, draft_always = false;
  };
  auto o = std::make_shared<Opts>();
  auto* c = app.add_subcommand("generate-ids", "Print the greedy continuation of --ids as a JSON array");
  c->add_option("--model-root", o->root, "Model folder")->required();
  c->add_option("--ids", o->ids, "Prompt token ids, comma separated")->required();
  c->add_option("--max-new", o->max_new, "Tokens to generate")->check(CLI::Range(1, 1 << 20));
  c->add_option("--threads", o->threads, "Worker threads (0 = all cores)");
  c->add_option("--draft", o->draft, "Drafter: auto, off, dspark, qwen or ngram (the ids never change)")
      ->check(CLI::IsMember({"auto", "off", "dspark", "qwen", "ngram"}))
      ->capture_default_str();
  c->add_option("--draft-model", o->draft_model, "Folder of the DSpark or Qwen3 drafter (default: next to the model)");
  c->add_option("--draft-max", o->draft_max, "Most guesses per verify pass (0 = the drafter's own)")
      ->check(CLI::Range(0, 64));
  c->add_flag("--draft-always", o->draft_always, "Verify guesses every step even when drafting does not pay");
  c->add_flag("--stats", o->stats, "Print drafting and timing statistics as JSON on stderr");
  add_device_option(c, o->device);
  c->callback([o] {
    apply_threads(o->threads);
    auto ids = parse_ids(o->ids);
    auto model = K3Model::load(o->root);
    std::unique_ptr<DecodeSession> session;
    if (wants_cuda(o->device)) session = make_cuda_session(*model, int64_t(ids.size()) + o->max_new + 1);
    else session = std::make_unique<K3Session>(*model);
    GenerateOptions g;
    g.max_new = o->max_new;
    DraftSetupOptions dso;
    dso.choice = parse_draft_choice(o->draft);
    dso.draft_root = o->draft_model;
    auto drafts = DraftSetup::create(*model, dso);
    g.drafter = drafts->proposer();
    g.draft_max = o->draft_max;
    g.draft_always = o->draft_always;
    auto r = generate(*session, ids, g);
    std::printf("%s\n", ids_json(r.ids).c_str());
    if (o->stats) std::fprintf(stderr, "%s\n", generate_stats_json(r.stats, drafts->note()).c_str());
  });
}

}  // namespace deltafin::cli

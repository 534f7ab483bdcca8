// `deltafin synth`: a random checkpoint in the exact K3 format (demo model, tests, slices).
#include <cstdio>
#include <filesystem>
#include <memory>

#include "base/error.h"
#include "commands.h"
#include "synth/dspark_synth.h"
#include "synth/k3_synth.h"

namespace deltafin::cli {

void add_synth(CLI::App& app) {
  struct Opts {
    std::string preset = "demo", out;
    uint64_t seed = 1;
    std::vector<std::string> overrides;
    bool force = false, quiet = false;
  };
  auto o = std::make_shared<Opts>();
  auto* c = app.add_subcommand("synth", "Write a random-weight checkpoint in the exact Kimi K3 format");
  std::string presets;
  for (const auto& n : synth_preset_names()) presets += (presets.empty() ? "" : ", ") + n;
  for (const auto& n : dspark_synth_preset_names()) presets += ", " + n;
  c->add_option("--preset", o->preset, "One of: " + presets)->capture_default_str();
  c->add_option("--out", o->out, "Output folder")->required();
  c->add_option("--seed", o->seed, "Random seed")->capture_default_str();
  c->add_option("--set", o->overrides, "Override a shape field, e.g. --set layers=5 --set mla_layers=2+5");
  c->add_flag("--force", o->force, "Write into a non-empty folder");
  c->add_flag("--quiet", o->quiet, "Print only errors");
  c->callback([o] {
    namespace fs = std::filesystem;
    if (fs::exists(o->out) && !fs::is_empty(o->out) && !o->force)
      throw Error(o->out + " is not empty", "choose an empty folder or pass --force");
    if (is_dspark_preset(o->preset)) {
      // A DSpark drafter for the K3 preset it names (dspark-demo pairs with demo).
      if (!o->overrides.empty()) throw Error("--set applies to K3 presets only", "drop --set for dspark-* presets");
      DSparkSynthSpec ds = dspark_synth_preset(o->preset);
      ds.seed = o->seed;
      write_dspark_synth(ds, o->out);
      if (!o->quiet)
        std::printf(
            "Wrote a synthesized DSpark drafter (preset %s, for the %s target, seed %llu) to %s.\n"
            "Its weights are RANDOM: it only exercises the drafting code.\n",
            ds.name.c_str(), ds.target_preset.c_str(), static_cast<unsigned long long>(ds.seed), o->out.c_str());
      return;
    }
    K3SynthSpec spec = synth_preset(o->preset);
    spec.seed = o->seed;
    for (const auto& a : o->overrides) apply_synth_override(spec, a);
    SynthProgress p;
    if (!o->quiet)
      p.on_file = [](const std::string& f, uint64_t done, uint64_t total) {
        if (done == total) std::fprintf(stderr, "  wrote %s (%.1f MB)\n", f.c_str(), total / 1e6);
      };
    write_k3_synth(spec, o->out, p);
    if (!o->quiet)
      std::printf(
          "Wrote a synthesized K3-format checkpoint (preset %s, seed %llu) to %s.\n"
          "Its weights are RANDOM: it is not a trained model and its text is gibberish.\n",
          spec.name.c_str(), static_cast<unsigned long long>(spec.seed), o->out.c_str());
  });
}

}  // namespace deltafin::cli

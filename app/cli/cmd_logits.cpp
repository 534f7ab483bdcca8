// `deltafin logits`: every position's logits as F32 [T, vocab] in a safetensors file; with
// --reference, also the float64 reference's and how far the engine is from them.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <memory>

#include "base/error.h"
#include "cli_common.h"
#include "commands.h"
#include "deltafin/backend.h"
#include "model/safetensors_writer.h"
#include "reference/k3_reference.h"
#include "runtime/k3_model.h"

namespace deltafin::cli {

namespace {

// Engine vs float64: logits rel-L2, argmax agreement, the smallest float64 top-2 margin, and with
// per-layer streams one line per layer. Printed as text, or one JSON object with --json.
void report(const std::vector<float>& logits, const std::vector<double>& ref, int64_t T, int64_t V,
            const ForwardTrace* layers, const std::vector<std::vector<double>>* ref_layers, bool json) {
  int agree = 0;
  double min_margin = INFINITY;
  for (int64_t t = 0; t < T; ++t) {
    const double* r = &ref[size_t(t) * V];
    const float* e = &logits[size_t(t) * V];
    agree += (std::max_element(e, e + V) - e) == reference::argmax(r, V);
    min_margin = std::min(min_margin, reference::top2_margin(r, V));
  }
  const double rel = reference::rel_l2(logits.data(), ref.data(), ref.size());
  std::vector<double> per_layer;
  // A session that computes in fp64 gives its streams unrounded (layers64), so a layer's error is
  // seen below fp32's rounding.
  if (layers)
    for (size_t l = 0; l < layers->layers.size(); ++l)
      per_layer.push_back(
          layers->layers64.size() == layers->layers.size()
              ? reference::rel_l2(layers->layers64[l].data(), (*ref_layers)[l].data(), (*ref_layers)[l].size())
              : reference::rel_l2(layers->layers[l].data(), (*ref_layers)[l].data(), (*ref_layers)[l].size()));
  if (json) {
    std::printf("{\"positions\": %lld, \"rel_l2\": %.6g, \"argmax_agree\": %.6g, \"min_f64_margin\": %.6g",
                static_cast<long long>(T), rel, double(agree) / double(T), min_margin);
    if (layers) {
      std::printf(", \"layer_rel_l2\": [");
      for (size_t l = 0; l < per_layer.size(); ++l) std::printf("%s%.6g", l ? ", " : "", per_layer[l]);
      std::printf("]");
    }
    std::printf("}\n");
    return;
  }
  std::printf(
      "engine vs float64: logits rel-L2 %.3g, argmax agrees at %d of %lld positions (smallest float64 top-2 margin "
      "%.3g)\n",
      rel, agree, static_cast<long long>(T), min_margin);
  if (layers) {
    std::printf("layer  rel-L2 of the returned stream\n");
    for (size_t l = 0; l < per_layer.size(); ++l) std::printf("%5zu  %.3g\n", l, per_layer[l]);
  }
}

}  // namespace

void add_logits(CLI::App& app) {
  struct Opts {
    std::string root, ids, out, device = "cpu";
    int threads = 0;
    bool reference = false, per_layer = false, json = false;
  };
  auto o = std::make_shared<Opts>();
  auto* c = app.add_subcommand("logits", "Write the logits of every position of --ids to a safetensors file");
  c->add_option("--model-root", o->root, "Model folder")->required();
  c->add_option("--ids", o->ids, "Token ids, comma separated")->required();
  c->add_option("--out", o->out, "Output .safetensors (tensor 'logits', F32 [T, vocab]); optional with --reference");
  c->add_option("--threads", o->threads, "Worker threads (0 = all cores)");
  c->add_flag("--reference", o->reference,
              "Also run the float64 reference forward: print the engine's distance from it and write its logits "
              "(tensor 'reference_logits', F64 [T, vocab])");
  c->add_flag("--per-layer", o->per_layer,
              "With --reference: the distance of every layer's residual stream (CPU only)");
  c->add_flag("--json", o->json, "With --reference: print the report as one JSON object");
  add_device_option(c, o->device);
  c->callback([o] {
    if (o->out.empty() && !o->reference) throw Error("--out is required (unless --reference is given)");
    if ((o->per_layer || o->json) && !o->reference) throw Error("--per-layer and --json go with --reference");
    if (o->per_layer && wants_cuda(o->device))
      throw Error("--per-layer reads the CPU session's layer streams", "leave out --device cuda or --per-layer");
    apply_threads(o->threads);
    auto ids = parse_ids(o->ids);
    auto model = K3Model::load(o->root);
    auto logits = std::make_shared<std::vector<float>>();
    ForwardTrace trace;
    trace.layer_out = o->per_layer;
    trace.layer_out64 = o->per_layer;
    if (wants_cuda(o->device)) {
      *logits = cuda_all_logits(*model, ids);
    } else {
      K3Session s(*model);
      PassOptions opts;
      opts.trace = &trace;
      s.stage(ids, *logits, opts);
      s.commit(static_cast<int>(ids.size()));
    }
    const int64_t T = static_cast<int64_t>(ids.size()), V = model->config().vocab;
    auto ref = std::make_shared<std::vector<double>>();
    std::vector<std::vector<double>> ref_layers;
    if (o->reference) {
      *ref = reference::forward(*model, ids, o->per_layer ? &ref_layers : nullptr);
      report(*logits, *ref, T, V, o->per_layer ? &trace : nullptr, &ref_layers, o->json);
    }
    if (o->out.empty()) return;
    SafetensorsWriter w;
    w.add("logits", DType::F32, {T, V}, [logits](uint8_t* dst, uint64_t n, uint64_t off) {
      std::memcpy(dst, reinterpret_cast<const uint8_t*>(logits->data()) + off, n);
    });
    if (o->reference)
      w.add("reference_logits", DType::F64, {T, V}, [ref](uint8_t* dst, uint64_t n, uint64_t off) {
        std::memcpy(dst, reinterpret_cast<const uint8_t*>(ref->data()) + off, n);
      });
    w.write(o->out);
    if (!o->json)
      std::printf("wrote logits [%lld, %lld] to %s\n", static_cast<long long>(T), static_cast<long long>(V),
                  o->out.c_str());
  });
}

}  // namespace deltafin::cli

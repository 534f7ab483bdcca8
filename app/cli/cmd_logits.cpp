// `deltafin logits`: every position's logits as F32 [T, vocab] in a safetensors file.
#include <cstdio>
#include <cstring>
#include <memory>

#include "cli_common.h"
#include "commands.h"
#include "cuda_device.h"
#include "model/safetensors_writer.h"
#include "runtime/k3_model.h"

namespace deltafin::cli {

void add_logits(CLI::App& app) {
  struct Opts {
    std::string root, ids, out, device = "cpu";
    int threads = 0;
  };
  auto o = std::make_shared<Opts>();
  auto* c = app.add_subcommand("logits", "Write the logits of every position of --ids to a safetensors file");
  c->add_option("--model-root", o->root, "Model folder")->required();
  c->add_option("--ids", o->ids, "Token ids, comma separated")->required();
  c->add_option("--out", o->out, "Output .safetensors (tensor 'logits', F32 [T, vocab])")->required();
  c->add_option("--threads", o->threads, "Worker threads (0 = all cores)");
  add_device_option(c, o->device);
  c->callback([o] {
    apply_threads(o->threads);
    auto ids = parse_ids(o->ids);
    auto model = K3Model::load(o->root);
    auto logits = std::make_shared<std::vector<float>>();
    if (wants_cuda(o->device)) {
      *logits = cuda_all_logits(*model, ids);
    } else {
      K3Session s(*model);
      s.stage(ids, *logits);
      s.commit(static_cast<int>(ids.size()));
    }
    const int64_t T = static_cast<int64_t>(ids.size()), V = model->config().vocab;
    SafetensorsWriter w;
    w.add("logits", DType::F32, {T, V}, [logits](uint8_t* dst, uint64_t n, uint64_t off) {
      std::memcpy(dst, reinterpret_cast<const uint8_t*>(logits->data()) + off, n);
    });
    w.write(o->out);
    std::printf("wrote logits [%lld, %lld] to %s\n", static_cast<long long>(T), static_cast<long long>(V), o->out.c_str());
  });
}

}  // namespace deltafin::cli

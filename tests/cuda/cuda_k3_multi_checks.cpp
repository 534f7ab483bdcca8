// The CUDA forward over several GPUs (placement::DeviceLayout, one CudaK3Model and session per GPU,
// the residual stream handed from GPU to GPU): k3-tiny greedy ids with the layers split between
// two GPUs at every layer boundary, lm_head on either, the hand-over through pinned host memory as
// well as device to device, and under a planner's two-GPU plan through the engine's factory. On a
// machine with one GPU both logical GPUs are that device (the hand-over logic runs for real; the
// copies stay within the device). Every arm must give the golden ids over the clear-margin steps,
// exactly the ids of the whole model on one GPU, and prefill logits bit for bit equal to one GPU
// running the same passes in parts (the same kernels in the same order: only the hand-over differs).
#include <algorithm>
#include <memory>

#include "base/error.h"
#include "cuda/cuda_decode_session.h"
#include "cuda/gpu_rates.h"
#include "cuda/k3_cuda_model.h"
#include "cuda_k3_checks.h"
#include "cuda_k3_greedy.h"
#include "model/checkpoint.h"
#include "placement/model_byte_map.h"
#include "placement/planner.h"
#include "placement/split_layout.h"
#include "placement/split_session.h"
#include "runtime/generate.h"
#include "support/split_test_rates.h"

namespace deltafin::cuda::check {
namespace {

using namespace deltafin::placement;

std::vector<int32_t> ids_of(DecodeSession& s, const Greedy& g) {
  GenerateOptions go;
  go.max_new = int(g.want.size());
  return generate(s, g.prompt, go).ids;
}

// Layers [0, k) on GPU 0, [k, L) on GPU 1, lm_head on `head`; nothing on the CPU.
DeviceLayout two_gpus(int L, int k, int head) {
  DeviceLayout d;
  d.gpus.resize(2);
  for (int u = 0; u <= L; ++u) {
    const int dev = u == L ? head : u < k ? 0 : 1;
    d.decode.push_back(dev);
    d.prefill.push_back(dev);
    for (int g = 0; g < 2; ++g) {
      const SplitUnit su = dev == g ? SplitUnit{GpuCopy::Vram, true, true, false} : SplitUnit{};
      if (u == L) d.gpus[size_t(g)].lm_head = su;
      else d.gpus[size_t(g)].layers.push_back(su);
    }
  }
  d.check(L);
  return d;
}

struct Reference {
  std::vector<std::vector<int32_t>> whole;       // one GPU, whole passes
  std::vector<std::vector<float>> parts_logits;  // one GPU in parts: the prompt's prefill logits
};

std::string hand_overs(const CudaK3Session& s) {
  const auto& h = s.handovers();
  return std::to_string(h.same_device) + " within a device, " + std::to_string(h.peer) + " peer, " +
         std::to_string(h.host) + " through the host";
}

// One arm: the goldens' greedy ids and prefill logits with GPU g of `d` on devices[g].
Result arm(const K3Model& host, const std::string& name, const DeviceLayout& d, const std::vector<int>& devices,
           bool host_handover, const std::vector<Greedy>& gs, const Reference& ref) {
  std::vector<std::unique_ptr<CudaK3Model>> models;
  for (size_t g = 0; g < d.gpus.size(); ++g) {
    CudaK3Model::Options o;
    o.max_context = 256;
    o.layout = d.gpus[g];
    o.device = devices[g];
    o.host_handover = host_handover;
    models.push_back(std::make_unique<CudaK3Model>(host, o));
  }
  Result r{"multi-GPU " + name, true, d.describe()};
  for (size_t i = 0; i < gs.size(); ++i) {
    std::vector<std::unique_ptr<CudaK3Session>> sessions;
    std::vector<LayerRangeSession*> ptrs;
    for (auto& m : models) {
      sessions.push_back(std::make_unique<CudaK3Session>(*m));
      ptrs.push_back(sessions.back().get());
    }
    K3Session cpu(host);
    SplitSession s(cpu, ptrs, d);
    std::vector<float> logits = s.prefill(gs[i].prompt);
    const bool bits = logits == ref.parts_logits[i];
    s.reset();
    const auto ids = ids_of(s, gs[i]);
    bool golden = ids.size() == gs[i].want.size();
    for (size_t t = 0; t < gs[i].clear && golden; ++t) golden = ids[t] == gs[i].want[t];
    const bool same = ids == ref.whole[i];
    r.ok = r.ok && golden && same && bits;
    r.detail += "; prompt " + std::to_string(i) + ": golden " + (golden ? "equal" : "DIFFERS") + " over " +
                std::to_string(gs[i].clear) + " clear steps, ids " + (same ? "identical to" : "DIFFER from") +
                " one GPU, prefill logits " + (bits ? "bit-identical" : "DIFFER") + " (" +
                std::to_string(s.stats().device_handovers) + " GPU-to-GPU hand-overs: ";
    for (size_t g = 0; g < sessions.size(); ++g)
      r.detail += (g ? "; GPU " : "GPU ") + std::to_string(g) + " took " + hand_overs(*sessions[g]);
    r.detail += ")";
  }
  return r;
}

}  // namespace

std::vector<Result> k3_multi(const std::string& dir) {
  std::vector<Result> out;
  const auto gs = greedy_goldens(dir);
  const std::vector<int> logical = logical_devices();
  if (logical.empty()) throw Error("k3_multi needs a CUDA device");
  // Two GPUs: the first two logical GPUs, or the only one twice (an imitation on one device).
  const std::vector<int> devices = {logical[0], logical.size() > 1 ? logical[1] : logical[0]};
  const std::string on = devices[0] == devices[1]
                             ? " (two logical GPUs on device " + std::to_string(devices[0]) + ")"
                             : " (devices " + std::to_string(devices[0]) + " and " + std::to_string(devices[1]) + ")";
  auto host = K3Model::load(dir);
  const int L = host->config().layers;
  Reference ref;
  {
    CudaK3Model::Options mo;
    mo.max_context = 256;
    mo.device = devices[0];
    CudaK3Model whole(*host, mo);
    for (const auto& g : gs) {
      CudaK3Session s(whole);
      ref.whole.push_back(ids_of(s, g));
      CudaK3Session p(whole);
      K3Session cpu(*host);
      SplitSession parts(cpu, p, all_on_gpu(L));
      ref.parts_logits.push_back(parts.prefill(g.prompt));
    }
  }
  for (int k = 0; k <= L; ++k) {
    const std::string at = "split at layer " + std::to_string(k);
    out.push_back(arm(*host, at + ", lm_head on GPU 1" + on, two_gpus(L, k, 1), devices, false, gs, ref));
    if (k == L || k == L / 2)
      out.push_back(arm(*host, at + ", lm_head on GPU 0" + on, two_gpus(L, k, 0), devices, false, gs, ref));
  }
  out.push_back(arm(*host, "split at layer " + std::to_string(L / 2) + ", hand-over through pinned host memory" + on,
                    two_gpus(L, L / 2, 1), devices, true, gs, ref));

  // A planner's plan for two GPUs whose budgets each hold about 60 % of the spine, run by the
  // engine's factory (the CPU computes nothing; the VRAM expert tiers are per GPU).
  {
    auto ck = Checkpoint::open(dir);
    const auto bytes = ModelByteMap::from_checkpoint(*ck, host->config());
    const PlanOptions o = deltafin::test::split_test_plan_options(256);
    MachineBudget b = deltafin::test::roomy_one_gpu_machine();
    const uint64_t vlo = make_plan(bytes, b, assumed_desktop(), o).vram_minimum;
    const uint64_t each = vlo + 2 * bytes.largest_unit_bytes() + bytes.spine_bytes() * 6 / 10;
    b.gpus.assign(2, GpuBudget{"GPU", each, 0});
    b.gpus[0].name = "GPU 0";
    b.gpus[1].name = "GPU 1";
    const Plan p = make_plan(bytes, b, assumed_desktop(), o);
    const DeviceLayout d = device_layout(p);
    const auto ranges = gpu_ranges(p);
    Result r{"multi-GPU planned: two budgets of " + format_gb(each) + on,
             ranges.size() == 2 && ranges[1].last > ranges[1].first && ranges[0].last > ranges[0].first, d.describe()};
    for (size_t i = 0; i < gs.size(); ++i) {
      auto s = make_multi_gpu_session(*host, 256, d, devices, {"GPU 0", "GPU 1"});
      const bool same = ids_of(*s, gs[i]) == ref.whole[i];
      r.ok = r.ok && same;
      r.detail += "; prompt " + std::to_string(i) + ": ids " + (same ? "identical to" : "DIFFER from") + " one GPU";
    }
    out.push_back(r);
  }

  // Bad input: a device list that does not match the layout, a device that is not there.
  {
    std::string said;
    try {
      make_multi_gpu_session(*host, 256, two_gpus(L, L / 2, 1), {devices[0]});
    } catch (const Error& e) {
      said = e.what();
    }
    out.push_back({"a device list shorter than the plan's GPUs is refused",
                   said.find("2 GPU(s) but 1 CUDA device") != std::string::npos, said});
    said.clear();
    try {
      make_multi_gpu_session(*host, 256, two_gpus(L, L / 2, 1), {devices[0], 999});
    } catch (const Error& e) {
      said = e.what();
    }
    out.push_back(
        {"a CUDA device that is not visible is refused", said.find("999 is not visible") != std::string::npos, said});
  }
  return out;
}

}  // namespace deltafin::cuda::check

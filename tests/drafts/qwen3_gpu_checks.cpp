#include "qwen3_gpu_checks.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <fstream>
#include <random>
#include <sstream>

#include "base/error.h"
#include "support/golden_tensors.h"
#include "support/worst_error.h"
#include "runtime/ops.h"
#include "drafts/qwen3_model.h"

namespace deltafin::qwen3_checks {

namespace {

double rel_l2(const float* a, const float* b, size_t n) {
  double num = 0, den = 0;
  for (size_t i = 0; i < n; ++i) {
    const double d = double(a[i]) - double(b[i]);
    num += d * d;
    den += double(b[i]) * double(b[i]);
  }
  return den > 0 ? std::sqrt(num / den) : std::sqrt(num);
}

std::string fmt(const char* f, double a, double b = 0, double c = 0) {
  char buf[256];
  std::snprintf(buf, sizeof buf, f, a, b, c);
  return buf;
}

// Top-1 minus top-2 of a logit row.
double margin(const float* x, int n) {
  float a = -INFINITY, b = -INFINITY;
  for (int i = 0; i < n; ++i) {
    if (x[i] > a) {
      b = a;
      a = x[i];
    } else if (x[i] > b) {
      b = x[i];
    }
  }
  return double(a) - double(b);
}

struct Loaded {
  std::unique_ptr<Qwen3Model> model;
  std::unique_ptr<Qwen3Backend> gpu;
  std::string why;
};

Loaded load_gpu(const std::string& dir) {
  Loaded l;
  l.model = Qwen3Model::load(dir);
  l.gpu = qwen3_cuda_backend(*l.model, &l.why);
  return l;
}

using Clock = std::chrono::steady_clock;
double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

}  // namespace

std::string gpu_unavailable_reason(const std::string& dir) {
  try {
    Loaded l = load_gpu(dir);
    return l.gpu ? std::string() : l.why;
  } catch (const std::exception& e) {
    return e.what();
  }
}

Outcome golden(const std::string& dir) {
  Outcome o{"qwen3-tiny goldens on the GPU", false, ""};
  try {
    Loaded l = load_gpu(dir);
    if (!l.gpu) throw Error("no GPU backend: " + l.why);
    const test::LoadedTensors g = test::load_tensors(dir + "/golden.safetensors");
    auto ids_of = [&](const std::string& name) {
      const std::vector<int64_t> v = g.i64(name);
      return std::vector<int32_t>(v.begin(), v.end());
    };
    const int V = l.model->config().vocab;
    double worst_top = 0, worst_last = 0;
    int greedy_ok = 0;
    for (int p = 0; p < 3; ++p) {
      const std::string k = "prompt." + std::to_string(p) + ".";
      const std::vector<int32_t> ids = ids_of(k + "ids");
      auto s = l.gpu->session();
      // In two pieces, so the KV cache path is covered too.
      const size_t cut = ids.size() / 2;
      std::vector<float> all, rest;
      s->forward(std::span<const int32_t>(ids).first(cut), all, true);
      s->forward(std::span<const int32_t>(ids).subspan(cut), rest, true);
      all.insert(all.end(), rest.begin(), rest.end());
      const std::vector<int32_t> top_ids = ids_of(k + "top32_ids");
      const std::vector<float> top = g.f32(k + "top32_logits");
      for (size_t t = 0; t < ids.size(); ++t)
        for (int j = 0; j < 32; ++j)
          worst_top = test::worst_of(worst_top, double(std::abs(all[t * V + top_ids[t * 32 + j]] - top[t * 32 + j])));
      const std::vector<float> last = g.f32(k + "last_logits");
      worst_last = test::worst_of(worst_last, rel_l2(&all[(ids.size() - 1) * V], last.data(), V));
      // Greedy, with the logits on the host and with the argmax on the GPU.
      const std::vector<int32_t> want = ids_of(k + "greedy_ids");
      auto a = l.gpu->session(), b = l.gpu->session();
      std::vector<float> logits;
      a->forward(ids, logits);
      int32_t nb = b->forward_greedy(ids);
      for (size_t i = 0; i < want.size(); ++i) {
        const int32_t na = static_cast<int32_t>(argmax(logits.data(), V));
        if (na != want[i] || nb != want[i])
          throw Error("prompt " + std::to_string(p) + " greedy token " + std::to_string(i) + ": GPU gave " +
                      std::to_string(na) + " / " + std::to_string(nb) + ", golden " + std::to_string(want[i]));
        const int32_t one[1] = {na};
        a->forward(one, logits);
        nb = b->forward_greedy(one);
        ++greedy_ok;
      }
      // Truncation is exact: cut back and re-run gives the same logits, bit for bit.
      if (ids.size() > 2) {
        auto c = l.gpu->session();
        std::vector<float> x, y;
        c->forward(ids, x);
        c->truncate(2);
        c->forward(std::span<const int32_t>(ids).subspan(2), y);
        if (x != y) throw Error("prompt " + std::to_string(p) + ": logits after truncate(2) differ from the first run");
      }
    }
    o.detail =
        fmt("top-32 max abs diff %.3g (limit 2e-4), last-row rel-L2 %.3g (limit 1e-5), ", worst_top, worst_last) +
        std::to_string(greedy_ok) + " greedy ids equal";
    o.ok = worst_top < 2e-4 && worst_last < 1e-5;
  } catch (const std::exception& e) {
    o.detail += e.what();
  }
  return o;
}

Outcome gpu_matches_cpu(const std::string& dir, uint64_t seed) {
  Outcome o{"GPU vs CPU logits on random ids", false, ""};
  try {
    Loaded l = load_gpu(dir);
    if (!l.gpu) throw Error("no GPU backend: " + l.why);
    const int V = l.model->config().vocab;
    std::mt19937_64 rng(seed);
    double worst_rel = 0, worst_abs = 0;
    int rows = 0, greedy_compared = 0;
    for (int round = 0; round < 4; ++round) {
      Qwen3Session cpu(*l.model);
      auto gpu = l.gpu->session();
      // Pieces: a long prefill (more rows than one GPU pass), single rows, mid-sized ones, cuts.
      const std::vector<int> pieces = {round == 0 ? 150 : 17, 1, 1, 9, 40, 1};
      for (size_t pi = 0; pi < pieces.size(); ++pi) {
        std::vector<int32_t> ids(pieces[pi]);
        for (auto& id : ids) id = static_cast<int32_t>(rng() % uint64_t(V));
        std::vector<float> a, b;
        cpu.forward(ids, a, true);
        gpu->forward(ids, b, true);
        if (a.size() != b.size()) throw Error("logit counts differ");
        for (size_t t = 0; t < ids.size(); ++t) {
          worst_rel = test::worst_of(worst_rel, rel_l2(&b[t * V], &a[t * V], V));
          for (int j = 0; j < V; ++j)
            worst_abs = test::worst_of(worst_abs, double(std::abs(b[t * V + j] - a[t * V + j])));
          ++rows;
        }
        if (pi == 3) {  // cut both back to a random earlier point
          const int64_t n = static_cast<int64_t>(rng() % uint64_t(cpu.n_past()));
          cpu.truncate(n);
          gpu->truncate(n);
        }
        if (cpu.n_past() != gpu->n_past()) throw Error("n_past differs between CPU and GPU");
      }
      // Greedy continuations agree while the CPU's choice is clear.
      std::vector<float> a;
      const int32_t start[1] = {static_cast<int32_t>(rng() % uint64_t(V))};
      cpu.forward(start, a);
      int32_t g = gpu->forward_greedy(start);
      for (int i = 0; i < 16; ++i) {
        if (margin(a.data(), V) < 1e-3) break;
        const int32_t c = static_cast<int32_t>(argmax(a.data(), V));
        if (c != g)
          throw Error("greedy step " + std::to_string(i) + ": CPU " + std::to_string(c) + ", GPU " + std::to_string(g));
        ++greedy_compared;
        const int32_t one[1] = {c};
        cpu.forward(one, a);
        g = gpu->forward_greedy(one);
      }
    }
    o.detail = fmt("%.0f rows, worst rel-L2 %.3g (limit 1e-5), worst abs %.3g; ", rows, worst_rel, worst_abs) +
               std::to_string(greedy_compared) + " greedy ids equal";
    o.ok = worst_rel < 1e-5 && greedy_compared > 0;
  } catch (const std::exception& e) {
    o.detail += e.what();
  }
  return o;
}

namespace {

uint64_t weight_bytes(const Qwen3Config& c) {
  const uint64_t H = c.hidden, QW = uint64_t(c.heads) * c.head_dim, KW = uint64_t(c.kv_heads) * c.head_dim;
  const uint64_t per_layer = (QW + 2 * KW) * H + H * QW + 3 * uint64_t(c.intermediate) * H;
  return 2 * (per_layer * c.layers + uint64_t(c.vocab) * H * (c.tied ? 1 : 2));
}

BenchRow time_backend(const Qwen3Backend& b, const std::string& name, int context, int reps) {
  BenchRow row;
  row.model = name;
  row.device = b.device();
  row.context = context;
  row.weight_bytes = weight_bytes(b.config());
  const int V = b.config().vocab;
  std::mt19937 rng(7);
  std::vector<int32_t> ids(context);
  for (auto& id : ids) id = static_cast<int32_t>(rng() % uint32_t(V));
  std::vector<double> prefill, decode, draft;
  std::vector<float> logits;
  for (int r = 0; r < reps; ++r) {
    auto s = b.session();
    auto t0 = Clock::now();
    for (int i = 0; i < context; i += 64)
      s->forward(std::span<const int32_t>(ids).subspan(i, std::min(64, context - i)), logits);
    prefill.push_back(context / seconds_since(t0));
    const int steps = 32;
    int32_t next = static_cast<int32_t>(argmax(logits.data(), V));
    t0 = Clock::now();
    for (int i = 0; i < steps; ++i) {
      const int32_t one[1] = {next};
      next = s->forward_greedy(one);
    }
    decode.push_back(steps / seconds_since(t0));
    const int64_t base = s->n_past();
    t0 = Clock::now();
    for (int k = 0; k < 8; ++k) {
      for (int i = 0; i < 4; ++i) {
        const int32_t one[1] = {next};
        next = s->forward_greedy(one);
      }
      s->truncate(base);
    }
    draft.push_back(seconds_since(t0) / 8 * 1e3);
  }
  auto median = [](std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
  };
  row.prefill_tok_s = median(prefill);
  row.decode_tok_s = median(decode);
  row.draft4_ms = median(draft);
  return row;
}

}  // namespace

std::vector<BenchRow> bench(const std::string& dir, bool synthetic_shapes, int reps) {
  std::vector<BenchRow> rows;
  auto model = Qwen3Model::load(dir);
  auto cpu = qwen3_cpu_backend(*model);
  std::string why;
  auto gpu = qwen3_cuda_backend(*model, &why);
  for (int ctx : {64, 1024}) {
    rows.push_back(time_backend(*cpu, "qwen3-tiny", ctx, reps));
    if (gpu) rows.push_back(time_backend(*gpu, "qwen3-tiny", ctx, reps));
  }
  if (!synthetic_shapes || !gpu) return rows;
  // Qwen3-0.6B-Base and Qwen3-1.7B-Base shapes (their config.json), random BF16 weights.
  Qwen3Config c06;
  c06.hidden = 1024, c06.layers = 28, c06.heads = 16, c06.kv_heads = 8, c06.head_dim = 128, c06.intermediate = 3072;
  c06.vocab = 151936, c06.rms_eps = 1e-6f, c06.rope_theta = 1e6, c06.tied = true;
  Qwen3Config c17 = c06;
  c17.hidden = 2048, c17.intermediate = 6144;
  for (const auto& [name, cfg] : {std::pair{"qwen3-0.6b-shape", c06}, std::pair{"qwen3-1.7b-shape", c17}}) {
    auto syn = qwen3_cuda_synthetic_backend(cfg, 1, &why);
    if (!syn) throw Error(std::string("could not synthesize ") + name + ": " + why);
    for (int ctx : {64, 1024}) rows.push_back(time_backend(*syn, name, ctx, reps));
  }
  return rows;
}

}  // namespace deltafin::qwen3_checks

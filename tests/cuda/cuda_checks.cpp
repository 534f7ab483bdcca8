#include "cuda_checks.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <sstream>
#include <utility>

#include "cpu/gemm.h"
#include "cuda/cuda_kernels.h"
#include "cuda/lab/bf16_gemm_lab.h"
#include "cuda/lab/expert_kernels_lab.h"
#include "cuda_reference.h"
#include "previous_rmsnorm.h"
#include "support/worst_error.h"

namespace deltafin::cuda::check {
namespace {

constexpr double kU = 5.9604644775390625e-8;  // fp32 unit roundoff, 2^-24

std::string fmt(double v) {
  std::ostringstream s;
  s.precision(3);
  s << v;
  return s.str();
}

std::vector<float> randn(std::mt19937_64& rng, size_t n, float sd = 1.f) {
  std::normal_distribution<float> d(0.f, sd);
  std::vector<float> v(n);
  for (float& x : v) x = d(rng);
  return v;
}

float bf16_to_float(uint16_t b) {
  const uint32_t bits = static_cast<uint32_t>(b) << 16;
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

template <class T>
DeviceBuffer to_device(const std::vector<T>& v) {
  DeviceBuffer b(v.size() * sizeof(T));
  b.upload(v.data(), v.size() * sizeof(T));
  return b;
}

template <class T>
std::vector<T> from_device(const DeviceBuffer& b, size_t n) {
  std::vector<T> v(n);
  b.download(v.data(), n * sizeof(T));
  return v;
}

double rel_l2(const float* a, const float* ref, size_t n) {
  double num = 0, den = 0;
  for (size_t i = 0; i < n; ++i) {
    const double d = static_cast<double>(a[i]) - ref[i];
    num += d * d;
    den += static_cast<double>(ref[i]) * ref[i];
  }
  if (!std::isfinite(num)) return INFINITY;
  return den > 0 ? std::sqrt(num / den) : std::sqrt(num);
}

bool bits_equal(const float* a, const float* b, size_t n) { return std::memcmp(a, b, n * sizeof(float)) == 0; }

Result invariance_result(const std::string& name, int mismatched_rows, int rows_checked) {
  Result r;
  r.name = name;
  r.ok = mismatched_rows == 0 && rows_checked > 0;
  r.detail =
      std::to_string(rows_checked) + " rows compared bit for bit, " + std::to_string(mismatched_rows) + " differ";
  return r;
}

}  // namespace

namespace {
template <class G, class R>
Errors errors_of(const G* gpu, const R* ref, size_t n) {
  Errors e;
  double big = 0;
  for (size_t i = 0; i < n; ++i) {
    const double d = std::fabs(static_cast<double>(gpu[i]) - static_cast<double>(ref[i]));
    if (!std::isfinite(d) || !std::isfinite(static_cast<double>(ref[i]))) {
      // Infinite or NaN on both sides in the same way counts as equal; anything else is infinite error.
      const bool same = std::isnan(gpu[i]) ? std::isnan(static_cast<double>(ref[i]))
                                           : static_cast<double>(gpu[i]) == static_cast<double>(ref[i]);
      if (!same) e.max_abs = INFINITY;
      continue;
    }
    e.max_abs = std::max(e.max_abs, d);
    big = std::max(big, std::fabs(static_cast<double>(ref[i])));
  }
  e.max_rel = std::isinf(e.max_abs) ? INFINITY : big > 0 ? e.max_abs / big : e.max_abs;
  return e;
}

std::string cell(double v) {
  if (std::isnan(v)) return "-";
  char b[32];
  std::snprintf(b, sizeof b, "%.2e", v);
  return b;
}
}  // namespace

Errors errors(const float* gpu, const double* ref, size_t n) { return errors_of(gpu, ref, n); }
Errors errors(const float* gpu, const float* ref, size_t n) { return errors_of(gpu, ref, n); }
Errors errors(const double* gpu, const double* ref, size_t n) { return errors_of(gpu, ref, n); }

int print_table(const std::vector<Result>& results) {
  int failed = 0;
  std::printf("%-34s %-36s %-9s %-9s %-6s %s\n", "op", "shape", "max abs", "max rel", "result", "check");
  for (const Result& r : results) {
    const std::string op = !r.op.empty() ? r.op : r.name.substr(0, r.name.find(' '));
    const std::string shape = r.shape.empty() ? "-" : r.shape;
    std::printf("%-34s %-36s %-9s %-9s %-6s %s: %s\n", op.c_str(), shape.c_str(), cell(r.max_abs).c_str(),
                cell(r.max_rel).c_str(), r.ok ? "PASS" : "FAIL", r.name.c_str(), r.detail.c_str());
    std::fflush(stdout);
    failed += r.ok ? 0 : 1;
  }
  return failed;
}

std::vector<Result> bf16_gemm(uint64_t seed) {
  std::vector<Result> out;
  std::mt19937_64 rng(seed);
  struct Shape {
    int64_t out, in;
  };
  register_lab_bf16_gemm_versions();  // every version is checked, the lab's too
  const std::vector<int> versions = bf16_gemm_versions();
  // 1031 and 40 rows: partial row tiles; in = 72: a k32-step with only some chunks (72 / 8 = 9);
  // 896x7168: K3's router (a narrow shape, another default version than 1031x7168).
  for (const Shape sh : {Shape{1031, 7168}, Shape{896, 7168}, Shape{384, 1536}, Shape{96, 128}, Shape{40, 72}}) {
    // 11 rows: the tensor-core versions take x in groups of 8 rows, so T=11 is two groups.
    const int Tmax = 11;
    const auto w = rand_bf16(rng, static_cast<size_t>(sh.out * sh.in), 0.05f);
    const auto x = randn(rng, static_cast<size_t>(Tmax * sh.in));
    DeviceBuffer dw = to_device(w), dx = to_device(x);
    DeviceBuffer dy(static_cast<size_t>(Tmax * sh.out) * sizeof(float));
    const std::string tag = "bf16_gemm " + std::to_string(sh.out) + "x" + std::to_string(sh.in);

    // Accuracy: against kernels/cpu's scalar reference, within the fp32 summation bound.
    std::vector<float> ref(static_cast<size_t>(Tmax * sh.out));
    kernels::RowsArgs a{};
    a.w = w.data();
    a.in = sh.in;
    a.o0 = 0;
    a.o1 = sh.out;
    a.x = x.data();
    a.ldx = sh.in;
    a.T = Tmax;
    a.y = ref.data();
    a.ldy = sh.out;
    kernels::scalar::bf16_rows(a);
    std::vector<double> mag(ref.size());
    for (int t = 0; t < Tmax; ++t)
      for (int64_t o = 0; o < sh.out; ++o) {
        double m = 0;
        for (int64_t i = 0; i < sh.in; ++i) m += std::fabs(bf16_to_float(w[o * sh.in + i]) * x[t * sh.in + i]);
        mag[t * sh.out + o] = m;
      }
    const double gamma = sh.in * kU / (1 - sh.in * kU);
    std::vector<float> first;  // the first version's output, for the version-vs-version figure
    for (const int v : versions) {
      const std::string vtag = tag + " [v" + std::to_string(v) + "]";
      try {
        dy.fill_byte(0xff);  // NaN poison: an unwritten output fails
        bf16_gemm_version(v, dw.data(), sh.out, sh.in, dx.as<float>(), sh.in, Tmax, dy.as<float>(), sh.out);
        const auto y = from_device<float>(dy, ref.size());
        // |y - ref| <= 2 * gamma_n * sum |w x|: both sides' worst-case fp32 summation error.
        double worst = 0;
        bool finite = true;
        for (size_t i = 0; i < ref.size(); ++i) {
          if (!std::isfinite(y[i])) finite = false;
          worst = deltafin::test::worst_of(
              worst, std::fabs(static_cast<double>(y[i]) - ref[i]) / (2 * gamma * mag[i] + 1e-30));
        }
        const double rl = rel_l2(y.data(), ref.data(), ref.size());
        Result r;
        r.name = vtag + " vs CPU scalar, T=11";
        r.op = "bf16_gemm v" + std::to_string(v);
        r.shape = std::to_string(sh.out) + "x" + std::to_string(sh.in) + " T=11";
        const Errors e = errors(y.data(), ref.data(), ref.size());
        r.max_abs = e.max_abs;
        r.max_rel = e.max_rel;
        r.ok = finite && worst <= 1.0 && rl <= 1e-5;
        r.detail = "rel L2 error " + fmt(rl) + " (limit 1e-5); worst |err| / (2 gamma_n sum|wx|) = " + fmt(worst) +
                   " (limit 1)";
        if (first.empty()) first = y;
        else
          r.detail += "; rel L2 vs v" + std::to_string(versions.front()) + " " +
                      fmt(rel_l2(y.data(), first.data(), ref.size()));
        out.push_back(r);

        // Batch invariance: row p alone vs inside T-row passes.
        std::vector<std::vector<float>> alone(Tmax);
        for (int p = 0; p < Tmax; ++p) {
          dy.fill_byte(0xff);
          bf16_gemm_version(v, dw.data(), sh.out, sh.in, dx.as<float>() + p * sh.in, sh.in, 1, dy.as<float>(), sh.out);
          alone[p] = from_device<float>(dy, static_cast<size_t>(sh.out));
        }
        int bad = 0, checked = 0;
        for (int T : {2, 3, 4, 8, 11}) {
          dy.fill_byte(0xff);
          bf16_gemm_version(v, dw.data(), sh.out, sh.in, dx.as<float>(), sh.in, T, dy.as<float>(), sh.out);
          const auto yt = from_device<float>(dy, static_cast<size_t>(T * sh.out));
          for (int p = 0; p < T; ++p, ++checked)
            if (!bits_equal(yt.data() + p * sh.out, alone[p].data(), static_cast<size_t>(sh.out))) ++bad;
        }
        out.push_back(invariance_result(vtag + " batch invariance (T=2,3,4,8,11)", bad, checked));
      } catch (const CudaError& e) {  // a launch error of one version must not hide the others' results
        out.push_back(Result{vtag, false, std::string("error: ") + e.what()});
      }
    }

    // The public entry point is the shape's default version, bit for bit.
    const int dv = bf16_gemm_default_version(sh.out, sh.in);
    dy.fill_byte(0xff);
    deltafin::cuda::bf16_gemm(dw.data(), sh.out, sh.in, dx.as<float>(), sh.in, Tmax, dy.as<float>(), sh.out);
    const auto yd = from_device<float>(dy, ref.size());
    dy.fill_byte(0xff);
    bf16_gemm_version(dv, dw.data(), sh.out, sh.in, dx.as<float>(), sh.in, Tmax, dy.as<float>(), sh.out);
    const auto yv = from_device<float>(dy, ref.size());
    Result d;
    d.name = tag + " bf16_gemm runs its default version v" + std::to_string(dv);
    d.ok = bits_equal(yd.data(), yv.data(), ref.size());
    d.detail = d.ok ? "same bits" : "outputs differ";
    out.push_back(d);
  }

  // Non-finite and extreme inputs: an infinite x element gives +-inf (not NaN), a NaN gives NaN, and
  // |x| near FLT_MAX stays finite (the exact three-part split must not overflow).
  {
    const int64_t O = 64, I = 256;
    const int T = 4;
    const auto w = rand_bf16(rng, static_cast<size_t>(O * I), 0.05f);
    auto x = randn(rng, static_cast<size_t>(T * I));
    x[0 * I + 5] = INFINITY;
    x[1 * I + 9] = NAN;
    x[2 * I + 17] = 3.0e38f;    // rounds to +inf as bf16 to nearest; w * x stays finite
    x[3 * I + 33] = -1.0e-30f;  // small normal value: parts far below 1
    std::vector<float> ref(static_cast<size_t>(T * O));
    kernels::RowsArgs a{};
    a.w = w.data();
    a.in = I;
    a.o0 = 0;
    a.o1 = O;
    a.x = x.data();
    a.ldx = I;
    a.T = T;
    a.y = ref.data();
    a.ldy = O;
    kernels::scalar::bf16_rows(a);
    DeviceBuffer dw = to_device(w), dx = to_device(x), dy(static_cast<size_t>(T * O) * sizeof(float));
    const double gamma = I * kU / (1 - I * kU);
    std::vector<double> mag(ref.size(), 0.0);
    for (int t = 0; t < T; ++t)
      for (int64_t o = 0; o < O; ++o)
        for (int64_t i = 0; i < I; ++i)
          if (std::isfinite(x[t * I + i])) mag[t * O + o] += std::fabs(bf16_to_float(w[o * I + i]) * x[t * I + i]);
    for (const int v : versions) {
      dy.fill_byte(0);
      bf16_gemm_version(v, dw.data(), O, I, dx.as<float>(), I, T, dy.as<float>(), O);
      const auto y = from_device<float>(dy, ref.size());
      int bad = 0;
      for (size_t i = 0; i < ref.size(); ++i) {
        const bool same_class = std::isnan(y[i]) == std::isnan(ref[i]) && std::isinf(y[i]) == std::isinf(ref[i]) &&
                                (!std::isinf(ref[i]) || std::signbit(y[i]) == std::signbit(ref[i]));
        const bool close =
            !std::isfinite(ref[i]) || std::fabs(static_cast<double>(y[i]) - ref[i]) <= 2 * gamma * mag[i] + 1e-30;
        if (!same_class || !close) ++bad;
      }
      Result r;
      r.name = "bf16_gemm 64x256 [v" + std::to_string(v) + "] with inf, NaN, 3e38 and 1e-30 in x";
      r.ok = bad == 0;
      r.detail = std::to_string(ref.size()) + " outputs, " + std::to_string(bad) +
                 " differ from the CPU in class (inf sign / NaN / finite) or beyond 2 gamma_n sum|wx|";
      out.push_back(r);
    }
  }
  return out;
}

std::vector<Result> rmsnorm(uint64_t seed) {
  std::vector<Result> out;
  std::mt19937_64 rng(seed + 1);
  const int64_t n = 7168;
  const int T = 8;
  const float eps = 1e-5f;
  auto x = randn(rng, static_cast<size_t>(T * n), 3.f);
  const auto wb = rand_bf16(rng, static_cast<size_t>(n), 1.f);
  std::vector<float> wf(n);
  for (int64_t i = 0; i < n; ++i) wf[i] = bf16_to_float(wb[i]);
  DeviceBuffer dx = to_device(x), dwb = to_device(wb), dwf = to_device(wf), dy(static_cast<size_t>(T * n) * 4);
  std::vector<float> ref(static_cast<size_t>(T * n));
  for (int t = 0; t < T; ++t) ref::rmsnorm(x.data() + t * n, wf.data(), n, eps, ref.data() + t * n);
  for (const bool bf : {true, false}) {
    dy.fill_byte(0xff);
    deltafin::cuda::rmsnorm(dx.as<float>(), n, bf ? dwb.data() : dwf.data(), bf ? WeightType::BF16 : WeightType::F32, n,
                            T, eps, dy.as<float>(), n);
    const auto y = from_device<float>(dy, ref.size());
    double worst = 0;
    for (size_t i = 0; i < y.size(); ++i) {
      const double e = std::fabs(static_cast<double>(y[i]) - ref[i]) / (std::fabs(ref[i]) + 1e-30);
      worst = std::isfinite(y[i]) ? std::max(worst, e) : INFINITY;
    }
    Result r;
    r.name = std::string("rmsnorm n=7168 ") + (bf ? "bf16" : "f32") + " weight vs float64 reference";
    r.op = std::string("rmsnorm ") + (bf ? "bf16" : "f32");
    r.shape = "T=8 n=7168";
    const Errors e = errors(y.data(), ref.data(), ref.size());
    r.max_abs = e.max_abs;
    r.max_rel = e.max_rel;
    // n-term sum of squares plus sqrt, divide and two products: a few hundred ulps at most.
    r.ok = worst <= 2e-5;
    r.detail = "worst elementwise relative error " + fmt(worst) + " (limit 2e-5)";
    out.push_back(r);
  }
  std::vector<std::vector<float>> alone(T);
  for (int p = 0; p < T; ++p) {
    deltafin::cuda::rmsnorm(dx.as<float>() + p * n, n, dwb.data(), WeightType::BF16, n, 1, eps, dy.as<float>(), n);
    alone[p] = from_device<float>(dy, static_cast<size_t>(n));
  }
  int bad = 0, checked = 0;
  for (int Tn : {2, 4, 8}) {
    deltafin::cuda::rmsnorm(dx.as<float>(), n, dwb.data(), WeightType::BF16, n, Tn, eps, dy.as<float>(), n);
    const auto y = from_device<float>(dy, static_cast<size_t>(Tn * n));
    for (int p = 0; p < Tn; ++p, ++checked)
      if (!bits_equal(y.data() + p * n, alone[p].data(), static_cast<size_t>(n))) ++bad;
  }
  out.push_back(invariance_result("rmsnorm batch invariance (T=2,4,8)", bad, checked));

  // Every width class of the launch (register rows of 8 and 32 per thread, the strided loop past
  // 8192) against the kernel as it was, and each row alone against the same row in the 8-row pass.
  int differ = 0, variant = 0, rows = 0;
  std::string where;
  for (const int64_t w : {int64_t(100), int64_t(512), int64_t(1536), int64_t(2048), int64_t(2049), int64_t(7168),
                          int64_t(8192), int64_t(9000)}) {
    const int64_t ld = w + 3;  // rows apart, as in the engine's strided activations
    const auto xw = randn(rng, static_cast<size_t>(T * ld), 2.f);
    const auto wbw = rand_bf16(rng, static_cast<size_t>(w), 1.f);
    std::vector<float> wfw(w);
    for (int64_t i = 0; i < w; ++i) wfw[i] = bf16_to_float(wbw[i]);
    DeviceBuffer ex = to_device(xw), ewb = to_device(wbw), ewf = to_device(wfw), enew(static_cast<size_t>(T * ld) * 4),
                 eold(static_cast<size_t>(T * ld) * 4), eone(static_cast<size_t>(ld) * 4);
    for (const bool bf : {true, false}) {
      const void* wt = bf ? ewb.data() : ewf.data();
      const WeightType type = bf ? WeightType::BF16 : WeightType::F32;
      enew.fill_byte(0);
      eold.fill_byte(0);
      deltafin::cuda::rmsnorm(ex.as<float>(), ld, wt, type, w, T, eps, enew.as<float>(), ld);
      previous::rmsnorm(ex.as<float>(), ld, wt, type, w, T, eps, eold.as<float>(), ld);
      const auto yn = from_device<float>(enew, static_cast<size_t>(T * ld)),
                 yo = from_device<float>(eold, static_cast<size_t>(T * ld));
      for (int t = 0; t < T; ++t, ++rows) {
        if (!bits_equal(yn.data() + t * ld, yo.data() + t * ld, static_cast<size_t>(w))) {
          ++differ;
          where = "n=" + std::to_string(w) + (bf ? " bf16" : " f32");
        }
        deltafin::cuda::rmsnorm(ex.as<float>() + t * ld, ld, wt, type, w, 1, eps, eone.as<float>(), ld);
        const auto y1 = from_device<float>(eone, static_cast<size_t>(w));
        if (!bits_equal(y1.data(), yn.data() + t * ld, static_cast<size_t>(w))) ++variant;
      }
    }
  }
  out.push_back({"rmsnorm == previous kernel, bit for bit (n=100..9000, bf16/f32, T=8)", differ == 0 && rows > 0,
                 std::to_string(rows) + " rows compared, " + std::to_string(differ) + " differ" +
                     (where.empty() ? "" : " (last at " + where + ")")});
  out.push_back(
      invariance_result("rmsnorm batch invariance, every width class (row alone == row of T=8)", variant, rows));
  return out;
}

namespace {

struct ExpertSet {
  int latent, inter, n;
  std::vector<ref::HostExpert> host;
  DeviceBuffer dev;
  std::vector<MxExpert> ptrs;
  // The same experts with the packed codes in fragment order (the fragment-order versions), scales shared.
  DeviceBuffer frag_dev;
  std::vector<MxExpert> frag_ptrs;
  const std::vector<MxExpert>& for_version(const ExpertMlp& mlp) const {
    return mlp.fragment_layout() ? frag_ptrs : ptrs;
  }
};

// Fills es.frag_ptrs, where the shapes allow fragment order.
void add_fragment_copies(ExpertSet& es) {
  if (es.latent % 64 || es.inter % 64 || es.latent % 16 || es.inter % 16) return;
  const size_t packed = static_cast<size_t>(es.inter) * es.latent / 2;
  es.frag_dev = DeviceBuffer(3 * packed * es.n);
  for (int e = 0; e < es.n; ++e) {
    char* base = es.frag_dev.as<char>() + 3 * packed * e;
    const MxExpert& a = es.ptrs[e];
    repack_mx_fragments(a.gate_packed, base, es.inter, es.latent);
    repack_mx_fragments(a.up_packed, base + packed, es.inter, es.latent);
    repack_mx_fragments(a.down_packed, base + 2 * packed, es.latent, es.inter);
    es.frag_ptrs.push_back(MxExpert{base, a.gate_scale, base + packed, a.up_scale, base + 2 * packed, a.down_scale});
  }
  synchronize();
}

// Experts laid out back to back like the checkpoint (gate, down, up is its order; any order works
// here since each tensor has its own pointer), each tensor 256-byte aligned.
ExpertSet make_experts(std::mt19937_64& rng, int n, int latent, int inter) {
  ExpertSet s{latent, inter, n, {}, {}, {}, {}, {}};
  std::uniform_int_distribution<int> byte(0, 255), sc(118, 128), rare(0, 199);
  auto fill_scales = [&](std::vector<uint8_t>& v, size_t count) {
    v.resize(count);
    for (auto& b : v) b = static_cast<uint8_t>(rare(rng) == 0 ? 0 : sc(rng));  // scale 0 = 2^-127 now and then
  };
  auto fill_packed = [&](std::vector<uint8_t>& v, size_t count) {
    v.resize(count);
    for (auto& b : v) b = static_cast<uint8_t>(byte(rng));
  };
  const size_t gp = static_cast<size_t>(inter) * latent / 2, gs = static_cast<size_t>(inter) * latent / 32;
  auto al = [](size_t b) { return (b + 255) & ~size_t(255); };
  const size_t per = 3 * al(gp) + 3 * al(gs);
  s.host.resize(n);
  s.dev = DeviceBuffer(per * n);
  for (int e = 0; e < n; ++e) {
    ref::HostExpert& h = s.host[e];
    fill_packed(h.gate_packed, gp);
    fill_scales(h.gate_scale, gs);
    fill_packed(h.up_packed, gp);
    fill_scales(h.up_scale, gs);
    fill_packed(h.down_packed, gp);
    fill_scales(h.down_scale, gs);
    size_t off = per * e;
    MxExpert m;
    auto put = [&](const std::vector<uint8_t>& v, const void*& ptr) {
      s.dev.upload(v.data(), v.size(), off);
      ptr = static_cast<const char*>(s.dev.data()) + off;
      off += al(v.size());
    };
    put(h.gate_packed, m.gate_packed);
    put(h.gate_scale, m.gate_scale);
    put(h.down_packed, m.down_packed);
    put(h.down_scale, m.down_scale);
    put(h.up_packed, m.up_packed);
    put(h.up_scale, m.up_scale);
    s.ptrs.push_back(m);
  }
  return s;
}

struct Routing {
  std::vector<int32_t> expert;  // [T][K] global expert ids
  std::vector<float> weight;
};

Routing make_routing(std::mt19937_64& rng, int T, int K, int n) {
  Routing r;
  std::uniform_real_distribution<float> wd(0.01f, 1.f);
  std::vector<int> ids(n);
  for (int t = 0; t < T; ++t) {
    for (int e = 0; e < n; ++e) ids[e] = e;
    std::shuffle(ids.begin(), ids.end(), rng);
    float sum = 0;
    std::vector<float> w(K);
    for (int j = 0; j < K; ++j) sum += (w[j] = wd(rng));
    for (int j = 0; j < K; ++j) {
      r.expert.push_back(ids[j]);
      r.weight.push_back(w[j] / sum);
    }
  }
  return r;
}

// Runs rows [r0, r0 + T) of a routing: the distinct-expert table is built the way an engine would.
std::vector<float> run_rows(ExpertMlp& mlp, const ExpertSet& es, const Routing& rt, int r0, int T,
                            const DeviceBuffer& dz, DeviceBuffer& dy) {
  const int K = mlp.top_k();
  std::vector<int> local(es.n, -1);
  std::vector<MxExpert> table;
  std::vector<int32_t> slots(static_cast<size_t>(T * K));
  for (int i = 0; i < T * K; ++i) {
    const int e = rt.expert[static_cast<size_t>(r0 * K + i)];
    if (local[e] < 0) {
      local[e] = static_cast<int>(table.size());
      table.push_back(es.for_version(mlp)[e]);
    }
    slots[i] = local[e];
  }
  dy.fill_byte(0xff);
  mlp.run(table, slots.data(), rt.weight.data() + r0 * K, T, dz.as<float>() + static_cast<size_t>(r0) * es.latent,
          dy.as<float>());
  return from_device<float>(dy, static_cast<size_t>(T) * es.latent);
}

// Rows 0..T-1 each run alone, then inside passes of the first 2, 4 and 8 rows: {rows that differ
// from their run alone, rows compared}.
std::pair<int, int> alone_vs_passes(ExpertMlp& mlp, const ExpertSet& es, const Routing& rt, int T,
                                    const DeviceBuffer& dz, DeviceBuffer& dy, std::vector<std::vector<float>>& alone) {
  alone.assign(T, {});
  for (int p = 0; p < T; ++p) alone[p] = run_rows(mlp, es, rt, p, 1, dz, dy);
  int bad = 0, checked = 0;
  for (int Tn : {2, 4, 8}) {
    const auto y = run_rows(mlp, es, rt, 0, Tn, dz, dy);
    for (int p = 0; p < Tn; ++p, ++checked)
      if (!bits_equal(y.data() + static_cast<size_t>(p) * es.latent, alone[p].data(), static_cast<size_t>(es.latent)))
        ++bad;
  }
  return {bad, checked};
}

void check_experts(std::vector<Result>& out, std::mt19937_64& rng, int n_experts, int latent, int inter, int K,
                   bool all_variants) {
  const int T = 8;
  const std::string tag = "expert_mlp latent=" + std::to_string(latent) + " inter=" + std::to_string(inter) + " " +
                          std::to_string(n_experts) + " experts top-" + std::to_string(K);
  ExpertSet es = make_experts(rng, n_experts, latent, inter);
  add_fragment_copies(es);
  const Routing rt = make_routing(rng, T, K, n_experts);
  auto z = randn(rng, static_cast<size_t>(T) * latent);
  // Odd rows get a wide dynamic range (a few elements x100, many x1e-5): the tensor-core versions
  // scale each vector by its largest element before splitting it into fp16 parts, so the small
  // elements land on fp16 subnormals there. (With x1000 every version, FFMA or tensor core, drifted
  // to 1.2e-5..1.5e-5 from the fp32 reference on the H200: too close to the limit for a steady test.)
  {
    std::uniform_int_distribution<int> pick(0, 99);
    for (int t = 1; t < T; t += 2)
      for (int i = 0; i < latent; ++i) {
        const int u = pick(rng);
        if (u == 0) z[static_cast<size_t>(t) * latent + i] *= 100.f;
        else if (u < 10) z[static_cast<size_t>(t) * latent + i] *= 1e-5f;
      }
  }
  DeviceBuffer dz = to_device(z), dy(static_cast<size_t>(T) * latent * 4);
  ExpertMlp mlp(latent, inter, K, T);

  // Reference for every row.
  std::vector<float> ref(static_cast<size_t>(T) * latent);
  for (int t = 0; t < T; ++t) {
    std::vector<const ref::HostExpert*> ex;
    for (int j = 0; j < K; ++j) ex.push_back(&es.host[rt.expert[t * K + j]]);
    ref::expert_mlp_row(ex, rt.weight.data() + t * K, z.data() + static_cast<size_t>(t) * latent, latent, inter,
                        ref.data() + static_cast<size_t>(t) * latent);
  }
  double ref_max = 0;
  for (float v : ref) ref_max = std::max(ref_max, static_cast<double>(std::fabs(v)));

  std::vector<std::vector<float>> outputs;
  const auto variants = expert_versions(mlp);  // every version, the lab's too
  const size_t nv = all_variants ? variants.size() : 1;
  for (size_t v = 0; v < nv; ++v) {
    select_expert_version(mlp, variants[v]);
    const auto y = run_rows(mlp, es, rt, 0, T, dz, dy);
    const double rl = rel_l2(y.data(), ref.data(), ref.size());
    double worst = 0;
    for (size_t i = 0; i < y.size(); ++i)
      worst = std::isfinite(y[i]) ? std::max(worst, std::fabs(static_cast<double>(y[i]) - ref[i]) / ref_max) : INFINITY;
    Result r;
    r.name = tag + " [" + variants[v] + "] vs CPU scalar, T=8";
    r.op = "expert_mlp " + variants[v].substr(0, variants[v].find(' '));
    r.shape = tag.substr(std::string("expert_mlp ").size()) + " T=8";
    const Errors e = errors(y.data(), ref.data(), ref.size());
    r.max_abs = e.max_abs;
    r.max_rel = e.max_rel;
    // Three chained fp32 products of width up to 3584 with a SiTU between: errors stay near
    // sqrt(n) ulps; 2e-5 in norm is ~300 ulps and any wrong code, scale or row shows as >1e-3.
    r.ok = rl <= 2e-5 && worst <= 1e-4;
    r.detail = "rel L2 error " + fmt(rl) + " (limit 2e-5); worst |err| / max|ref| " + fmt(worst) + " (limit 1e-4)";
    out.push_back(r);
    outputs.push_back(y);
    // Versions that share a reduction order must agree to the bit with the first of them.
    for (size_t u = 0; u < v; ++u) {
      if (expert_reduction_order(variants[u]) != expert_reduction_order(variants[v])) continue;
      Result same;
      same.name = tag + " [" + variants[v] + "] bit-identical to [" + variants[u] + "]";
      same.ok = bits_equal(y.data(), outputs[u].data(), y.size());
      same.detail = same.ok ? "same bits" : "outputs differ: the variants' reduction orders are not the same";
      out.push_back(same);
      break;
    }
  }

  // Batch invariance of every version checked above: row p alone vs inside the first T rows,
  // T = 2, 4, 8, and rows 3..6 as a batch of their own.
  for (size_t v = 0; v < nv; ++v) {
    select_expert_version(mlp, variants[v]);
    std::vector<std::vector<float>> alone;
    auto [bad, checked] = alone_vs_passes(mlp, es, rt, T, dz, dy, alone);
    {
      const auto y = run_rows(mlp, es, rt, 3, 4, dz, dy);
      for (int p = 0; p < 4; ++p, ++checked)
        if (!bits_equal(y.data() + static_cast<size_t>(p) * latent, alone[3 + p].data(), static_cast<size_t>(latent)))
          ++bad;
    }
    out.push_back(
        invariance_result(tag + " [" + variants[v] + "] batch invariance (T=2,4,8 and rows 3..6)", bad, checked));
  }

  // run_routed (tables built on the device from the global ids) against run() with the same
  // routing, bit for bit: T = 1 (no empty groups), 2 and 4 (fewer distinct experts than planned
  // groups, so empty groups are skipped), 8; rows 3..6.
  {
    const DeviceBuffer dtable_rows = to_device(es.ptrs);
    const DeviceBuffer dtable_frag = es.frag_ptrs.empty() ? DeviceBuffer() : to_device(es.frag_ptrs);
    const DeviceBuffer didx = to_device(rt.expert), dw = to_device(rt.weight);
    for (size_t v = 0; v < nv; ++v) {
      select_expert_version(mlp, variants[v]);
      const DeviceBuffer& dtable = mlp.fragment_layout() ? dtable_frag : dtable_rows;
      int bad = 0, checked = 0;
      const std::pair<int, int> passes[] = {{0, 1}, {0, 2}, {0, 4}, {0, 8}, {3, 4}};  // (first row, rows)
      for (const auto& [r0, Tn] : passes) {
        const auto y = run_rows(mlp, es, rt, r0, Tn, dz, dy);
        dy.fill_byte(0xff);
        mlp.run_routed(dtable.as<MxExpert>(), n_experts, didx.as<int32_t>() + r0 * K, dw.as<float>() + r0 * K, Tn,
                       dz.as<float>() + static_cast<size_t>(r0) * latent, dy.as<float>());
        const auto yr = from_device<float>(dy, static_cast<size_t>(Tn) * latent);
        for (int p = 0; p < Tn; ++p, ++checked)
          if (!bits_equal(yr.data() + static_cast<size_t>(p) * latent, y.data() + static_cast<size_t>(p) * latent,
                          static_cast<size_t>(latent)))
            ++bad;
      }
      Result r;
      r.name = tag + " [" + variants[v] + "] run_routed bit-identical to run (T=1,2,4,8 and rows 3..6)";
      r.ok = bad == 0;
      r.detail = std::to_string(checked - bad) + " of " + std::to_string(checked) + " rows identical";
      out.push_back(r);
    }
  }
  select_expert_version(mlp, variants[0]);

  // The default choice (no version selected) may switch versions with the pass size: it only
  // switches to a version of the same reduction order, so rows keep their bits across T.
  {
    ExpertMlp fresh(latent, inter, K, T);
    std::vector<std::vector<float>> alone;
    const auto [bad, checked] = alone_vs_passes(fresh, es, rt, T, dz, dy, alone);
    out.push_back(invariance_result(tag + " [default choice] batch invariance (T=2,4,8)", bad, checked));
  }

  // Where the engine stores experts in fragment order (ExpertMlp::preferred_layout), the default of
  // a fragments-layout object: its own bits alone and in passes, and the bits of the fragment-order
  // version it names.
  if (!es.frag_ptrs.empty() && ExpertMlp::preferred_layout(latent, inter) == ExpertLayout::fragments) {
    ExpertMlp fresh(latent, inter, K, T, ExpertLayout::fragments);
    const std::string name = fresh.variant();
    std::vector<std::vector<float>> alone;
    const auto [bad, checked] = alone_vs_passes(fresh, es, rt, T, dz, dy, alone);
    out.push_back(
        invariance_result(tag + " [fragments-layout default " + name + "] batch invariance (T=2,4,8)", bad, checked));
    const size_t at = static_cast<size_t>(std::find(variants.begin(), variants.end(), name) - variants.begin());
    Result r;
    r.name = tag + " [fragments-layout default] bit-identical to [" + name + "] selected by name, T=8";
    r.ok = at < outputs.size() &&
           bits_equal(run_rows(fresh, es, rt, 0, T, dz, dy).data(), outputs[at].data(), outputs[at].size());
    r.detail = r.ok ? "same bits" : "outputs differ";
    out.push_back(r);

    // Passes whose routing tables exceed the default's shared-memory copy (more than 128
    // assignments: 12 rows of top-16) run the version without it: the same bits, so each row of a
    // 12-row pass equals the row alone (which runs the default itself), for run() and run_routed().
    const int T12 = 12;
    const Routing rt12 = make_routing(rng, T12, K, n_experts);
    DeviceBuffer dz12 = to_device(randn(rng, static_cast<size_t>(T12) * latent)),
                 dy12(static_cast<size_t>(T12) * latent * 4);
    ExpertMlp wide(latent, inter, K, T12, ExpertLayout::fragments);
    const auto y12 = run_rows(wide, es, rt12, 0, T12, dz12, dy12);
    const DeviceBuffer dtable = to_device(es.frag_ptrs), didx = to_device(rt12.expert), dw = to_device(rt12.weight);
    wide.run_routed(dtable.as<MxExpert>(), n_experts, didx.as<int32_t>(), dw.as<float>(), T12, dz12.as<float>(),
                    dy12.as<float>());
    const auto yr12 = from_device<float>(dy12, static_cast<size_t>(T12) * latent);
    int bad12 = 0, checked12 = 0;
    for (int p = 0; p < T12; ++p) {
      const auto one = run_rows(wide, es, rt12, p, 1, dz12, dy12);
      for (const auto* y : {&y12, &yr12}) {
        ++checked12;
        if (!bits_equal(y->data() + static_cast<size_t>(p) * latent, one.data(), static_cast<size_t>(latent))) ++bad12;
      }
    }
    out.push_back(invariance_result(
        tag + " [fragments-layout default " + name + "] 12-row passes (run and run_routed) vs rows alone", bad12,
        checked12));
  }
}

// repack_mx_fragments against the layout written out on the host (mxfp4_experts_direct.cuh): for
// tile r, chunk c and lane l = 4g + t, the words t of blocks 2c, 2c, 2c+1, 2c+1 of rows 16r + g,
// 16r + g + 8, 16r + g, 16r + g + 8. Random bytes, 48 x 192 codes; bad shapes are refused.
Result check_repack(std::mt19937_64& rng) {
  const int rows = 48, cols = 192, wpr = cols / 8;
  std::vector<uint32_t> src(static_cast<size_t>(rows) * wpr);
  for (auto& w : src) w = static_cast<uint32_t>(rng());
  const DeviceBuffer ds = to_device(src);
  DeviceBuffer dd(src.size() * 4);
  repack_mx_fragments(ds.data(), dd.data(), rows, cols);
  const auto got = from_device<uint32_t>(dd, src.size());
  size_t bad = 0, i = 0;
  for (int r = 0; r < rows / 16; ++r)
    for (int c = 0; c < cols / 64; ++c)
      for (int l = 0; l < 32; ++l) {
        const int g = l / 4, t = l % 4;
        const uint32_t want[4] = {src[(16 * r + g) * wpr + 8 * c + t], src[(16 * r + g + 8) * wpr + 8 * c + t],
                                  src[(16 * r + g) * wpr + 8 * c + 4 + t], src[(16 * r + g + 8) * wpr + 8 * c + 4 + t]};
        for (uint32_t w : want) bad += got[i++] != w;
      }
  int refused = 0;
  for (const auto& [rr, cc] : {std::pair{40, 192}, std::pair{48, 160}}) {
    try {
      repack_mx_fragments(ds.data(), dd.data(), rr, cc);
    } catch (const CudaError&) {
      ++refused;
    }
  }
  Result res;
  res.name = "repack_mx_fragments 48x192 codes vs the layout computed on the host; 40x192 and 48x160 refused";
  res.ok = bad == 0 && i == src.size() && refused == 2;
  res.detail = std::to_string(i - bad) + " of " + std::to_string(src.size()) + " words in place, " +
               std::to_string(refused) + " of 2 bad shapes refused";
  return res;
}

// DELTAFIN_CUDA_EXPERT_VERSION names only the product's versions: v134 is taken (the fragments
// layout's version in use), v9 (a lab version) and v7 (no version) are refused with an error that
// names the product's.
Result check_expert_version_env() {
  const char* was = std::getenv("DELTAFIN_CUDA_EXPERT_VERSION");
  const std::string saved = was ? was : "";
  std::string detail;
  int ok = 0;
  for (const char* v : {"v134", "v9", "v7"}) {
    setenv("DELTAFIN_CUDA_EXPERT_VERSION", v, 1);
    const bool product = std::string(v) == "v134";
    try {
      ExpertMlp mlp(512, 512, 4, 2, ExpertLayout::fragments);
      const bool good = product && std::string(mlp.variant()).rfind("v134 ", 0) == 0;
      ok += good;
      detail += std::string(v) + (good ? ": runs v134; " : ": accepted; ");
    } catch (const CudaError& e) {
      const bool good = !product && std::string(e.what()).find("v6, v134, v212, v183, v138, v194") != std::string::npos;
      ok += good;
      detail += std::string(v) + (good ? ": refused; " : std::string(": ") + e.what() + "; ");
    }
  }
  if (was) setenv("DELTAFIN_CUDA_EXPERT_VERSION", saved.c_str(), 1);
  else unsetenv("DELTAFIN_CUDA_EXPERT_VERSION");
  return Result("DELTAFIN_CUDA_EXPERT_VERSION: v134 taken, lab and unknown numbers refused", ok == 3, detail);
}

// The expert kernel's grid (set_expert_grid): a call of a few waves of tasks (on an H200 the default
// takes fewer blocks there: ~51 experts, ~612 tasks, 2.3 waves of 264), run with the default grid,
// the full grid and 7 blocks, gives the same bits, for both layouts' defaults and for v212. 512 x 512
// experts (12 tasks each of v212's tiles), as many as make about 2.5 waves of 2 blocks per SM.
Result check_expert_grid(std::mt19937_64& rng) {
  const int sms = device_info().sm_count;
  const int latent = 512, inter = 512, K = 16, T = 8;
  const int n_experts = std::clamp((5 * sms + 11) / 12, K + 1, T * K);  // ~2.5 x 2 sms tasks of 12 per expert
  ExpertSet es = make_experts(rng, n_experts, latent, inter);
  add_fragment_copies(es);
  const Routing rt = make_routing(rng, T, K, n_experts);
  DeviceBuffer dz = to_device(randn(rng, static_cast<size_t>(T) * latent)), dy(static_cast<size_t>(T) * latent * 4);
  int bad = 0, checked = 0;
  std::string names;
  // The defaults of both layouts, and v212 (the default of calls of one row) by name.
  for (int which = 0; which < 3; ++which) {
    ExpertMlp mlp(latent, inter, K, T, which == 1 ? ExpertLayout::rows : ExpertLayout::fragments);
    if (which == 2) {
      const auto vs = expert_versions(mlp);
      const auto it = std::find_if(vs.begin(), vs.end(), [](const std::string& v) { return v.rfind("v212 ", 0) == 0; });
      if (it == vs.end()) continue;
      select_expert_version(mlp, *it);
    }
    const std::string v = mlp.variant();
    names += std::string(names.empty() ? "" : ", ") + v.substr(0, v.find(' '));
    std::vector<float> first;
    for (const unsigned grid : {0u, 100000u, 7u}) {
      set_expert_grid(grid);
      const auto y = run_rows(mlp, es, rt, 0, T, dz, dy);
      if (first.empty()) {
        first = y;
      } else {
        ++checked;
        if (!bits_equal(y.data(), first.data(), y.size())) ++bad;
      }
    }
  }
  set_expert_grid(0);
  Result r;
  r.name = "expert_mlp latent=512 inter=512 " + std::to_string(n_experts) + " experts top-16 T=8 [" + names +
           "] default grid vs full grid vs 7 blocks";
  r.ok = bad == 0 && checked >= 4;
  r.detail =
      std::to_string(checked - bad) + " of " + std::to_string(checked) + " runs bit-identical to the default grid's";
  return r;
}

}  // namespace

std::vector<Result> expert_mlp(uint64_t seed, bool k3_shapes) {
  std::vector<Result> out;
  std::mt19937_64 rng(seed + 4);
  out.push_back(check_repack(rng));
  out.push_back(check_expert_grid(rng));
  if (device_info().cc_major >= 8) out.push_back(check_expert_version_env());
  check_experts(out, rng, 40, 256, 192, 16, true);
  check_experts(out, rng, 6, 32, 64, 4, true);  // k3-tiny's fixture shapes (latent 32, intermediate 64, top-4)
  if (k3_shapes) check_experts(out, rng, 24, 3584, 3072, 16, true);
  return out;
}

std::vector<uint16_t> rand_bf16(std::mt19937_64& rng, size_t n, float sd) {
  std::normal_distribution<float> d(0.f, sd);
  std::vector<uint16_t> v(n);
  for (auto& b : v) {
    const float f = d(rng);
    uint32_t bits;
    std::memcpy(&bits, &f, 4);
    b = static_cast<uint16_t>(bits >> 16);  // truncation: any bf16 value is a valid weight
  }
  return v;
}

}  // namespace deltafin::cuda::check

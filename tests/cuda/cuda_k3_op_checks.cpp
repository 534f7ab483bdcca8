// Every op of kernels/cuda/k3 against a float64 CPU reference written here from K3-SPEC.md section 3
// (plain loops, no engine code, so the standalone deltafin-cuda-check runs them too), and the row
// ops' batch invariance. One Result per op and shape: the rows of deltafin-cuda-check's table.
// The ops compute in fp64 like the reference, on fp64 inputs and weights widened exactly (BF16,
// fp32, MXFP4), so the two differ only by the roundings of their own summation orders and of the
// GPU's exp / tanh: the limits below are a few hundred ulps, and a value that passed through fp32
// anywhere misses them by orders of magnitude.
#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstring>
#include <numeric>
#include <random>
#include <sstream>

#include "cuda/k3/k3_ops.h"
#include "cuda/situ.h"
#include "cuda_checks.h"
#include "support/worst_error.h"

namespace deltafin::cuda::check {
namespace {

using std::vector;

// Limits (fp64 unit roundoff u = 2^-53 = 1.1e-16; fp32 would give 6e-8).
// Elementwise functions (exp, tanh, sigmoid and a few products per value), normwise and per element:
// each value is a few roundings on either side, ~1e-15.
constexpr double kElemLimit = 1e-13;
// Dots of up to 7168 random-sign terms (the GEMM): the rounding errors of a chain add up like a
// random walk, a few times u sqrt(K) normwise (~1e-14 at K = 7168).
constexpr double kDotLimit = 1e-13;
// Sums that feed further arithmetic: norms over up to 7168 squares, score + softmax + mix, the KDA
// recurrence over T steps, the MXFP4 experts' two dots around SiTU. Each stage's error passes into
// the next, still ~1e-14 at most.
constexpr double kSumLimit = 1e-12;

// The reference's SiTU constants are the spec's; the kernels are compiled with situ.h's.
static_assert(kSituBeta == 4.0f && kSituLinearBeta == 25.0f, "K3-SPEC: activation_situ_beta 4, linear_beta 25");

struct Io {
  std::mt19937_64 rng;
  Stream s = nullptr;  // the legacy default stream: every download waits for the ops before it
  explicit Io(uint64_t seed) : rng(seed) {}
  // Activations: fp64 normals.
  vector<double> randn(size_t n, double sd = 1) {
    std::normal_distribution<double> d(0, sd);
    vector<double> v(n);
    for (double& x : v) x = d(rng);
    return v;
  }
  // fp32 weights (norm weights, biases, taps, fp32 matrices).
  vector<float> randf(size_t n, float sd = 1.f) {
    std::normal_distribution<float> d(0.f, sd);
    vector<float> v(n);
    for (float& x : v) x = d(rng);
    return v;
  }
  template <class T>
  DeviceBuffer up(const vector<T>& v) {
    DeviceBuffer b(std::max<size_t>(v.size(), 1) * sizeof(T));
    b.upload(v.data(), v.size() * sizeof(T));
    return b;
  }
  template <class T = double>
  vector<T> down(const DeviceBuffer& b, size_t n) {
    vector<T> v(n);
    synchronize();
    b.download(v.data(), n * sizeof(T));
    return v;
  }
  // A poisoned output buffer of n 8-byte elements (NaN bytes; -1 as int32): an element the op does
  // not write fails the comparison.
  DeviceBuffer out(size_t n) {
    DeviceBuffer b(std::max<size_t>(n, 1) * 8);
    b.fill_byte(0xff);
    return b;
  }
};

double sigmoid(double x) { return 1 / (1 + std::exp(-x)); }
double situ(double g, double u) { return 4 * std::tanh(g / 4) * sigmoid(g) * (25 * std::tanh(u / 25)); }
float bf16f(uint16_t b) {
  const uint32_t u = uint32_t(b) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}
vector<double> widen(const vector<float>& v) { return vector<double>(v.begin(), v.end()); }
vector<double> widen(const vector<uint16_t>& bf16) {
  vector<double> v(bf16.size());
  for (size_t i = 0; i < v.size(); ++i) v[i] = bf16f(bf16[i]);
  return v;
}
// The first T rows of `width` values of a matrix with row stride ld, packed.
vector<double> rows_of(const vector<double>& m, int T, int64_t width, int64_t ld) {
  vector<double> v;
  for (int t = 0; t < T; ++t) v.insert(v.end(), m.begin() + t * ld, m.begin() + t * ld + width);
  return v;
}

// A row of the table from measured errors: passes when the normwise error max|gpu - ref| / max|ref|
// is at most rel_limit (0: bit for bit, max |difference| 0).
Result measured(const std::string& op, const std::string& shape, const Errors& e, double rel_limit,
                const std::string& what) {
  Result r;
  r.op = op;
  r.shape = shape;
  r.max_abs = e.max_abs;
  r.max_rel = e.max_rel;
  r.ok = rel_limit > 0 ? e.max_rel <= rel_limit : e.max_abs == 0;
  r.name = op + " " + shape + " " + what;
  std::ostringstream d;
  d.precision(3);
  if (rel_limit > 0) d << "normwise error " << e.max_rel << " (limit " << rel_limit << ")";
  else d << "max |difference| " << e.max_abs << " (must be 0)";
  r.detail = d.str();
  return r;
}

// The GPU's output against the float64 reference. Bit for bit (rel_limit 0) where the CPU does the
// same fp64 operations (copies, sums of two or three values).
Result row(const std::string& op, const std::string& shape, const vector<double>& gpu, const vector<double>& ref,
           double rel_limit, const std::string& what = "vs float64 CPU reference") {
  return measured(op, shape, errors(gpu.data(), ref.data(), ref.size()), rel_limit, what);
}

// r, further required to be within `limit` of the reference in every element on its own (relative):
// for elementwise functions, where a normwise error could hide a wrong small value.
Result elementwise_too(Result r, const vector<double>& gpu, const vector<double>& ref, double limit) {
  double worst = 0;
  for (size_t i = 0; i < ref.size(); ++i)
    worst = test::worst_of(worst, std::fabs(gpu[i] - ref[i]) / (std::fabs(ref[i]) + DBL_MIN));
  r.ok = r.ok && worst <= limit;
  std::ostringstream d;
  d.precision(3);
  d << "; worst elementwise relative error " << worst << " (limit " << limit << ")";
  r.detail += d.str();
  return r;
}

// Batch invariance: rows compared bit for bit, one Result for all of an op's comparisons.
struct Invariance {
  int checked = 0, differ = 0;
  template <class T>
  void rows(const T* a, int64_t lda, const T* b, int64_t ldb, int n, int64_t width) {
    for (int r = 0; r < n; ++r, ++checked)
      if (std::memcmp(a + r * lda, b + r * ldb, size_t(width) * sizeof(T))) ++differ;
  }
  Result result(const std::string& op, const std::string& shape, const std::string& what) const {
    return Result(op + " batch invariance (" + what + ")", differ == 0 && checked > 0,
                  std::to_string(checked) + " rows compared bit for bit, " + std::to_string(differ) + " differ", op,
                  shape);
  }
};

void elementwise(Io& io, vector<Result>& out) {
  const int64_t n = 100003;
  const auto a = io.randn(n), b = io.randn(n), c = io.randn(n), g = io.randn(n, 4);
  auto da = io.up(a), db = io.up(b), dc = io.up(c), dg = io.up(g);
  const std::string shape = "n=" + std::to_string(n);
  auto o = io.out(n);
  k3::copy(da.as<double>(), o.as<double>(), n, io.s);
  out.push_back(row("k3::copy", shape, io.down(o, n), a, 0, "vs the input"));
  o.fill_byte(0xff);
  k3::add(da.as<double>(), db.as<double>(), o.as<double>(), n, io.s);
  {
    vector<double> f(n);
    for (int64_t i = 0; i < n; ++i) f[i] = a[i] + b[i];
    out.push_back(row("k3::add", shape, io.down(o, n), f, 0, "vs fp64 CPU, bit for bit"));
    o.fill_byte(0xff);
    k3::add_sum(da.as<double>(), db.as<double>(), nullptr, o.as<double>(), n, io.s);
    out.push_back(row("k3::add_sum", shape + " c=null", io.down(o, n), f, 0, "a + b vs fp64 CPU, bit for bit"));
  }
  o.fill_byte(0xff);
  k3::add_sum(da.as<double>(), db.as<double>(), dc.as<double>(), o.as<double>(), n, io.s);
  {
    vector<double> f(n);
    for (int64_t i = 0; i < n; ++i) f[i] = a[i] + (b[i] + c[i]);
    out.push_back(row("k3::add_sum", shape, io.down(o, n), f, 0, "a + (b + c) vs fp64 CPU, bit for bit"));
  }
  o.fill_byte(0xff);
  k3::mul_sigmoid(da.as<double>(), dg.as<double>(), o.as<double>(), n, io.s);
  {
    vector<double> ref(n);
    for (int64_t i = 0; i < n; ++i) ref[i] = a[i] * sigmoid(g[i]);
    const auto got = io.down(o, n);
    out.push_back(elementwise_too(row("k3::mul_sigmoid", shape, got, ref, kElemLimit), got, ref, kElemLimit));
  }

  // SiTU GLU over stacked [gate | up] rows, K3's betas, over the whole range where tanh saturates.
  const int T = 5;
  const int64_t w = 3072;
  vector<double> gu(size_t(T) * 2 * w);
  std::uniform_real_distribution<double> wide(-40, 40);
  for (int t = 0; t < T; ++t)
    for (int64_t j = 0; j < w; ++j) {
      gu[size_t(t) * 2 * w + j] = wide(io.rng);
      gu[size_t(t) * 2 * w + w + j] = 2 * wide(io.rng);
    }
  auto dgu = io.up(gu);
  auto h = io.out(size_t(T) * w);
  k3::situ_glu_rows(dgu.as<double>(), T, w, kSituBeta, kSituLinearBeta, h.as<double>(), io.s);
  const auto gh = io.down(h, size_t(T) * w);
  vector<double> rh(gh.size());
  for (int t = 0; t < T; ++t)
    for (int64_t j = 0; j < w; ++j)
      rh[size_t(t) * w + j] = situ(gu[size_t(t) * 2 * w + j], gu[size_t(t) * 2 * w + w + j]);
  out.push_back(elementwise_too(row("k3::situ_glu_rows", "T=5 n=3072 g in [-40,40] u in [-80,80]", gh, rh, kElemLimit),
                                gh, rh, kElemLimit));
}

// k3::gemm, BF16 and fp32 weights, one shape at least in each of gemm_variant's row classes (< 1024,
// < 2048, < 4096, < 16384, more), at T = 1 (every row alone), 2, 5, 16 and 20 (each of its T classes,
// and two passes of column tiles): K3's hidden width with x's rows 16-byte aligned (activation pairs,
// staged at T = 1 and 2) and with an odd stride (one at a time, staged one at a time); partial last
// row tiles, blocks and chunks; a width not a multiple of 8 (scalar weight loads); a width whose T = 2
// rows do not fit shared memory and one whose single row does not either (loaded at use). Against
// the float64 reference, and every row of every pass against the T = 20 pass bit for bit: the
// policy switches kernels by T, and no output may change with it.
void gemms(Io& io, vector<Result>& out) {
  constexpr int kT = 20;
  struct Shape {
    int64_t O, I, pad;  // pad: extra doubles per row of x (odd: x's rows not 16-byte aligned)
  };
  for (const Shape sh :
       {Shape{64, 7168, 3}, Shape{896, 7168, 0}, Shape{1536, 1032, 2}, Shape{3000, 1032, 0}, Shape{4100, 1032, 3},
        Shape{16400, 264, 0}, Shape{300, 1029, 3}, Shape{40, 20000, 1}, Shape{100, 30000, 0}}) {
    const int64_t O = sh.O, I = sh.I, ldx = I + sh.pad, ldy = O + 5;
    const std::string shape =
        std::to_string(O) + "x" + std::to_string(I) + " ldx=" + std::to_string(ldx) + " T=1,2,5,16,20";
    const auto x = io.randn(size_t(kT * ldx));
    auto dx = io.up(x);
    for (const bool bf : {true, false}) {
      vector<double> wd;
      DeviceBuffer dw;
      if (bf) {
        const auto wb = rand_bf16(io.rng, size_t(O * I), 0.05f);
        wd = widen(wb);
        dw = io.up(wb);
      } else {
        const auto wf = io.randf(size_t(O * I), 0.05f);
        wd = widen(wf);
        dw = io.up(wf);
      }
      const k3::DevMat m{dw.data(), bf, O, I};
      const std::string op = std::string("k3::gemm ") + (bf ? "bf16" : "f32");
      // Each BF16 or fp32 weight times an fp64 x, summed in fp64 in column order.
      vector<double> ref(size_t(kT * O));
      for (int t = 0; t < kT; ++t)
        for (int64_t o = 0; o < O; ++o) {
          double s = 0;
          for (int64_t i = 0; i < I; ++i) s += wd[size_t(o * I + i)] * x[size_t(t * ldx + i)];
          ref[size_t(t * O + o)] = s;
        }

      auto y = io.out(size_t(kT * ldy));
      for (int t = 0; t < kT; ++t) k3::gemm(m, dx.as<double>() + t * ldx, ldx, 1, y.as<double>() + t * ldy, ldy, io.s);
      vector<vector<double>> got;  // [pass]: alone, T = 2, 5, 16, 20; [T][ldy]
      got.push_back(io.down(y, size_t(kT * ldy)));
      const int passes[] = {kT, 2, 5, 16, kT};
      constexpr int kPasses = 5;
      for (int p = 1; p < kPasses; ++p) {
        y.fill_byte(0xff);
        k3::gemm(m, dx.as<double>(), ldx, passes[p], y.as<double>(), ldy, io.s);
        got.push_back(io.down(y, size_t(passes[p] * ldy)));
      }

      Errors worst;
      std::ostringstream per_t;
      per_t.precision(3);
      per_t << "; per pass:";
      for (int p = 0; p < kPasses; ++p) {
        const int T = passes[p];
        const auto g = rows_of(got[p], T, O, ldy);
        const Errors e = errors(g.data(), ref.data(), g.size());
        worst.max_abs = test::worst_of(worst.max_abs, e.max_abs);
        worst.max_rel = test::worst_of(worst.max_rel, e.max_rel);
        per_t << (p == 0 ? " 20 rows alone " : ", T=" + std::to_string(T) + " ") << e.max_rel;
      }
      Result r = measured(op, shape, worst, kDotLimit, "vs float64 CPU reference");
      r.detail += per_t.str();
      out.push_back(r);

      // Batch invariance: each row alone and the T=2, 5 and 16 passes against the T=20 pass.
      Invariance inv;
      for (int p = 0; p < kPasses - 1; ++p) inv.rows(got[p].data(), ldy, got[kPasses - 1].data(), ldy, passes[p], O);
      out.push_back(inv.result(op, shape, "T=1 and the first rows of T=2,5,16 vs T=20"));
    }
  }
}

// Embedding rows, RMSNorm, the logits' rounding.
void rows_norms(Io& io, vector<Result>& out) {
  {  // embedding rows, BF16 and fp32 tables: exact widening
    const int64_t V = 1000, C = 640;
    const int T = 7;
    vector<uint16_t> tb(size_t(V * C));
    for (auto& b : tb) b = uint16_t(io.rng() & 0x7f7f);  // finite values of every exponent
    vector<float> tf(tb.size());
    for (size_t i = 0; i < tb.size(); ++i) tf[i] = bf16f(tb[i]);
    const vector<int32_t> ids = {0, 999, 5, 5, 123, 998, 1};
    auto dtb = io.up(tb), dtf = io.up(tf), dids = io.up(ids);
    vector<double> ref;
    for (int t = 0; t < T; ++t)
      for (int64_t j = 0; j < C; ++j) ref.push_back(tf[size_t(ids[t]) * C + j]);
    for (const bool bf : {true, false}) {
      auto y = io.out(size_t(T * C));
      k3::gather_rows(k3::DevMat{bf ? dtb.data() : dtf.data(), bf, V, C}, dids.as<int32_t>(), T, y.as<double>(), io.s);
      out.push_back(row(std::string("k3::gather_rows ") + (bf ? "bf16" : "f32"), "1000x640 T=7",
                        io.down(y, size_t(T * C)), ref, 0, "vs the table's rows, widened exactly"));
    }
  }
  // RMSNorm: padded strides, K3's hidden width and one that leaves threads idle; one row so small
  // that eps weighs as much as its mean square. Out of place, in place (y == x, same bits), and
  // every row alone vs inside the pass.
  for (const auto& [n, T] : {std::pair<int64_t, int>{7168, 5}, std::pair<int64_t, int>{1029, 3}}) {
    const int64_t ldx = n + 3, ldy = n + 1;
    const double eps = 1e-5;
    auto x = io.randn(size_t(T * ldx), 3);
    for (int64_t j = 0; j < n; ++j) x[size_t(ldx + j)] *= 1e-3;
    const auto w = io.randf(size_t(n), 0.5f);
    auto dx = io.up(x), dw = io.up(w);
    const std::string shape = "n=" + std::to_string(n) + " T=" + std::to_string(T);
    vector<double> ref(size_t(T * n));
    for (int t = 0; t < T; ++t) {
      double ss = 0;
      for (int64_t j = 0; j < n; ++j) ss += x[size_t(t * ldx + j)] * x[size_t(t * ldx + j)];
      const double inv = 1 / std::sqrt(ss / double(n) + eps);
      for (int64_t j = 0; j < n; ++j) ref[size_t(t * n + j)] = x[size_t(t * ldx + j)] * inv * double(w[size_t(j)]);
    }
    auto y = io.out(size_t(T * ldy));
    k3::rmsnorm(dx.as<double>(), ldx, dw.as<float>(), n, T, eps, y.as<double>(), ldy, io.s);
    const auto gy = io.down(y, size_t(T * ldy));
    const auto packed = rows_of(gy, T, n, ldy);
    out.push_back(row("k3::rmsnorm", shape, packed, ref, kSumLimit));

    auto xi = io.up(x);
    k3::rmsnorm(xi.as<double>(), ldx, dw.as<float>(), n, T, eps, xi.as<double>(), ldx, io.s);
    out.push_back(row("k3::rmsnorm", shape + " in place", rows_of(io.down(xi, size_t(T * ldx)), T, n, ldx), packed, 0,
                      "y == x vs out of place, bit for bit"));

    y.fill_byte(0xff);
    for (int t = 0; t < T; ++t)
      k3::rmsnorm(dx.as<double>() + t * ldx, ldx, dw.as<float>(), n, 1, eps, y.as<double>() + t * ldy, ldy, io.s);
    const auto alone = io.down(y, size_t(T * ldy));
    Invariance inv;
    inv.rows(alone.data(), ldy, gy.data(), ldy, T, n);
    out.push_back(inv.result("k3::rmsnorm", shape, "T=1 vs T=" + std::to_string(T)));
  }
  {  // narrow: fp64 -> fp32 round to nearest even, as a static_cast on the CPU: normal values,
     // fp32 subnormals and underflow, overflow to infinity, signed zeros and infinities.
    const int64_t n = 20011;
    vector<double> x = io.randn(size_t(n));
    std::uniform_int_distribution<int> ex(-160, 135);
    for (double& v : x) v = std::ldexp(v, ex(io.rng));
    // The largest float, a value that rounds down to it and the tie above it (to even: infinity), the
    // smallest normal and subnormal floats, ties to even (0, -2^-148, 1) and a value above a tie.
    const double big = FLT_MAX, tiny = 0x1p-149;
    const double special[] = {
        0.0,           -0.0,    INFINITY, -INFINITY, big,         -big,        big * (1 + 0x1p-25),
        big + 0x1p103, FLT_MIN, tiny,     tiny / 2,  -1.5 * tiny, 1 + 0x1p-24, 1 + 0x1.8p-24};
    std::copy(std::begin(special), std::end(special), x.begin());
    auto dx = io.up(x);
    DeviceBuffer y(size_t(n) * sizeof(float));
    y.fill_byte(0xff);
    k3::narrow(dx.as<double>(), y.as<float>(), n, io.s);
    const auto gy = io.down<float>(y, size_t(n));
    vector<float> ref(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) ref[size_t(i)] = static_cast<float>(x[size_t(i)]);
    int differ = 0;
    for (int64_t i = 0; i < n; ++i) differ += test::same_bits(gy[size_t(i)], ref[size_t(i)]) ? 0 : 1;
    out.push_back(Result("k3::narrow n=20011 vs static_cast<float>, bit for bit", differ == 0,
                         std::to_string(n) + " values compared bit for bit, " + std::to_string(differ) + " differ",
                         "k3::narrow", "n=20011 exponents -160..135 + specials"));
  }
}

void kda(Io& io, vector<Result>& out) {
  {  // l2norm per head
    const int T = 3, heads = 5, d = 128;
    const double scale = 1 / std::sqrt(128.0);
    const auto x = io.randn(size_t(T) * heads * d, 2);
    auto dx = io.up(x);
    k3::l2norm_heads(dx.as<double>(), T, heads, d, scale, io.s);
    vector<double> ref(x.size());
    for (int r = 0; r < T * heads; ++r) {
      double ss = 0;
      for (int i = 0; i < d; ++i) ss += x[r * d + i] * x[r * d + i];
      for (int i = 0; i < d; ++i) ref[r * d + i] = x[r * d + i] / std::sqrt(ss + 1e-6) * scale;
    }
    out.push_back(row("k3::l2norm_heads", "T=3 heads=5 d=128", io.down(dx, x.size()), ref, kSumLimit));
  }
  {  // gates (dt_bias and A_log fp32 weights, widened before any arithmetic)
    const int T = 3, heads = 4, d = 128;
    const double lower = -5;
    const auto fb = io.randn(size_t(T) * heads * d), braw = io.randn(size_t(T) * heads, 2);
    const auto dtb = io.randf(size_t(heads) * d, 0.5f), alog = io.randf(heads, 0.5f);
    auto dfb = io.up(fb), ddt = io.up(dtb), dal = io.up(alog), dbr = io.up(braw);
    auto la = io.out(fb.size()), beta = io.out(braw.size());
    k3::kda_gates(dfb.as<double>(), ddt.as<float>(), dal.as<float>(), dbr.as<double>(), T, heads, d, lower,
                  la.as<double>(), beta.as<double>(), io.s);
    vector<double> rla(fb.size()), rb(braw.size());
    for (int t = 0; t < T; ++t)
      for (int h = 0; h < heads; ++h) {
        rb[t * heads + h] = sigmoid(braw[t * heads + h]);
        for (int i = 0; i < d; ++i) {
          const size_t c = size_t(h) * d + i;
          rla[size_t(t) * heads * d + c] =
              lower * sigmoid(std::exp(double(alog[h])) * (fb[size_t(t) * heads * d + c] + double(dtb[c])));
        }
      }
    const auto gla = io.down(la, fb.size()), gb = io.down(beta, braw.size());
    out.push_back(elementwise_too(row("k3::kda_gates log_alpha", "T=3 heads=4 d=128", gla, rla, kElemLimit), gla, rla,
                                  kElemLimit));
    out.push_back(elementwise_too(row("k3::kda_gates beta", "T=3 heads=4", gb, rb, kElemLimit), gb, rb, kElemLimit));
  }
  {  // causal depthwise conv + SiLU over [window | raw], and the window after n rows
    const int T = 4, C = 300, K = 4, K1 = K - 1;
    const auto win = io.randn(size_t(3) * K1 * C), raw = io.randn(size_t(T) * 3 * C);
    const auto tq = io.randf(size_t(C) * K, 0.5f), tk = io.randf(size_t(C) * K, 0.5f),
               tv = io.randf(size_t(C) * K, 0.5f);
    auto dwin = io.up(win), draw = io.up(raw), dtq = io.up(tq), dtk = io.up(tk), dtv = io.up(tv);
    auto q = io.out(size_t(T) * C), k = io.out(size_t(T) * C), v = io.out(size_t(T) * C);
    k3::kda_conv(dwin.as<double>(), draw.as<double>(), T, C, K, dtq.as<float>(), dtk.as<float>(), dtv.as<float>(),
                 q.as<double>(), k.as<double>(), v.as<double>(), io.s);
    vector<double> got, ref;
    const vector<float>* taps[3] = {&tq, &tk, &tv};
    const DeviceBuffer* outs[3] = {&q, &k, &v};
    for (int which = 0; which < 3; ++which) {
      const auto g = io.down(*outs[which], size_t(T) * C);
      got.insert(got.end(), g.begin(), g.end());
      for (int t = 0; t < T; ++t)
        for (int ch = 0; ch < C; ++ch) {
          double acc = 0;
          for (int j = 0; j < K; ++j) {
            const int src = t + j;
            const double xv =
                src < K1 ? win[(size_t(which) * K1 + src) * C + ch] : raw[(size_t(src - K1) * 3 + which) * C + ch];
            acc += double((*taps[which])[size_t(ch) * K + j]) * xv;
          }
          ref.push_back(acc * sigmoid(acc));
        }
    }
    out.push_back(row("k3::kda_conv", "T=4 C=300 K=4 (q, k, v)", got, ref, kSumLimit));
    const int n = 2;
    auto nw = io.out(win.size());
    k3::kda_window_after(dwin.as<double>(), draw.as<double>(), n, C, K, nw.as<double>(), io.s);
    vector<double> rw(win.size());
    for (int which = 0; which < 3; ++which)
      for (int r = 0; r < K1; ++r)
        for (int ch = 0; ch < C; ++ch) {
          const int src = n + r;
          rw[(size_t(which) * K1 + r) * C + ch] =
              src < K1 ? win[(size_t(which) * K1 + src) * C + ch] : raw[(size_t(src - K1) * 3 + which) * C + ch];
        }
    out.push_back(row("k3::kda_window_after", "n=2 C=300 K=4", io.down(nw, win.size()), rw, 0, "vs the rows it keeps"));
  }
  {  // the recurrence: per head and value column, decay, delta rule, read out (K3's head shape)
    const int heads = 2, dk = 128, dv = 128, T = 5;
    const auto S = io.randn(size_t(heads) * dk * dv, 0.1);
    const auto q = io.randn(size_t(T) * heads * dk, 0.09), k = io.randn(q.size(), 0.09),
               v = io.randn(size_t(T) * heads * dv);
    vector<double> la(q.size()), beta(size_t(T) * heads);
    std::normal_distribution<double> nd;
    for (auto& x : la) x = -5 * sigmoid(nd(io.rng));
    for (auto& x : beta) x = sigmoid(nd(io.rng));
    auto dS = io.up(S), dq = io.up(q), dk_ = io.up(k), dv_ = io.up(v), dla = io.up(la), db = io.up(beta);
    auto o = io.out(v.size());
    k3::kda_recurrent(dS.as<double>(), heads, dk, dv, T, dq.as<double>(), dk_.as<double>(), dv_.as<double>(),
                      dla.as<double>(), db.as<double>(), o.as<double>(), io.s);
    vector<double> Sd = S, ro(v.size());
    for (int t = 0; t < T; ++t)
      for (int h = 0; h < heads; ++h)
        for (int j = 0; j < dv; ++j) {
          double* col = Sd.data() + size_t(h) * dk * dv + j;
          const size_t qk = (size_t(t) * heads + h) * dk;
          double kS = 0;
          for (int i = 0; i < dk; ++i) {
            col[size_t(i) * dv] *= std::exp(la[qk + i]);
            kS += k[qk + i] * col[size_t(i) * dv];
          }
          const double u = beta[t * heads + h] * (v[(size_t(t) * heads + h) * dv + j] - kS);
          double acc = 0;
          for (int i = 0; i < dk; ++i) {
            col[size_t(i) * dv] += k[qk + i] * u;
            acc += q[qk + i] * col[size_t(i) * dv];
          }
          ro[(size_t(t) * heads + h) * dv + j] = acc;
        }
    out.push_back(row("k3::kda_recurrent output", "heads=2 dk=dv=128 T=5", io.down(o, v.size()), ro, kSumLimit));
    out.push_back(row("k3::kda_recurrent state", "heads=2 dk=dv=128 T=5", io.down(dS, S.size()), Sd, kSumLimit));
  }
  {  // output RMSNorm per head times the sigmoid gate
    const int T = 3, heads = 4, d = 128;
    const double eps = 1e-5;
    const auto o = io.randn(size_t(T) * heads * d, 3), gate = io.randn(o.size(), 2);
    const auto w = io.randf(d, 0.5f);
    auto dox = io.up(o), dg = io.up(gate), dw = io.up(w);
    k3::kda_out_norm_gate(dox.as<double>(), dg.as<double>(), dw.as<float>(), T, heads, d, eps, io.s);
    vector<double> ref(o.size());
    for (int r = 0; r < T * heads; ++r) {
      double ss = 0;
      for (int i = 0; i < d; ++i) ss += o[r * d + i] * o[r * d + i];
      const double inv = 1 / std::sqrt(ss / d + eps);
      for (int i = 0; i < d; ++i) ref[r * d + i] = o[r * d + i] * inv * double(w[i]) * sigmoid(gate[r * d + i]);
    }
    out.push_back(row("k3::kda_out_norm_gate", "T=3 heads=4 d=128", io.down(dox, o.size()), ref, kSumLimit));
  }
}

void attn_res(Io& io, vector<Result>& out) {
  const int T = 3, H = 7168, n = 5;
  const double eps = 1e-5;
  vector<vector<double>> ent;
  vector<DeviceBuffer> de;
  k3::ResEntries re;
  for (int i = 0; i < n; ++i) {
    ent.push_back(io.randn(size_t(T) * H));
    de.push_back(io.up(ent.back()));
    re.p[re.n++] = de.back().as<double>();
  }
  const auto w = io.randf(H, 0.02f);
  auto dw = io.up(w);
  auto o = io.out(size_t(T) * H), scratch = io.out(size_t(T) * k3::kMaxResEntries);
  k3::attn_res_mix(re, dw.as<float>(), T, H, eps, scratch.as<double>(), o.as<double>(), io.s);
  vector<double> ref(size_t(T) * H);
  for (int t = 0; t < T; ++t) {
    vector<double> sc(n);
    for (int i = 0; i < n; ++i) {
      const double* v = &ent[i][size_t(t) * H];
      double ss = 0, d = 0;
      for (int j = 0; j < H; ++j) ss += v[j] * v[j];
      const double inv = 1 / std::sqrt(ss / H + eps);
      for (int j = 0; j < H; ++j) d += v[j] * inv * double(w[j]);
      sc[i] = d;
    }
    const double mx = *std::max_element(sc.begin(), sc.end());
    double sum = 0;
    for (auto& x : sc) sum += (x = std::exp(x - mx));
    for (int j = 0; j < H; ++j) {
      double acc = 0;
      for (int i = 0; i < n; ++i) acc += sc[i] / sum * ent[i][size_t(t) * H + j];
      ref[size_t(t) * H + j] = acc;
    }
  }
  out.push_back(row("k3::attn_res_mix", "T=3 H=7168 entries=5", io.down(o, ref.size()), ref, kSumLimit));
}

void mla(Io& io, vector<Result>& out) {
  const int T = 3, nh = 4, N = 128, P = 64, Vd = 128, R = 512;
  const int64_t base = 37, max_ctx = 64;
  const double scale = 1 / std::sqrt(192.0);
  const auto kvb = rand_bf16(io.rng, size_t(nh) * (N + Vd) * R, 0.05f);
  auto W = [&](int64_t r, int64_t j) { return double(bf16f(kvb[size_t(r) * R + j])); };
  const auto q = io.randn(size_t(T) * nh * (N + P));
  auto dkvb = io.up(kvb), dq = io.up(q);
  const k3::DevMat kv{dkvb.data(), true, int64_t(nh) * (N + Vd), R};
  const std::string shape = "T=3 heads=4 N=128 P=64 V=128 R=512";

  auto qabs = io.out(size_t(T) * nh * R);
  k3::mla_absorb_q(dq.as<double>(), kv, T, nh, N, P, Vd, qabs.as<double>(), io.s);
  const auto gq = io.down(qabs, size_t(T) * nh * R);
  vector<double> rq(gq.size());
  for (int t = 0; t < T; ++t)
    for (int h = 0; h < nh; ++h)
      for (int j = 0; j < R; ++j) {
        double s = 0;
        for (int n = 0; n < N; ++n) s += q[(size_t(t) * nh + h) * (N + P) + n] * W(int64_t(h) * (N + Vd) + n, j);
        rq[(size_t(t) * nh + h) * R + j] = s;
      }
  out.push_back(row("k3::mla_absorb_q bf16", shape, gq, rq, kSumLimit));

  // Attention over a cache of base + T rows [latent R | rope P]; the GPU's own qabs as the query.
  const auto cache = io.randn(size_t(max_ctx) * (R + P), 0.5);
  auto dcache = io.up(cache);
  auto scores = io.out(size_t(T) * nh * max_ctx), olat = io.out(size_t(T) * nh * R);
  k3::mla_attend(qabs.as<double>(), dq.as<double>(), dcache.as<double>(), base, T, nh, N, R, P, scale,
                 scores.as<double>(), max_ctx, olat.as<double>(), io.s);
  const auto go = io.down(olat, size_t(T) * nh * R);
  vector<double> ro(go.size());
  for (int t = 0; t < T; ++t)
    for (int h = 0; h < nh; ++h) {
      const int64_t ctx = base + t + 1;
      vector<double> p(ctx);
      for (int64_t s = 0; s < ctx; ++s) {
        double d = 0;
        for (int j = 0; j < R; ++j) d += gq[(size_t(t) * nh + h) * R + j] * cache[size_t(s) * (R + P) + j];
        for (int j = 0; j < P; ++j) d += q[(size_t(t) * nh + h) * (N + P) + N + j] * cache[size_t(s) * (R + P) + R + j];
        p[s] = d * scale;
      }
      const double mx = *std::max_element(p.begin(), p.end());
      double sum = 0;
      for (auto& x : p) sum += (x = std::exp(x - mx));
      for (int j = 0; j < R; ++j) {
        double acc = 0;
        for (int64_t s = 0; s < ctx; ++s) acc += p[s] / sum * cache[size_t(s) * (R + P) + j];
        ro[(size_t(t) * nh + h) * R + j] = acc;
      }
    }
  out.push_back(row("k3::mla_attend", shape + " context 38..40", go, ro, kSumLimit));

  // The same pass with the context read on the device: the same bits.
  const vector<int64_t> at = {base};
  auto dat = io.up(at);
  auto olat2 = io.out(size_t(T) * nh * R);
  k3::mla_attend_at(qabs.as<double>(), dq.as<double>(), dcache.as<double>(), dat.as<int64_t>(), T, nh, N, R, P, scale,
                    scores.as<double>(), max_ctx, olat2.as<double>(), io.s);
  out.push_back(row("k3::mla_attend_at", shape + " context 38..40", io.down(olat2, go.size()), go, 0,
                    "vs k3::mla_attend, bit for bit"));

  // Values of the GPU's olat.
  auto attn = io.out(size_t(T) * nh * Vd);
  k3::mla_value(olat.as<double>(), kv, T, nh, N, R, Vd, attn.as<double>(), io.s);
  vector<double> rv(size_t(T) * nh * Vd);
  for (int t = 0; t < T; ++t)
    for (int h = 0; h < nh; ++h)
      for (int v = 0; v < Vd; ++v) {
        double s = 0;
        for (int j = 0; j < R; ++j) s += W(int64_t(h) * (N + Vd) + N + v, j) * go[(size_t(t) * nh + h) * R + j];
        rv[(size_t(t) * nh + h) * Vd + v] = s;
      }
  out.push_back(row("k3::mla_value bf16", shape, io.down(attn, rv.size()), rv, kSumLimit));

  // Rows written at a row index read on the device (the cache append of a graph-captured pass).
  const int64_t width = R + P;
  const auto src = io.randn(size_t(T) * width);
  auto dsrc = io.up(src);
  const vector<int64_t> at_row = {11};
  auto drow = io.up(at_row);
  auto dst = io.out(size_t(max_ctx) * width);
  dst.fill_byte(0);
  k3::rows_to_at(dsrc.as<double>(), T, width, dst.as<double>(), drow.as<int64_t>(), io.s);
  const auto gd = io.down(dst, size_t(max_ctx) * width);
  vector<double> rd(gd.size(), 0.0);
  for (int t = 0; t < T; ++t)
    for (int64_t j = 0; j < width; ++j) rd[size_t(11 + t) * width + j] = src[size_t(t) * width + j];
  out.push_back(row("k3::rows_to_at", "T=3 width=576 at row 11", gd, rd, 0, "vs the rows copied on the CPU"));
}

void router(Io& io, vector<Result>& out) {
  const int T = 8, E = 896, K = 16;
  const double scaling = 2.5;
  auto logits = io.randn(size_t(T) * E, 2);
  auto bias = io.randf(E, 0.05f);
  // Exact ties across the top-16 boundary in rows 0 and 1: twenty experts with equal logits and
  // biases, keys above almost all others; the lower ids must win.
  for (int e = 0; e < 20; ++e) {
    logits[e] = logits[E + e] = 12;
    bias[e] = 0.1f;
  }
  auto dl = io.up(logits), db = io.up(bias);
  auto di = io.out(size_t(T) * K), dw = io.out(size_t(T) * K);
  k3::router_select(dl.as<double>(), db.as<float>(), T, E, K, true, scaling, di.as<int32_t>(), dw.as<double>(), io.s);
  const auto gi = io.down<int32_t>(di, size_t(T) * K);
  const auto gw = io.down(dw, size_t(T) * K);
  int id_diff = 0, near_ties = 0;
  vector<double> got, ref;
  for (int t = 0; t < T; ++t) {
    vector<double> s(E), key(E);
    for (int e = 0; e < E; ++e) {
      s[e] = sigmoid(logits[size_t(t) * E + e]);
      key[e] = s[e] + double(bias[e]);
    }
    vector<int> order(E);
    std::iota(order.begin(), order.end(), 0);
    std::partial_sort(order.begin(), order.begin() + K, order.end(),
                      [&](int a, int b) { return key[a] != key[b] ? key[a] > key[b] : a < b; });
    std::sort(order.begin(), order.begin() + K);
    double sum = 0;
    for (int i = 0; i < K; ++i) sum += s[order[i]];
    bool swapped = false;
    for (int i = 0; i < K; ++i) {
      const int g = gi[size_t(t) * K + i];
      if (g == order[i]) continue;
      swapped = true;
      // A swap the GPU's exp can cause (it may round differently from the CPU's): keys within a few
      // fp64 ulps of each other. Keys the reference finds equal come from equal inputs, equal on the
      // GPU too: the tie rule decides those.
      const double gap = g >= 0 && g < E ? std::fabs(key[g] - key[order[i]]) : INFINITY;
      if (gap > 0 && gap <= 1e-14 * std::fabs(key[order[i]])) ++near_ties;
      else ++id_diff;
    }
    if (swapped) continue;  // another chosen set renormalises differently: no weights to compare
    for (int i = 0; i < K; ++i) {
      got.push_back(gw[size_t(t) * K + i]);
      ref.push_back(s[order[i]] / (sum + 1e-20) * scaling);
    }
  }
  Result r =
      row("k3::router_select", "T=8 experts=896 top-16", got, ref, kElemLimit, "weights vs float64 CPU reference");
  r.ok = r.ok && id_diff == 0 && !got.empty();
  r.detail += "; " + std::to_string(id_diff) + " chosen ids differ (" + std::to_string(near_ties) +
              " swaps within fp64 ties allowed)";
  out.push_back(r);

  // Batch invariance: row p alone == row p of T = 2, 4, 8.
  Invariance inv;
  vector<vector<int32_t>> ai(T);
  vector<vector<double>> aw(T);
  for (int p = 0; p < T; ++p) {
    k3::router_select(dl.as<double>() + size_t(p) * E, db.as<float>(), 1, E, K, true, scaling, di.as<int32_t>(),
                      dw.as<double>(), io.s);
    ai[p] = io.down<int32_t>(di, K);
    aw[p] = io.down(dw, K);
  }
  for (int Tn : {2, 4, 8}) {
    k3::router_select(dl.as<double>(), db.as<float>(), Tn, E, K, true, scaling, di.as<int32_t>(), dw.as<double>(),
                      io.s);
    const auto bi = io.down<int32_t>(di, size_t(Tn) * K);
    const auto bw = io.down(dw, size_t(Tn) * K);
    for (int p = 0; p < Tn; ++p) {
      Invariance both;  // a row differs when its ids or its weights do
      both.rows(bi.data() + size_t(p) * K, K, ai[p].data(), K, 1, K);
      both.rows(bw.data() + size_t(p) * K, K, aw[p].data(), K, 1, K);
      ++inv.checked;
      if (both.differ) ++inv.differ;
    }
  }
  out.push_back(inv.result("k3::router_select", "T=1 vs T=2,4,8 experts=896 top-16", "T=2,4,8"));
}

// An MXFP4 matrix [rows][cols] in the checkpoint's row layout on the device (packed codes
// [rows][cols/2], low nibble = even column; E8M0 scales [rows][cols/32]) and its values decoded on
// the host from K3-SPEC section 1: E2M1 {0, .5, 1, 1.5, 2, 3, 4, 6}, code bit 3 the sign, times
// 2^(s-127).
struct MxMat {
  vector<double> value;  // [rows][cols]
  DeviceBuffer packed, scale;
};
MxMat random_mx(Io& io, int rows, int cols) {
  static const double kE2M1[8] = {0, 0.5, 1, 1.5, 2, 3, 4, 6};
  vector<uint8_t> packed(size_t(rows) * cols / 2), scale(size_t(rows) * cols / 32);
  for (auto& b : packed) b = uint8_t(io.rng());
  packed[0] = 0x80;  // codes 0 and 8 (+0, -0)
  packed[1] = 0xf9;  // codes 9 and 15 (-0.5, -6)
  std::uniform_int_distribution<int> sd(120, 130);
  for (auto& s : scale) s = uint8_t(sd(io.rng));
  MxMat m;
  m.value.resize(size_t(rows) * cols);
  for (int r = 0; r < rows; ++r)
    for (int c = 0; c < cols; ++c) {
      const unsigned code = (packed[(size_t(r) * cols + c) / 2] >> (c % 2 ? 4 : 0)) & 15u;
      const double v = kE2M1[code & 7u] * std::ldexp(1.0, int(scale[size_t(r) * (cols / 32) + c / 32]) - 127);
      m.value[size_t(r) * cols + c] = code & 8u ? -v : v;
    }
  m.packed = io.up(packed);
  m.scale = io.up(scale);
  return m;
}

// k3::routed_experts: six random MXFP4 experts (gate/up [inter][latent], down [latent][inter]), a
// device table indexed by expert id, T rows of top_k slots each; z small enough that gate and up
// stay mostly where tanh and sigmoid are not flat. Passes of T = 3 (distinct ids per row), 16 (every
// expert chosen by many rows, so the kernels group up to four pairs an expert; every fifth row picks
// one expert in several of its slots) and 70 (more rows than one pass of 256 pairs holds at top-4):
// each against the CPU, and each row of each pass bit for bit against the same row computed alone.
void experts(Io& io, vector<Result>& out) {
  const int Z = 256, I = 192, k = 4, E = 6;
  struct Expert {
    MxMat gate, up, down;
  };
  vector<Expert> ex;
  vector<MxExpert> table;
  for (int e = 0; e < E; ++e) {
    ex.push_back(Expert{random_mx(io, I, Z), random_mx(io, I, Z), random_mx(io, Z, I)});
    const Expert& x = ex.back();
    table.push_back(MxExpert{x.gate.packed.data(), x.gate.scale.data(), x.up.packed.data(), x.up.scale.data(),
                             x.down.packed.data(), x.down.scale.data()});
  }
  auto dtable = io.up(table);
  for (const int T : {3, 16, 70}) {
    vector<int32_t> slot(size_t(T) * k);
    vector<double> wt(size_t(T) * k);
    std::uniform_real_distribution<double> uw(0.05, 1);
    for (int t = 0; t < T; ++t) {
      vector<int32_t> ids(E);
      std::iota(ids.begin(), ids.end(), 0);
      std::shuffle(ids.begin(), ids.end(), io.rng);  // distinct ids per row, in no particular order
      for (int j = 0; j < k; ++j) {
        slot[size_t(t) * k + j] = ids[j];
        wt[size_t(t) * k + j] = uw(io.rng);
      }
      if (T > 3 && t % 5 == 0) slot[size_t(t) * k + 2] = slot[size_t(t) * k + 3] = ids[0];  // one expert thrice
    }
    const auto z = io.randn(size_t(T) * Z, 0.03);
    auto dslot = io.up(slot), dwt = io.up(wt), dz = io.up(z);
    auto scratch = io.out(size_t(k3::routed_experts_scratch(T, k, Z, I)));
    auto y = io.out(size_t(T) * Z);
    k3::routed_experts(dtable.as<MxExpert>(), dslot.as<int32_t>(), dwt.as<double>(), T, k, Z, I, dz.as<double>(),
                       scratch.as<double>(), y.as<double>(), io.s);
    const auto gy = io.down(y, size_t(T) * Z);

    // y[t] = sum over slots j in order of w[t][j] * down_e(SiTU(gate_e z[t], up_e z[t])).
    vector<double> ref(size_t(T) * Z, 0.0);
    for (int t = 0; t < T; ++t)
      for (int j = 0; j < k; ++j) {
        const Expert& e = ex[size_t(slot[size_t(t) * k + j])];
        vector<double> h(I);
        for (int i = 0; i < I; ++i) {
          double g = 0, u = 0;
          for (int c = 0; c < Z; ++c) {
            g += e.gate.value[size_t(i) * Z + c] * z[size_t(t) * Z + c];
            u += e.up.value[size_t(i) * Z + c] * z[size_t(t) * Z + c];
          }
          h[i] = situ(g, u);
        }
        for (int r = 0; r < Z; ++r) {
          double d = 0;
          for (int i = 0; i < I; ++i) d += e.down.value[size_t(r) * I + i] * h[i];
          ref[size_t(t) * Z + r] += wt[size_t(t) * k + j] * d;
        }
      }
    const std::string shape = "latent=256 inter=192 top-4 of 6 T=" + std::to_string(T);
    out.push_back(row("k3::routed_experts", shape, gy, ref, kSumLimit));

    // Batch invariance: each row alone == the same row of the T-row pass.
    y.fill_byte(0xff);
    for (int t = 0; t < T; ++t)
      k3::routed_experts(dtable.as<MxExpert>(), dslot.as<int32_t>() + t * k, dwt.as<double>() + t * k, 1, k, Z, I,
                         dz.as<double>() + t * Z, scratch.as<double>(), y.as<double>() + t * Z, io.s);
    const auto alone = io.down(y, size_t(T) * Z);
    Invariance inv;
    inv.rows(alone.data(), Z, gy.data(), Z, T, Z);
    out.push_back(inv.result("k3::routed_experts", shape, "T=1 vs T=" + std::to_string(T)));
  }
}

}  // namespace

std::vector<Result> k3_ops(uint64_t seed) {
  Io io(seed + 7);
  vector<Result> out;
  // A failing launch of one op must not hide the other ops' rows.
  auto guarded = [&](const char* what, void (*fn)(Io&, vector<Result>&)) {
    try {
      fn(io, out);
    } catch (const CudaError& e) {
      out.push_back(Result(std::string(what) + " ops", false, std::string("error: ") + e.what(), what));
    }
  };
  guarded("k3 elementwise", elementwise);
  guarded("k3 GEMM", gemms);
  guarded("k3 rows and norms", rows_norms);
  guarded("k3 KDA", kda);
  guarded("k3 AttnRes", attn_res);
  guarded("k3 MLA", mla);
  guarded("k3 router", router);
  guarded("k3 routed experts", experts);
  return out;
}

}  // namespace deltafin::cuda::check

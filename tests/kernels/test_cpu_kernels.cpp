// Every fast CPU kernel against the scalar reference on random inputs, exact MXFP4
// decoding, and batch invariance (a row alone equals the same row inside a T-row pass).
#include <cmath>
#include <cstring>
#include <random>

#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QSet>

#include "base/bf16.h"
#include "cpu/gemm.h"
#include "support/test_support.h"

using namespace deltafin;
using namespace deltafin::kernels;
using deltafin::test::random_floats;

namespace {

struct Case {
  int64_t rows, in;
  int T;
};

std::vector<uint8_t> random_bytes(size_t n, std::mt19937_64& rng) {
  std::vector<uint8_t> v(n);
  for (auto& b : v) b = uint8_t(rng());
  return v;
}
std::vector<uint8_t> random_bf16(size_t n, std::mt19937_64& rng) {
  auto f = random_floats(n, rng);
  std::vector<uint8_t> v(2 * n);
  for (size_t i = 0; i < n; ++i) {
    uint16_t h = f32_to_bf16(f[i]);
    std::memcpy(&v[2 * i], &h, 2);
  }
  return v;
}
std::vector<uint8_t> random_scales(size_t n, std::mt19937_64& rng) {
  std::vector<uint8_t> v(n);
  for (auto& b : v) b = uint8_t(118 + rng() % 12);
  return v;
}

enum class Kind { BF16, F32, MXFP4 };

std::vector<float> run(const KernelTable& k, Kind kind, const std::vector<uint8_t>& w, const std::vector<uint8_t>& sc,
                       const std::vector<float>& x, const Case& c, int64_t o0, int64_t o1, int T) {
  std::vector<float> y(size_t(T) * c.rows, std::nanf(""));
  RowsArgs a{w.data(), sc.data(), c.in, o0, o1, x.data(), c.in, T, y.data(), c.rows};
  if (kind == Kind::BF16) k.bf16_rows(a);
  else if (kind == Kind::F32) k.f32_rows(a);
  else k.mxfp4_rows(a);
  return y;
}

// Random weights of a kind for a case (MXFP4: codes and scales).
void random_weights(Kind kind, const Case& c, std::mt19937_64& rng, std::vector<uint8_t>& w, std::vector<uint8_t>& sc) {
  if (kind == Kind::BF16) w = random_bf16(size_t(c.rows) * c.in, rng);
  else if (kind == Kind::F32) {
    auto f = random_floats(size_t(c.rows) * c.in, rng);
    w.resize(f.size() * 4);
    std::memcpy(w.data(), f.data(), w.size());
  } else {
    w = random_bytes(size_t(c.rows) * c.in / 2, rng);
    sc = random_scales(size_t(c.rows) * c.in / 32, rng);
  }
}

// The weights' absolute values (sign bits cleared), for the error bounds' sum |w x|.
std::vector<uint8_t> abs_weights(Kind kind, std::vector<uint8_t> w) {
  if (kind == Kind::BF16)
    for (size_t i = 1; i < w.size(); i += 2) w[i] &= 0x7f;
  else if (kind == Kind::F32)
    for (size_t i = 3; i < w.size(); i += 4) w[i] &= 0x7f;
  else
    for (auto& b : w) b &= 0x77;
  return w;
}

// The same call with fp64 inputs and outputs (RowsArgs::xd / yd).
std::vector<double> run(const KernelTable& k, Kind kind, const std::vector<uint8_t>& w, const std::vector<uint8_t>& sc,
                        const std::vector<double>& x, const Case& c, int64_t o0, int64_t o1, int T) {
  std::vector<double> y(size_t(T) * c.rows, std::nan(""));
  RowsArgs a{w.data(), sc.data(), c.in, o0, o1, nullptr, c.in, T, nullptr, c.rows};
  a.xd = x.data();
  a.yd = y.data();
  if (kind == Kind::BF16) k.bf16_rows(a);
  else if (kind == Kind::F32) k.f32_rows(a);
  else k.mxfp4_rows(a);
  return y;
}

std::vector<double> random_doubles(size_t n, std::mt19937_64& rng) {
  std::uniform_real_distribution<double> d(-1.0, 1.0);
  std::vector<double> v(n);
  for (auto& x : v) x = d(rng);
  return v;
}

// How far two fp64-accumulated kernels may differ: each result is the exact dot product within
// n fp64 roundings of sum|w x| and then one fp32 rounding, so they differ by at most one fp32 ulp
// of the result plus 2 n eps64 sum|w x|. (fp32 accumulation breaks this: it differs by up to
// about n eps32 sum|w x|.)
double bound(const std::vector<float>& absdot, const std::vector<float>& ref, size_t i, int64_t n) {
  return 1.2e-7 * std::fabs(double(ref[i])) + 2.3e-16 * double(n) * absdot[i] + 1e-37;
}

}  // namespace

class TestCpuKernels : public QObject {
  Q_OBJECT
 private:
  std::vector<Isa> isas() {
    std::vector<Isa> v;
    for (Isa i : {Isa::Scalar, Isa::Avx2, Isa::Avx512})
      if (isa_supported(i)) v.push_back(i);
    return v;
  }

  // A row alone, inside any T-row pass and in any output-row range gives the same bits, for fp32
  // (X = float) and fp64 (X = double) inputs and outputs; x holds 9 rows of kInvIn inputs.
  static constexpr int64_t kInvRows = 19, kInvIn = 320;
  template <class X>
  void rowsAreBatchInvariantFor(std::mt19937_64& rng, const std::vector<X>& x) {
    const int64_t rows = kInvRows, in = kInvIn;
    auto wb = random_bf16(size_t(rows) * in, rng);
    auto wm = random_bytes(size_t(rows) * in / 2, rng);
    auto sc = random_scales(size_t(rows) * in / 32, rng);
    for (Isa isa : isas()) {
      for (Kind kind : {Kind::BF16, Kind::MXFP4}) {
        const auto& w = kind == Kind::BF16 ? wb : wm;
        Case c{rows, in, 9};
        const auto all = run(table_for(isa), kind, w, sc, x, c, 0, rows, 9);
        for (int T : {1, 2, 3, 4, 5, 8}) {
          const auto part = run(table_for(isa), kind, w, sc, x, c, 0, rows, T);
          QVERIFY(std::memcmp(part.data(), all.data(), size_t(T) * rows * sizeof(X)) == 0);
        }
        // Any row alone, from an offset into the batch.
        for (int t = 0; t < 9; ++t) {
          const std::vector<X> xt(x.begin() + t * in, x.begin() + (t + 1) * in);
          const auto one = run(table_for(isa), kind, w, sc, xt, c, 0, rows, 1);
          QVERIFY(std::memcmp(one.data(), all.data() + size_t(t) * rows, size_t(rows) * sizeof(X)) == 0);
        }
        // Output-row ranges (thread splits) do not change a value.
        const auto lo = run(table_for(isa), kind, w, sc, x, c, 0, 7, 9);
        const auto hi = run(table_for(isa), kind, w, sc, x, c, 7, rows, 9);
        for (int t = 0; t < 9; ++t)
          for (int64_t o = 0; o < rows; ++o) {
            const X v = o < 7 ? lo[t * rows + o] : hi[t * rows + o];
            QVERIFY(std::memcmp(&v, &all[t * rows + o], sizeof(X)) == 0);
          }
      }
    }
  }

 private slots:
  void reportsIsas() {
    for (Isa i : {Isa::Scalar, Isa::Avx2, Isa::Avx512})
      qInfo("%s: %s", isa_name(i), isa_supported(i) ? "supported, tested" : "not on this CPU, skipped");
    QVERIFY(isa_supported(Isa::Scalar));
    QCOMPARE(active().isa, best_isa());
  }

  void e8m0IsExact() {
    QVERIFY(test::same_bits(e8m0_to_float(127), 1.f));
    QVERIFY(test::same_bits(e8m0_to_float(128), 2.f));
    QVERIFY(test::same_bits(e8m0_to_float(120), std::ldexp(1.f, -7)));
    QVERIFY(test::same_bits(e8m0_to_float(0), std::ldexp(1.f, -127)));
    QVERIFY(test::same_bits(e8m0_to_float(254), std::ldexp(1.f, 127)));
    // The fast paths multiply by half the scale (their codes decode to twice the value).
    for (int s = 0; s < 256; ++s) {
      const float want = 0.5f * e8m0_to_float(uint8_t(s));
      QVERIFY2(std::memcmp(&kHalfE8M0[s], &want, 4) == 0, qPrintable(QString("scale byte %1").arg(s)));
    }
    QVERIFY(test::same_bits(kHalfE8M0[0], std::ldexp(1.f, -128)));
    QVERIFY(std::isinf(kHalfE8M0[255]));
  }

  void e2m1TableIsTheSpecs() {
    // K3-SPEC section 1: codes 0-7 are 0, .5, 1, 1.5, 2, 3, 4, 6; codes 8-15 the same negated.
    const float spec[16] = {0.f, .5f, 1.f, 1.5f, 2.f, 3.f, 4.f, 6.f, -0.f, -.5f, -1.f, -1.5f, -2.f, -3.f, -4.f, -6.f};
    for (int code = 0; code < 16; ++code)
      QVERIFY2(test::same_bits(kE2M1[code], spec[code]), qPrintable(QString("code %1: %2").arg(code).arg(kE2M1[code])));
  }

  void mxfp4DecodesExactly() {
    // With a one-hot input, each kernel must return the decoded weight itself, bit for bit: low
    // nibble = even column, the value from the spec's eight E2M1 magnitudes (bit 3 the sign) times
    // 2^(scale - 127) (the random scales are normal numbers).
    const float e2m1[8] = {0.f, .5f, 1.f, 1.5f, 2.f, 3.f, 4.f, 6.f};
    const int64_t in = 64, rows = 3;
    std::mt19937_64 rng(3);
    auto w = random_bytes(size_t(rows) * in / 2, rng);
    auto sc = random_scales(size_t(rows) * in / 32, rng);
    for (Isa isa : isas()) {
      for (int64_t col = 0; col < in; ++col) {
        std::vector<float> x(in, 0.f);
        x[col] = 1.f;
        Case c{rows, in, 1};
        auto y = run(table_for(isa), Kind::MXFP4, w, sc, x, c, 0, rows, 1);
        for (int64_t r = 0; r < rows; ++r) {
          const uint8_t byte = w[r * in / 2 + col / 2];
          const int code = col % 2 == 0 ? byte & 15 : byte >> 4;
          const float value = (code & 8 ? -1.f : 1.f) * e2m1[code & 7];
          // A one-hot dot product starts from +0, so a -0 weight comes out as +0.
          const float want = value * std::ldexp(1.f, sc[r * in / 32 + col / 32] - 127) + 0.f;
          QVERIFY2(
              test::same_bits(y[r], want),
              qPrintable(
                  QString("%1 row %2 col %3: %4, want %5").arg(isa_name(isa)).arg(r).arg(col).arg(y[r]).arg(want)));
        }
      }
    }
  }

  void fastPathsMatchReference() {
    std::mt19937_64 rng(11);
    const Case cases[] = {{7, 64, 1}, {5, 96, 3}, {33, 3584 / 4, 5}, {16, 24, 2}, {9, 32, 9}, {70, 512, 4}};
    for (Kind kind : {Kind::BF16, Kind::F32, Kind::MXFP4}) {
      for (const Case& c : cases) {
        if (kind == Kind::MXFP4 && c.in % 32) continue;
        std::vector<uint8_t> w, sc;
        random_weights(kind, c, rng, w, sc);
        auto x = random_floats(size_t(c.T) * c.in, rng);
        // |w|.|x| per output, for the error bound: from a reference run on absolute values.
        std::vector<float> ax(x.size());
        for (size_t i = 0; i < x.size(); ++i) ax[i] = std::fabs(x[i]);
        const std::vector<uint8_t> aw = abs_weights(kind, w);
        auto absdot = run(table_for(Isa::Scalar), kind, aw, sc, ax, c, 0, c.rows, c.T);
        auto ref = run(table_for(Isa::Scalar), kind, w, sc, x, c, 0, c.rows, c.T);
        for (Isa isa : isas()) {
          auto got = run(table_for(isa), kind, w, sc, x, c, 0, c.rows, c.T);
          for (size_t i = 0; i < ref.size(); ++i)
            QVERIFY2(std::fabs(double(got[i]) - ref[i]) <= bound(absdot, ref, i, c.in),
                     qPrintable(QString("%1 kind %2 rows %3 in %4: %5 vs %6")
                                    .arg(isa_name(isa))
                                    .arg(int(kind))
                                    .arg(c.rows)
                                    .arg(c.in)
                                    .arg(got[i])
                                    .arg(ref[i])));
        }
      }
    }
  }

  void rowsAreBatchInvariant() {
    std::mt19937_64 rng(5);
    rowsAreBatchInvariantFor(rng, random_floats(size_t(9) * kInvIn, rng));
  }

  void fp64PathsMatchReference() {
    // fp64 inputs and outputs: each product rounded to 53 bits, summed in fp64 in the kernel's
    // order, not rounded to fp32; fast paths within (n + 2) eps64 sum|w x| of the plain loop. On
    // fp32-representable inputs the fp64 output rounded to fp32 is the fp32 path's output, bit for
    // bit (the same sum, rounded once).
    std::mt19937_64 rng(13);
    const Case cases[] = {{7, 64, 1}, {5, 96, 3}, {33, 3584 / 4, 5}, {16, 24, 2}, {9, 32, 9}, {70, 512, 4}};
    for (Kind kind : {Kind::BF16, Kind::F32, Kind::MXFP4}) {
      for (const Case& c : cases) {
        if (kind == Kind::MXFP4 && c.in % 32) continue;
        std::vector<uint8_t> w, sc;
        random_weights(kind, c, rng, w, sc);
        const auto x = random_doubles(size_t(c.T) * c.in, rng);
        std::vector<double> ax(x.size());
        for (size_t i = 0; i < x.size(); ++i) ax[i] = std::fabs(x[i]);
        const std::vector<uint8_t> aw = abs_weights(kind, w);
        const auto absdot = run(table_for(Isa::Scalar), kind, aw, sc, ax, c, 0, c.rows, c.T);
        const auto ref = run(table_for(Isa::Scalar), kind, w, sc, x, c, 0, c.rows, c.T);
        const auto xf = random_floats(size_t(c.T) * c.in, rng);
        const std::vector<double> xfd(xf.begin(), xf.end());
        for (Isa isa : isas()) {
          const auto got = run(table_for(isa), kind, w, sc, x, c, 0, c.rows, c.T);
          for (size_t i = 0; i < ref.size(); ++i)
            QVERIFY2(std::fabs(got[i] - ref[i]) <= 1.12e-16 * double(c.in + 2) * absdot[i] + 1e-300,
                     qPrintable(QString("%1 kind %2 rows %3 in %4: %5 vs %6")
                                    .arg(isa_name(isa))
                                    .arg(int(kind))
                                    .arg(c.rows)
                                    .arg(c.in)
                                    .arg(got[i], 0, 'g', 17)
                                    .arg(ref[i], 0, 'g', 17)));
          const auto wide = run(table_for(isa), kind, w, sc, xfd, c, 0, c.rows, c.T);
          const auto narrow = run(table_for(isa), kind, w, sc, xf, c, 0, c.rows, c.T);
          for (size_t i = 0; i < wide.size(); ++i)
            QVERIFY2(test::same_bits(float(wide[i]), narrow[i]),
                     qPrintable(QString("%1 kind %2: fp64 output %3 rounds to %4, the fp32 path gave %5")
                                    .arg(isa_name(isa))
                                    .arg(int(kind))
                                    .arg(wide[i], 0, 'g', 17)
                                    .arg(float(wide[i]))
                                    .arg(narrow[i])));
        }
      }
    }
  }

  void fp64RowsAreBatchInvariant() {
    std::mt19937_64 rng(6);
    rowsAreBatchInvariantFor(rng, random_doubles(size_t(9) * kInvIn, rng));
  }

  void fp64AttentionHelpersMatchThePlainLoops() {
    // dot_rows64 and axpy64: each fp64 product rounded, then added in fp64, in index order.
    std::mt19937_64 rng(22);
    for (int64_t n : {1, 3, 4, 5, 64, 513}) {
      for (int64_t count : {1, 3, 4, 5, 33}) {
        const int64_t offset = n % 3, width = n + offset + 5;
        const auto data = random_doubles(size_t(count * width), rng);
        constexpr int kQueries = 6;
        const int64_t ldq = n + 3, ldo = count + 2;
        const auto q = random_doubles(size_t(kQueries * ldq), rng);
        std::vector<const double*> rows(count);
        for (int64_t k = 0; k < count; ++k) rows[k] = &data[size_t((count - 1 - k) * width)];
        std::vector<double> want(size_t(kQueries * ldo), -1.0);
        for (int i = 0; i < kQueries; ++i)
          for (int64_t k = 0; k < count; ++k) {
            volatile double a = 0;
            for (int64_t j = 0; j < n; ++j) {
              volatile double p = q[i * ldq + j] * rows[k][offset + j];
              a = a + p;
            }
            want[i * ldo + k] = a;
          }
        for (Isa isa : isas()) {
          for (int nq : {1, 4, kQueries}) {
            std::vector<double> got(want.size(), -1.0);
            table_for(isa).dot_rows64(q.data(), ldq, nq, n, rows.data(), offset, count, got.data(), ldo);
            QVERIFY2(
                std::memcmp(got.data(), want.data(), size_t(nq * ldo) * 8) == 0,
                qPrintable(
                    QString("%1 dot_rows64 n %2 count %3 queries %4").arg(isa_name(isa)).arg(n).arg(count).arg(nq)));
          }
          std::vector<double> y(data.begin(), data.begin() + n), yw = y;
          const double a = q[0] / 3.0;
          for (int64_t j = 0; j < n; ++j) {
            volatile double p = a * rows[0][j];
            yw[j] = yw[j] + p;
          }
          table_for(isa).axpy64(a, rows[0], n, y.data());
          QVERIFY2(std::memcmp(y.data(), yw.data(), size_t(n) * 8) == 0,
                   qPrintable(QString("%1 axpy64 n %2").arg(isa_name(isa)).arg(n)));
          // axpy_bf16 with an fp64 scale (the fp64 MLA query fold): each product rounded once.
          auto wb = random_bf16(size_t(n), rng);
          std::vector<double> yb(data.begin(), data.begin() + n), ybw = yb;
          for (int64_t j = 0; j < n; ++j) {
            uint16_t h;
            std::memcpy(&h, &wb[size_t(2 * j)], 2);
            const float f = bf16_to_f32(h);
            volatile double p = a * double(f);
            ybw[j] = ybw[j] + p;
          }
          table_for(isa).axpy_bf16(a, wb.data(), n, yb.data());
          QVERIFY2(std::memcmp(yb.data(), ybw.data(), size_t(n) * 8) == 0,
                   qPrintable(QString("%1 axpy_bf16, fp64 scale, n %2").arg(isa_name(isa)).arg(n)));
        }
      }
    }
  }

  void attentionHelpersMatchThePlainLoops() {
    // dot_rows, axpy and axpy_bf16 promise the plain loops' bits: fp64 products (exact for fp32 x
    // fp32 and fp32 x bf16), each rounded before it is added in fp64, in order.
    std::mt19937_64 rng(21);
    for (int64_t n : {1, 7, 8, 9, 64, 513}) {
      for (int64_t count : {1, 7, 8, 9, 33}) {
        const int64_t offset = n % 3, width = n + offset + 5;
        auto data = random_floats(size_t(count * width), rng);
        constexpr int kQueries = 6;  // more than one pass of the four the AVX2 path takes at once
        const int64_t ldq = n + 3, ldo = count + 2;
        auto q = random_floats(size_t(kQueries * ldq), rng);
        std::vector<const float*> rows(count);
        for (int64_t k = 0; k < count; ++k) rows[k] = &data[size_t((count - 1 - k) * width)];  // not in memory order
        std::vector<double> want(size_t(kQueries * ldo), -1.0);
        for (int i = 0; i < kQueries; ++i)
          for (int64_t k = 0; k < count; ++k) {
            volatile double a = 0;  // one rounding per operation, whatever the compiler may fuse
            for (int64_t j = 0; j < n; ++j) {
              volatile double p = double(q[i * ldq + j]) * double(rows[k][offset + j]);
              a = a + p;
            }
            want[i * ldo + k] = a;
          }
        for (Isa isa : {Isa::Scalar, Isa::Avx2, Isa::Avx512}) {
          if (!isa_supported(isa)) continue;
          for (int nq : {1, 4, kQueries}) {
            std::vector<double> got(want.size(), -1.0);
            table_for(isa).dot_rows(q.data(), ldq, nq, n, rows.data(), offset, count, got.data(), ldo);
            QVERIFY2(std::memcmp(got.data(), want.data(), size_t(nq * ldo) * 8) == 0,
                     qPrintable(
                         QString("%1 dot_rows n %2 count %3 queries %4").arg(isa_name(isa)).arg(n).arg(count).arg(nq)));
          }
          std::vector<double> y(data.begin(), data.begin() + n), yw = y;
          const double a = 1.0 / 3.0 * q[0];  // not an fp32 value: the product rounds in fp64
          for (int64_t j = 0; j < n; ++j) {
            volatile double p = a * double(rows[0][j]);
            yw[j] = yw[j] + p;
          }
          table_for(isa).axpy(a, rows[0], n, y.data());
          QVERIFY2(std::memcmp(y.data(), yw.data(), size_t(n) * 8) == 0,
                   qPrintable(QString("%1 axpy n %2").arg(isa_name(isa)).arg(n)));
          // BF16 weights, from an odd address as in a shard.
          auto wb = random_bf16(size_t(n), rng);
          std::vector<uint8_t> odd(wb.size() + 1);
          std::memcpy(odd.data() + 1, wb.data(), wb.size());
          std::vector<double> yb(data.begin(), data.begin() + n), ybw = yb;
          const float af = q[0];
          for (int64_t j = 0; j < n; ++j) {
            uint16_t h;
            std::memcpy(&h, &wb[size_t(2 * j)], 2);
            const float f = bf16_to_f32(h);
            volatile double p = double(af) * double(f);
            ybw[j] = ybw[j] + p;
          }
          table_for(isa).axpy_bf16(af, odd.data() + 1, n, yb.data());
          QVERIFY2(std::memcmp(yb.data(), ybw.data(), size_t(n) * 8) == 0,
                   qPrintable(QString("%1 axpy_bf16 n %2").arg(isa_name(isa)).arg(n)));
        }
      }
    }
  }

  void cancellingSumsRoundOnce() {
    // Each row is x . w - x . w + small: the exact result is `small`, an fp32 value. With the
    // products exact in fp64 and summed there, every kernel returns it exactly; an fp32
    // accumulator leaves an error of order eps32 |x . w| instead.
    std::mt19937_64 rng(31);
    const int64_t rows = 5, half = 512, in = 2 * half + 32;
    auto x = random_floats(size_t(in), rng);
    for (int64_t i = 0; i < half; ++i) x[half + i] = x[i];
    std::vector<float> small(rows);
    for (int64_t r = 0; r < rows; ++r) small[r] = std::ldexp(float(r + 1) * 0.375f, -9);
    // BF16 and F32: w = [v | -v | 1 0 0 ...], x[2 half] = small.
    std::vector<uint8_t> wb(size_t(rows * in) * 2), wf(size_t(rows * in) * 4);
    for (int64_t r = 0; r < rows; ++r) {
      auto v = random_bf16(size_t(half), rng);
      for (int64_t i = 0; i < in; ++i) {
        uint16_t h = 0;
        if (i < half) std::memcpy(&h, &v[size_t(2 * i)], 2);
        else if (i < 2 * half) std::memcpy(&h, &v[size_t(2 * (i - half))], 2), h ^= 0x8000;
        else if (i == 2 * half) h = 0x3f80;  // 1.0
        std::memcpy(&wb[size_t(2 * (r * in + i))], &h, 2);
        const uint32_t bits = uint32_t(h) << 16;
        std::memcpy(&wf[size_t(4 * (r * in + i))], &bits, 4);
      }
    }
    // MXFP4: the second half's codes are the first half's with the sign bit flipped, under the same
    // scales; the last block holds one code 1.0 at scale 1.
    std::vector<uint8_t> wm(size_t(rows * in / 2)), sm(size_t(rows * in / 32));
    for (int64_t r = 0; r < rows; ++r) {
      auto codes = random_bytes(size_t(half / 2), rng);
      auto scales = random_scales(size_t(half / 32), rng);
      for (int64_t b = 0; b < half / 2; ++b) {
        wm[size_t(r * in / 2 + b)] = codes[size_t(b)];
        wm[size_t(r * in / 2 + half / 2 + b)] = codes[size_t(b)] ^ 0x88;
      }
      for (int64_t b = 0; b < half / 32; ++b)
        sm[size_t(r * in / 32 + b)] = sm[size_t(r * in / 32 + half / 32 + b)] = scales[size_t(b)];
      for (int64_t b = 0; b < 16; ++b)
        wm[size_t(r * in / 2 + half + b)] = b == 0 ? 0x02 : 0x00;  // code 2 = 1.0 at column 2 half
      sm[size_t(r * in / 32 + 2 * half / 32)] = 127;
    }
    for (Isa isa : isas()) {
      for (Kind kind : {Kind::BF16, Kind::F32, Kind::MXFP4}) {
        const auto& w = kind == Kind::BF16 ? wb : kind == Kind::F32 ? wf : wm;
        for (int64_t r = 0; r < rows; ++r) {
          auto xr = x;
          xr[size_t(2 * half)] = small[r];
          Case c{rows, in, 1};
          auto y = run(table_for(isa), kind, w, sm, xr, c, r, r + 1, 1);
          QVERIFY2(y[r] == small[r], qPrintable(QString("%1 kind %2 row %3: %4, want %5")
                                                    .arg(isa_name(isa))
                                                    .arg(int(kind))
                                                    .arg(r)
                                                    .arg(double(y[r]), 0, 'g', 9)
                                                    .arg(double(small[r]), 0, 'g', 9)));
        }
      }
    }
  }

  void benchProgramReportsEveryVersion() {
    // What deltafin-cpu-bench writes, not how fast anything ran: a row per kernel version this CPU
    // has, per shape and per T, each with a positive time and rates.
    const std::string json = test::temp_dir("cpu-bench") + "/bench.json";
    const auto r =
        test::run_process({test::bin_dir() + "/deltafin-cpu-bench", "--reps", "1", "--no-scalar", "--json", json});
    QVERIFY2(r.code == 0, r.err.c_str());
    QFile f(QString::fromStdString(json));
    QVERIFY(f.open(QIODevice::ReadOnly));
    const QJsonObject root = QJsonDocument::fromJson(f.readAll()).object();
    QCOMPARE(root.value("best_isa").toString(), QString(isa_name(best_isa())));
    QSet<QString> seen;
    for (const QJsonValue& v : root.value("results").toArray()) {
      const QJsonObject o = v.toObject();
      QVERIFY(o.value("ms").toDouble() > 0);
      QVERIFY(o.value("weight_gbs").toDouble() > 0 && o.value("gflops").toDouble() > 0);
      seen.insert(o.value("isa").toString() + "/" + o.value("shape").toString() + "/" +
                  QString::number(o.value("T").toInt()));
    }
    int want = 0;
    for (Isa isa : {Isa::Avx2, Isa::Avx512})
      if (isa_supported(isa)) want += 3 * 4;  // three shapes, T = 1, 2, 4, 8
    QCOMPARE(int(seen.size()), want);
    QVERIFY(r.out.find("| expert gate/up 3072x3584 (MXFP4) |") != std::string::npos);
  }
};

QTEST_GUILESS_MAIN(TestCpuKernels)
#include "test_cpu_kernels.moc"

// The MXFP4 -> fp64 arithmetic of the fp64 routed-expert kernels (kernels/cuda/k3/mxfp4_fp64.h),
// checked on the CPU: every E2M1 code at every nibble position decodes to its value times 2^-1022,
// and a block's sum computed the kernels' way (codes and activations scaled by powers of two, the
// E8M0 exponent applied last) has exactly the bits of the same sum computed unscaled. Plain C++:
// runs without a GPU.
#include <QTest>

#include <bit>
#include <cmath>
#include <cstdint>
#include <random>

#include "cuda/k3/mxfp4_fp64.h"

using namespace deltafin::cuda::k3;

namespace {

constexpr double kE2M1[16] = {0, 0.5, 1, 1.5, 2, 3, 4, 6, -0.0, -0.5, -1, -1.5, -2, -3, -4, -6};

double code_value(uint32_t w, int n) { return std::bit_cast<double>(uint64_t(e2m1_high_word(w, n)) << 32); }

}  // namespace

class TstMxfp4Fp64 : public QObject {
  Q_OBJECT
 private slots:
  void everyCodeAtEveryNibble() {
    std::mt19937 rng(7);
    for (int n = 0; n < 8; ++n)
      for (uint32_t c = 0; c < 16; ++c)
        for (int rep = 0; rep < 64; ++rep) {
          // The code at nibble n, random codes around it.
          const uint32_t w = (rng() & ~(0xFu << (4 * n))) | (c << (4 * n));
          const double v = std::ldexp(code_value(w, n), 1022);
          QCOMPARE(std::bit_cast<uint64_t>(v), std::bit_cast<uint64_t>(kE2M1[c]));  // -0 stays -0
        }
  }

  void scaledBlockSumHasTheUnscaledBits() {
    std::mt19937_64 rng(11);
    std::normal_distribution<double> nd(0.0, 1.0);
    std::uniform_int_distribution<int> mag(-30, 30);
    for (int rep = 0; rep < 2000; ++rep) {
      uint32_t words[4];
      for (uint32_t& w : words) w = uint32_t(rng());
      double x[32];
      for (double& v : x) v = std::ldexp(nd(rng), mag(rng));  // activations over a wide range
      const uint32_t s = 100 + uint32_t(rng() % 60);          // E8M0 scales 2^-27 .. 2^32
      double scaled = 0, plain = 0;
      for (int i = 0; i < 32; ++i) {
        const int word = i / 8, n = i % 8;
        const uint32_t code = (words[word] >> (4 * n)) & 0xF;
        scaled = std::fma(code_value(words[word], n), std::ldexp(x[i], kMxStageExp), scaled);
        plain = std::fma(kE2M1[code], x[i], plain);
      }
      const double got = scaled * std::ldexp(1.0, e8m0_block_exponent(s));
      const double want = plain * std::ldexp(1.0, int(s) - 127);
      QCOMPARE(std::bit_cast<uint64_t>(got), std::bit_cast<uint64_t>(want));
    }
  }
};

QTEST_APPLESS_MAIN(TstMxfp4Fp64)
#include "tst_mxfp4_fp64.moc"

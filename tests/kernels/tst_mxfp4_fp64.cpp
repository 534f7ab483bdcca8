// The MXFP4 -> fp64 arithmetic of the fp64 routed-expert kernels (kernels/cuda/k3/mxfp4_fp64.h),
// checked on the CPU: every E2M1 code at every nibble position decodes to its value times 2^-1022,
// by shifts and by the kernels' byte planes and prmt (the instruction's host model), and a lane's
// running sum over blocks computed the kernels' way (codes and activations scaled by powers of two,
// each 16-column half-block's sum times the E8M0 exponent, added by fma) has exactly the bits of the
// same sums computed unscaled. Plain C++: runs without a GPU.
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
double plane_value(uint32_t w, int n) {
  return std::bit_cast<double>(uint64_t(e2m1_high_word(e2m1_planes(w), n)) << 32);
}

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
          QCOMPARE(std::bit_cast<uint64_t>(plane_value(w, n)), std::bit_cast<uint64_t>(code_value(w, n)));
        }
  }

  void prmtModelSelectsAndReplicates() {
    QCOMPARE(prmt(0x33221100u, 0x77665544u, 0x7531u), 0x77553311u);  // bytes 1, 3, 5, 7 of {b, a}
    QCOMPARE(prmt(0x00800001u, 0u, 0x0a98u), 0x01ff0000u);           // bit 3 set: bit 7 of the byte, replicated
  }

  void scaledHalfBlockSumsHaveTheUnscaledBits() {
    std::mt19937_64 rng(11);
    std::normal_distribution<double> nd(0.0, 1.0);
    std::uniform_int_distribution<int> mag(-30, 30);
    for (int rep = 0; rep < 2000; ++rep) {
      double scaled = std::ldexp(nd(rng), mag(rng)), plain = scaled;  // the lane's sum so far
      for (int half = 0; half < 2; ++half) {
        uint32_t words[2];
        for (uint32_t& w : words) w = uint32_t(rng());
        double x[16];
        for (double& v : x) v = std::ldexp(nd(rng), mag(rng));  // activations over a wide range
        const uint32_t s = 100 + uint32_t(rng() % 60);          // E8M0 scales 2^-27 .. 2^32
        double part = 0, plain_part = 0;
        for (int i = 0; i < 16; ++i) {
          const int word = i / 8, n = i % 8;
          const uint32_t code = (words[word] >> (4 * n)) & 0xF;
          part = std::fma(plane_value(words[word], n), std::ldexp(x[i], kMxStageExp), part);
          plain_part = std::fma(kE2M1[code], x[i], plain_part);
        }
        scaled = std::fma(part, std::ldexp(1.0, e8m0_block_exponent(s)), scaled);
        plain = std::fma(plain_part, std::ldexp(1.0, int(s) - 127), plain);
      }
      QCOMPARE(std::bit_cast<uint64_t>(scaled), std::bit_cast<uint64_t>(plain));
    }
  }
};

QTEST_APPLESS_MAIN(TstMxfp4Fp64)
#include "tst_mxfp4_fp64.moc"

// The expert-kernel policy (kernels/cuda/lab/expert_kernel_policy.h) against the choices the kernel
// registry made before the policy was written out (kernels/cuda/mxfp4_experts.cu at 322f3be: first
// fitting version of the layout, its `shared` and `few` alternatives, the alignment and shared-table
// fallbacks). Each row of the tables below was read off that code for the GPU and call it
// describes; the policy must choose the same version, so that speed and bits stay as they were.
// One deliberate change since: the row-layout versions other than v6 moved to kernels/cuda/lab (the
// K3-width FFMA versions v9 / v62 / v68 and the integer tensor-core v38 / v39), so every row-layout
// call below runs v6. The product stores K3's experts in fragment order on every GPU it is built for
// (sm_86 and newer: v134 fits), so rows are reached only by the tiny test models (widths of 64, v6
// before too) and by DELTAFIN_CUDA_EXPERT_LAYOUT=rows, where v6 computes v9's bits (reduction order 0).
// Plain C++: runs without a GPU.
#include <QTest>

#include <string>

#include "cuda/lab/expert_kernel_policy.h"
#include "cuda/situ.h"

using namespace deltafin::cuda;

namespace {

constexpr auto R = ExpertLayout::rows;
constexpr auto F = ExpertLayout::fragments;

// Shared memory per block that the runtime lets a kernel opt into.
struct Call {
  int latent, inter;
  ExpertLayout layout;
  int cc_major;
  size_t smem_optin;         // H200/H100 232448, A100 166912, RTX 30-50 101376, 49152
  const char* fewer_blocks;  // versions whose occupancy is a block per SM below v134's
  int rows;
  double rows_per_expert;
  bool aligned16, tables_fit_shared;
  const char* expected;
};

const Call kCalls[] = {
    {3584, 3072, F, 9, 232448, "", 1, 1, true, true, "v212"},
    {3584, 3072, F, 9, 232448, "", 1, 1.19, true, true, "v212"},
    {3584, 3072, F, 9, 232448, "", 1, 1.2, true, true, "v212"},
    {3584, 3072, F, 9, 232448, "", 1, 1.5, true, true, "v212"},
    {3584, 3072, F, 9, 232448, "", 1, 1.99, true, true, "v212"},
    {3584, 3072, F, 9, 232448, "", 1, 2, true, true, "v194"},
    {3584, 3072, F, 9, 232448, "", 1, 3, true, true, "v194"},
    {3584, 3072, F, 9, 232448, "", 2, 1, true, true, "v212"},
    {3584, 3072, F, 9, 232448, "", 2, 1.19, true, true, "v212"},
    {3584, 3072, F, 9, 232448, "", 2, 1.2, true, true, "v212"},
    {3584, 3072, F, 9, 232448, "", 2, 1.5, true, true, "v212"},
    {3584, 3072, F, 9, 232448, "", 2, 1.99, true, true, "v212"},
    {3584, 3072, F, 9, 232448, "", 2, 2, true, true, "v194"},
    {3584, 3072, F, 9, 232448, "", 2, 3, true, true, "v194"},
    {3584, 3072, F, 9, 232448, "", 8, 1, true, true, "v212"},
    {3584, 3072, F, 9, 232448, "", 8, 1.19, true, true, "v212"},
    {3584, 3072, F, 9, 232448, "", 8, 1.2, true, true, "v212"},
    {3584, 3072, F, 9, 232448, "", 8, 1.5, true, true, "v212"},
    {3584, 3072, F, 9, 232448, "", 8, 1.99, true, true, "v212"},
    {3584, 3072, F, 9, 232448, "", 8, 2, true, true, "v194"},
    {3584, 3072, F, 9, 232448, "", 8, 3, true, true, "v194"},
    {3584, 3072, F, 9, 232448, "", 9, 1, true, true, "v134"},
    {3584, 3072, F, 9, 232448, "", 9, 1.19, true, true, "v134"},
    {3584, 3072, F, 9, 232448, "", 9, 1.2, true, true, "v194"},
    {3584, 3072, F, 9, 232448, "", 9, 1.5, true, true, "v194"},
    {3584, 3072, F, 9, 232448, "", 9, 1.99, true, true, "v194"},
    {3584, 3072, F, 9, 232448, "", 9, 2, true, true, "v194"},
    {3584, 3072, F, 9, 232448, "", 9, 3, true, true, "v194"},
    {3584, 3072, F, 9, 232448, "", 16, 1, true, true, "v134"},
    {3584, 3072, F, 9, 232448, "", 16, 1.19, true, true, "v134"},
    {3584, 3072, F, 9, 232448, "", 16, 1.2, true, true, "v194"},
    {3584, 3072, F, 9, 232448, "", 16, 1.5, true, true, "v194"},
    {3584, 3072, F, 9, 232448, "", 16, 1.99, true, true, "v194"},
    {3584, 3072, F, 9, 232448, "", 16, 2, true, true, "v194"},
    {3584, 3072, F, 9, 232448, "", 16, 3, true, true, "v194"},
    {3584, 3072, F, 9, 232448, "", 64, 1, true, true, "v134"},
    {3584, 3072, F, 9, 232448, "", 64, 1.19, true, true, "v134"},
    {3584, 3072, F, 9, 232448, "", 64, 1.2, true, true, "v194"},
    {3584, 3072, F, 9, 232448, "", 64, 1.5, true, true, "v194"},
    {3584, 3072, F, 9, 232448, "", 64, 1.99, true, true, "v194"},
    {3584, 3072, F, 9, 232448, "", 64, 2, true, true, "v194"},
    {3584, 3072, F, 9, 232448, "", 64, 3, true, true, "v194"},
    {3584, 3072, F, 9, 232448, "", 1, 1, true, false, "v194"},
    {3584, 3072, F, 9, 232448, "", 1, 2, true, false, "v194"},
    {3584, 3072, F, 9, 232448, "", 8, 1, true, false, "v194"},
    {3584, 3072, F, 9, 232448, "", 8, 2, true, false, "v194"},
    {3584, 3072, F, 9, 232448, "", 64, 1, true, false, "v194"},
    {3584, 3072, F, 9, 232448, "", 64, 2, true, false, "v194"},
    {3584, 3072, F, 10, 232448, "", 1, 1, true, true, "v212"},
    {3584, 3072, F, 10, 232448, "", 1, 1.5, true, true, "v212"},
    {3584, 3072, F, 10, 232448, "", 8, 1, true, true, "v212"},
    {3584, 3072, F, 10, 232448, "", 8, 1.5, true, true, "v212"},
    {3584, 3072, F, 9, 232448, "v212", 1, 1, true, true, "v183"},
    {3584, 3072, F, 9, 232448, "v212", 1, 1.3, true, true, "v194"},
    {3584, 3072, F, 9, 232448, "v212", 2, 1, true, true, "v183"},
    {3584, 3072, F, 9, 232448, "v212", 2, 1.3, true, true, "v194"},
    {3584, 3072, F, 9, 232448, "v212", 3, 1, true, true, "v134"},
    {3584, 3072, F, 9, 232448, "v212", 3, 1.3, true, true, "v194"},
    {3584, 3072, F, 8, 166912, "v212 v183", 1, 1, true, true, "v138"},
    {3584, 3072, F, 8, 166912, "v212 v183", 1, 1.5, true, true, "v194"},
    {3584, 3072, F, 8, 166912, "v212 v183", 2, 1, true, true, "v138"},
    {3584, 3072, F, 8, 166912, "v212 v183", 2, 1.5, true, true, "v194"},
    {3584, 3072, F, 8, 166912, "v212 v183", 3, 1, true, true, "v134"},
    {3584, 3072, F, 8, 166912, "v212 v183", 3, 1.5, true, true, "v194"},
    {3584, 3072, F, 12, 101376, "v212 v183 v194", 1, 1, true, true, "v138"},
    {3584, 3072, F, 12, 101376, "v212 v183 v194", 1, 1.5, true, true, "v138"},
    {3584, 3072, F, 12, 101376, "v212 v183 v194", 1, 2.5, true, true, "v138"},
    {3584, 3072, F, 12, 101376, "v212 v183 v194", 2, 1, true, true, "v138"},
    {3584, 3072, F, 12, 101376, "v212 v183 v194", 2, 1.5, true, true, "v138"},
    {3584, 3072, F, 12, 101376, "v212 v183 v194", 2, 2.5, true, true, "v138"},
    {3584, 3072, F, 12, 101376, "v212 v183 v194", 3, 1, true, true, "v134"},
    {3584, 3072, F, 12, 101376, "v212 v183 v194", 3, 1.5, true, true, "v134"},
    {3584, 3072, F, 12, 101376, "v212 v183 v194", 3, 2.5, true, true, "v134"},
    {3584, 3072, F, 8, 101376, "v212 v183 v138 v194", 1, 1, true, true, "v134"},
    {3584, 3072, F, 8, 101376, "v212 v183 v138 v194", 1, 2.5, true, true, "v134"},
    {3584, 3072, F, 8, 101376, "v212 v183 v138 v194", 2, 1, true, true, "v134"},
    {3584, 3072, F, 8, 101376, "v212 v183 v138 v194", 2, 2.5, true, true, "v134"},
    {3584, 3072, F, 8, 101376, "v212 v183 v138 v194", 8, 1, true, true, "v134"},
    {3584, 3072, F, 8, 101376, "v212 v183 v138 v194", 8, 2.5, true, true, "v134"},
    {3584, 3072, F, 12, 101376, "v212 v183 v138 v194", 1, 1, true, false, "v194"},
    {3584, 3072, R, 9, 232448, "", 1, 1, true, true, "v6"},
    {3584, 3072, R, 9, 232448, "", 1, 1.09, true, true, "v6"},
    {3584, 3072, R, 9, 232448, "", 1, 1.1, true, true, "v6"},
    {3584, 3072, R, 9, 232448, "", 1, 1.5, true, true, "v6"},
    {3584, 3072, R, 9, 232448, "", 1, 1.99, true, true, "v6"},
    {3584, 3072, R, 9, 232448, "", 1, 2, true, true, "v6"},
    {3584, 3072, R, 9, 232448, "", 1, 4, true, true, "v6"},
    {3584, 3072, R, 9, 232448, "", 4, 1, true, true, "v6"},
    {3584, 3072, R, 9, 232448, "", 4, 1.09, true, true, "v6"},
    {3584, 3072, R, 9, 232448, "", 4, 1.1, true, true, "v6"},
    {3584, 3072, R, 9, 232448, "", 4, 1.5, true, true, "v6"},
    {3584, 3072, R, 9, 232448, "", 4, 1.99, true, true, "v6"},
    {3584, 3072, R, 9, 232448, "", 4, 2, true, true, "v6"},
    {3584, 3072, R, 9, 232448, "", 4, 4, true, true, "v6"},
    {3584, 3072, R, 9, 232448, "", 8, 1, true, true, "v6"},
    {3584, 3072, R, 9, 232448, "", 8, 1.09, true, true, "v6"},
    {3584, 3072, R, 9, 232448, "", 8, 1.1, true, true, "v6"},
    {3584, 3072, R, 9, 232448, "", 8, 1.5, true, true, "v6"},
    {3584, 3072, R, 9, 232448, "", 8, 1.99, true, true, "v6"},
    {3584, 3072, R, 9, 232448, "", 8, 2, true, true, "v6"},
    {3584, 3072, R, 9, 232448, "", 8, 4, true, true, "v6"},
    {3584, 3072, R, 7, 49152, "", 1, 1, false, true, "v6"},
    {3584, 3072, R, 7, 49152, "", 1, 2, false, true, "v6"},
    {3584, 3072, R, 7, 49152, "", 8, 1, false, true, "v6"},
    {3584, 3072, R, 7, 49152, "", 8, 2, false, true, "v6"},
    {256, 512, F, 9, 232448, "", 1, 1, true, true, "v212"},
    {256, 512, F, 9, 232448, "", 1, 1.2, true, true, "v212"},
    {256, 512, F, 9, 232448, "", 1, 2, true, true, "v194"},
    {256, 512, F, 9, 232448, "", 8, 1, true, true, "v212"},
    {256, 512, F, 9, 232448, "", 8, 1.2, true, true, "v212"},
    {256, 512, F, 9, 232448, "", 8, 2, true, true, "v194"},
    {256, 512, F, 9, 232448, "", 9, 1, true, true, "v134"},
    {256, 512, F, 9, 232448, "", 9, 1.2, true, true, "v194"},
    {256, 512, F, 9, 232448, "", 9, 2, true, true, "v194"},
    {1024, 256, F, 8, 49152, "", 1, 1, true, true, "v212"},
    {1024, 256, F, 8, 49152, "", 2, 1, true, true, "v212"},
    {384, 256, R, 8, 101376, "", 1, 1, true, true, "v6"},
    {384, 256, R, 8, 101376, "", 1, 2, true, true, "v6"},
    {384, 256, R, 8, 101376, "", 8, 1, true, true, "v6"},
    {384, 256, R, 8, 101376, "", 8, 2, true, true, "v6"},
    {384, 256, R, 9, 232448, "", 1, 1, false, true, "v6"},
    {12800, 128, R, 8, 101376, "", 1, 1, true, true, "v6"},
    {12800, 128, R, 12, 101376, "", 1, 1, false, true, "v6"},
    {12800, 128, R, 9, 232448, "", 1, 1, true, true, "v6"},
    {65536, 128, R, 9, 232448, "", 1, 1, true, true, "v6"},
    {96, 64, R, 9, 232448, "", 1, 1, true, true, "v6"},
    {96, 64, R, 9, 232448, "", 1, 2, true, true, "v6"},
    {96, 64, R, 9, 232448, "", 8, 1, true, true, "v6"},
    {96, 64, R, 9, 232448, "", 8, 2, true, true, "v6"},
    {512, 512, R, 7, 49152, "", 1, 1, true, true, "v6"},
    {3584, 2048, R, 9, 232448, "", 1, 1, true, true, "v6"},
    {3584, 2048, R, 9, 232448, "", 1, 2, true, true, "v6"},
};

struct Layout {
  int latent, inter, cc_major;
  size_t smem_optin;
  ExpertLayout expected;
};

const Layout kLayouts[] = {
    {3584, 3072, 9, 232448, F}, {3584, 3072, 7, 49152, R},  {3584, 3072, 12, 101376, F}, {384, 256, 9, 232448, R},
    {256, 256, 8, 49152, F},    {32768, 256, 9, 232448, R}, {16384, 256, 9, 232448, F},  {12800, 128, 8, 101376, R},
};

}  // namespace

class TestExpertKernelPolicy : public QObject {
  Q_OBJECT
 private slots:
  void chooses_what_the_registry_chose() {
    for (const Call& c : kCalls) {
      const ExpertDevice d{c.cc_major, c.smem_optin};
      const std::string fewer = c.fewer_blocks;
      const BlocksPerSm blocks = [&](ExpertKernel k) {
        return fewer.find(expert_kernel_id(k)) != std::string::npos ? 1 : 2;
      };
      const ExpertKernel k =
          choose_expert_kernel(c.latent, c.inter, c.layout, d, blocks,
                               ExpertCall{c.rows, c.rows_per_expert, c.aligned16, c.tables_fit_shared});
      const QString where = QStringLiteral("%1x%2 %3 sm_%4x smem %5 fewer '%6' T=%7 rpe=%8 aligned=%9 tables=%10")
                                .arg(c.latent)
                                .arg(c.inter)
                                .arg(c.layout == F ? "fragments" : "rows")
                                .arg(c.cc_major)
                                .arg(c.smem_optin)
                                .arg(c.fewer_blocks)
                                .arg(c.rows)
                                .arg(c.rows_per_expert)
                                .arg(c.aligned16)
                                .arg(c.tables_fit_shared);
      QVERIFY2(std::string(expert_kernel_id(k)) == c.expected,
               qPrintable(where + ": chose " + expert_kernel_id(k) + ", expected " + c.expected));
    }
  }

  void every_product_version_is_reachable() {
    bool seen[kExpertKernels] = {};
    for (const Call& c : kCalls)
      for (int k = 0; k < kExpertKernels; ++k)
        if (std::string(expert_kernel_id(ExpertKernel(k))) == c.expected) seen[k] = true;
    for (int k = 0; k < kExpertKernels; ++k) QVERIFY2(seen[k], expert_kernel_id(ExpertKernel(k)));
  }

  void prefers_the_layout_of_the_registry() {
    for (const Layout& l : kLayouts)
      QCOMPARE(preferred_expert_layout(l.latent, l.inter, ExpertDevice{l.cc_major, l.smem_optin}), l.expected);
  }

  void fragments_without_a_fitting_version_have_no_default() {
    // Widths not multiples of 256, GPUs before sm_80, or activation fragments beyond shared memory.
    QVERIFY(!default_expert_kernel(384, 256, F, ExpertDevice{9, 232448}));
    QVERIFY(!default_expert_kernel(3584, 3072, F, ExpertDevice{7, 232448}));
    QVERIFY(!default_expert_kernel(32768, 256, F, ExpertDevice{9, 232448}));
    // Rows always have one: v6 takes any widths.
    QCOMPARE(default_expert_kernel(96, 64, R, ExpertDevice{7, 49152}).value(), ExpertKernel::v6);
  }

  void tables_fallback() { QCOMPARE(kTablesFallback, ExpertKernel::v194); }

  // The SiTU betas the CUDA kernels are compiled with are K3's (K3-SPEC), and the CUDA forward's load
  // check (situ_config_error) accepts exactly those and names both pairs otherwise.
  void situ_betas_are_k3s() {
    QCOMPARE(kSituBeta, 4.0f);
    QCOMPARE(kSituLinearBeta, 25.0f);
    QVERIFY(situ_config_error(4.0f, 25.0f).empty());
    const std::string linear = situ_config_error(4.0f, 24.0f);
    QVERIFY2(linear.find("activation_situ_linear_beta 24)") != std::string::npos, linear.c_str());
    QVERIFY2(linear.find("compiled with (4, 25)") != std::string::npos, linear.c_str());
    const std::string beta = situ_config_error(3.5f, 25.0f);
    QVERIFY2(beta.find("activation_situ_beta 3.5") != std::string::npos, beta.c_str());
    QVERIFY(!situ_config_error(4.0f + 1e-6f, 25.0f).empty());
  }
};

QTEST_GUILESS_MAIN(TestExpertKernelPolicy)
#include "tst_expert_kernel_policy.moc"

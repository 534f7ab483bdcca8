// A pass split between sessions at layer boundaries (placement/split_session.h), proven on the
// CPU: every side is a CPU K3Session, so the ids and logits must equal one session's bit for bit at
// every split point, with states moving between the sides, partial commits, plans of many budgets
// and a side that fails mid-pass; and over several "GPUs" (more K3Sessions, some of them keeping
// the residual stream to themselves between ranges as GPU sessions do) at every pair of split points. The GPU side
// (CudaK3Session) is checked by tst_cuda_k3 on a GPU. Also the plain logic the CUDA forward follows: the plan's layout,
// the pass segments and the order of the stream buffers' copies. Nothing here is timed.
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <stdexcept>

#include "base/error.h"
#include "model/checkpoint.h"
#include "placement/cpu_spine.h"
#include "placement/model_byte_map.h"
#include "placement/plan_report.h"
#include "placement/planner.h"
#include "placement/split_layout.h"
#include "placement/split_session.h"
#include "runtime/generate.h"
#include "runtime/k3_model.h"
#include "support/split_test_rates.h"
#include "support/test_support.h"
#include "synth/k3_synth.h"

using namespace deltafin;
using namespace deltafin::placement;

namespace {

const std::vector<int32_t> kPrompt = {1, 5, 9, 42, 7, 3, 11};

GenerateOptions gen_options() {
  GenerateOptions g;
  g.max_new = 10;
  g.prefill_chunk = 3;  // prefill passes of several rows, and decode passes of one
  return g;
}

// Every unit on the "GPU" side from layer k on when gpu_tail, else before k; lm_head with the tail.
SplitLayout split_at(int layers, int k, bool gpu_head) {
  SplitLayout s;
  for (int l = 0; l < layers; ++l) {
    SplitUnit u;
    if (l < k) u = SplitUnit{GpuCopy::Vram, true, true, false};
    s.layers.push_back(u);
  }
  if (gpu_head) s.lm_head = SplitUnit{GpuCopy::Vram, true, true, false};
  return s;
}

// A session that fails in its n-th run_layers call, as a GPU that falls off the bus.
class FailingSession : public LayerRangeSession {
 public:
  FailingSession(K3Session& s, int fail_at) : s_(s), left_(fail_at) {}
  void begin_pass(std::span<const int32_t> ids, const PassOptions& o) override { s_.begin_pass(ids, o); }
  void run_layers(int first, int last, ResidualStream& rs) override {
    if (left_-- == 0) throw std::runtime_error("cudaErrorDevicesUnavailable (simulated)");
    s_.run_layers(first, last, rs);
  }
  void finish_pass(const ResidualStream& rs, std::vector<float>& logits) override { s_.finish_pass(rs, logits); }
  void stage(std::span<const int32_t> ids, std::vector<float>& logits, const PassOptions& o) override {
    s_.stage(ids, logits, o);
  }
  void commit(int n) override { s_.commit(n); }
  void rollback() override { s_.rollback(); }
  void reset() override { s_.reset(); }
  int64_t n_past() const override { return s_.n_past(); }
  const K3Model& host_model() const override { return s_.host_model(); }
  int max_rows() const override { return 16; }
  K3State save_state() const override { return s_.save_state(); }
  void load_state(K3State st) override { s_.load_state(std::move(st)); }

 private:
  K3Session& s_;
  int left_;
};

// A K3Session that keeps its output to itself when asked (as a GPU session keeps it in device
// memory) and takes a stream from another of its kind directly: the host copy it leaves behind is
// poisoned, so a side that read it instead of asking would give other ids.
class HoldingSession : public LayerRangeSession {
 public:
  explicit HoldingSession(K3Session& s) : s_(s) {}
  bool takes_stream_from(const LayerRangeSession& from) const override {
    return dynamic_cast<const HoldingSession*>(&from) && &from != this;
  }
  void stream_to_host(ResidualStream& rs) override {
    if (rs.held_by != this) throw std::runtime_error("stream_to_host by a session that does not hold it");
    rs.h = h_;
    rs.blocks = blocks_;
    rs.held_by = nullptr;
    ++to_host;
  }
  void begin_pass(std::span<const int32_t> ids, const PassOptions& o) override { s_.begin_pass(ids, o); }
  void run_layers(int first, int last, ResidualStream& rs) override {
    take(rs);
    s_.run_layers(first, last, rs);
    if (rs.keep_on_device) {
      h_ = rs.h;
      blocks_ = rs.blocks;
      std::fill(rs.h.begin(), rs.h.end(), std::numeric_limits<double>::quiet_NaN());
      for (auto& b : rs.blocks) b.clear();
      rs.held_by = this;
    }
  }
  void finish_pass(const ResidualStream& rs, std::vector<float>& logits) override {
    ResidualStream mine = rs;
    take(mine);
    s_.finish_pass(mine, logits);
  }
  void stage(std::span<const int32_t> ids, std::vector<float>& logits, const PassOptions& o) override {
    s_.stage(ids, logits, o);
  }
  void commit(int n) override { s_.commit(n); }
  void rollback() override { s_.rollback(); }
  void reset() override { s_.reset(); }
  int64_t n_past() const override { return s_.n_past(); }
  const K3Model& host_model() const override { return s_.host_model(); }
  int max_rows() const override { return s_.max_rows(); }
  K3State save_state() const override { return s_.save_state(); }
  void load_state(K3State st) override { s_.load_state(std::move(st)); }
  int direct = 0, to_host = 0;

 private:
  void take(ResidualStream& rs) {
    if (!rs.held_by) return;
    const auto* from = dynamic_cast<const HoldingSession*>(rs.held_by);
    if (!from) throw std::runtime_error("a stream held by a session this one cannot read");
    if (from != this) ++direct;
    rs.h = from->h_;
    rs.blocks = from->blocks_;
    rs.held_by = nullptr;
  }
  K3Session& s_;
  std::vector<double> h_;
  std::vector<std::vector<double>> blocks_;
};

// Layers [0, a) on GPU 0, [a, b) on GPU 1, the rest on the CPU; lm_head on `head` (kCpu or a GPU).
DeviceLayout two_gpus(int layers, int a, int b, int head) {
  DeviceLayout d;
  d.gpus.resize(2);
  for (int u = 0; u <= layers; ++u) {
    const int dev = u == layers ? head : u < a ? 0 : u < b ? 1 : kCpu;
    d.decode.push_back(dev);
    d.prefill.push_back(dev);
    for (int g = 0; g < 2; ++g) {
      SplitUnit su = dev == g ? SplitUnit{GpuCopy::Vram, true, true, false} : SplitUnit{};
      if (u == layers) d.gpus[size_t(g)].lm_head = su;
      else d.gpus[size_t(g)].layers.push_back(su);
    }
  }
  d.check(layers);
  return d;
}

// A verify-style pass of four rows of which two are kept, then one more row: the split session's
// logits equal one whole session's at each pass.
void same_logits_through_partial_commits(K3Session& plain, SplitSession& s) {
  PassOptions o;
  o.partial_commit = true;
  std::vector<float> want, got;
  const std::vector<int32_t> four = {4, 8, 15, 16};
  plain.stage(four, want, o);
  s.stage(four, got, o);
  QVERIFY(want == got);
  plain.commit(2);
  s.commit(2);
  const std::vector<int32_t> one = {23};
  plain.stage(one, want, {});
  s.stage(one, got, {});
  QVERIFY(want == got);
  plain.commit(1);
  s.commit(1);
}

}  // namespace

class TestSplitSession : public QObject {
  Q_OBJECT
  std::string dir_;
  K3Config cfg_;
  std::unique_ptr<K3Model> model_;
  std::vector<int32_t> want_;

  std::vector<int32_t> split_ids(const K3Model& m, const SplitLayout& layout, SplitStats* stats = nullptr) {
    K3Session a(m), b(m);
    SplitSession s(a, b, layout);
    auto ids = generate(s, kPrompt, gen_options()).ids;
    if (stats) *stats = s.stats();
    return ids;
  }

 private slots:
  void initTestCase() {
    dir_ = test::temp_dir("split-session");
    K3SynthSpec spec = synth_preset("demo");
    apply_synth_override(spec, "layers=7");
    apply_synth_override(spec, "mla_layers=3+6");
    write_k3_synth(spec, dir_);
    cfg_ = K3Config::load(dir_ + "/config.json");
    model_ = K3Model::load(dir_);
    K3Session s(*model_);
    want_ = generate(s, kPrompt, gen_options()).ids;
    QCOMPARE(int(want_.size()), 10);
  }

  void every_split_point() {
    for (int k = 0; k <= cfg_.layers; ++k)
      for (bool head : {false, true}) {
        SplitStats st;
        QCOMPARE(split_ids(*model_, split_at(cfg_.layers, k, head), &st), want_);
        QVERIFY(st.passes > 0);
        // One hand-over at a boundary inside the layers, one before lm_head when it sits on the
        // other side of the last layer.
        const bool inner = k > 0 && k < cfg_.layers;
        const bool last_on_gpu = k == cfg_.layers;
        const uint64_t per_pass = (inner ? 1 : 0) + (head != last_on_gpu ? 1 : 0);
        QCOMPARE(st.handovers, st.passes * per_pass);
      }
  }

  void same_logits_bit_for_bit_with_partial_commits() {
    // Verify-style passes: 4 rows staged with partial_commit, 2 kept; then a decode row.
    K3Session plain(*model_);
    K3Session a(*model_), b(*model_);
    SplitLayout layout = split_at(cfg_.layers, 3, true);
    layout.layers[5] = SplitUnit{GpuCopy::Streamed, false, true, false};  // moves between the sides
    SplitSession s(a, b, layout);
    same_logits_through_partial_commits(plain, s);
    if (QTest::currentTestFailed()) return;
    QCOMPARE(s.n_past(), int64_t(3));
    QVERIFY(s.stats().state_moves > 0);
    // Passes of several rows are accounted apart from decode's, per side, state moves included.
    QVERIFY(s.stats().multi_passes > 0);
    QCOMPARE(s.stats().multi_device_seconds.size(), size_t(2));
    QCOMPARE(s.stats().passes, s.stats().decode_passes + s.stats().multi_passes);
    // The merged state is the plain session's, whichever side holds each layer.
    const K3State ws = plain.save_state(), gs = s.save_state();
    for (int l = 0; l < cfg_.layers; ++l) {
      QVERIFY(ws.kda[size_t(l)].S == gs.kda[size_t(l)].S);
      QVERIFY(ws.kda[size_t(l)].conv == gs.kda[size_t(l)].conv);
      QVERIFY(ws.mla[size_t(l)].cache == gs.mla[size_t(l)].cache);
    }
    // A rolled back pass leaves nothing behind.
    PassOptions o;
    o.partial_commit = true;
    std::vector<float> want, got;
    const std::vector<int32_t> four = {4, 8, 15, 16}, one = {23};
    s.stage(four, got, o);
    s.rollback();
    plain.stage(one, want, {});
    s.stage(one, got, {});
    QVERIFY(want == got);
  }

  void decode_and_prefill_on_different_sides() {
    // Layers from 2 on: decode on the CPU side, prefill on the other; lm_head the reverse.
    SplitLayout layout = split_at(cfg_.layers, 2, false);
    for (int l = 2; l < cfg_.layers; ++l) layout.layers[size_t(l)] = SplitUnit{GpuCopy::Streamed, false, true, false};
    layout.lm_head = SplitUnit{GpuCopy::Streamed, true, false, false};
    SplitStats st;
    QCOMPARE(split_ids(*model_, layout, &st), want_);
    // Only the five layers whose device differs move: to the prefill's side before the prompt, back
    // before the first decode step.
    QCOMPARE(st.state_moves, uint64_t(2 * (cfg_.layers - 2)));
  }

  void short_passes_run_as_decode() {
    // Layers from 2 on: decode on the CPU side, passes of 5 rows or more on the other. Verify-style
    // passes of 4 rows then run where decode does: no layer's state moves for them.
    SplitLayout layout = split_at(cfg_.layers, 2, true);
    for (int l = 2; l < cfg_.layers; ++l) layout.layers[size_t(l)] = SplitUnit{GpuCopy::Streamed, false, true, false};
    layout.prefill_from_rows = 5;
    K3Session plain(*model_), a(*model_), b(*model_);
    SplitSession s(a, b, layout);
    same_logits_through_partial_commits(plain, s);
    if (QTest::currentTestFailed()) return;
    QCOMPARE(s.stats().state_moves, uint64_t(0));
    // A pass of five rows moves them.
    std::vector<float> want, got;
    const std::vector<int32_t> five = {1, 2, 3, 4, 5};
    plain.stage(five, want, {});
    s.stage(five, got, {});
    QVERIFY(want == got);
    QCOMPARE(s.stats().state_moves, uint64_t(cfg_.layers - 2));
    // What run --stats prints of it: the same counts, by pass kind and device.
    const auto t = s.split_times();
    QVERIFY(t.has_value());
    QCOMPARE(t->prefill_from_rows, 5);
    QCOMPARE(t->state_moves, s.stats().state_moves);
    QCOMPARE(t->decode_passes, s.stats().decode_passes);
    QCOMPARE(t->multi_passes, s.stats().multi_passes);
    QCOMPARE(t->multi_device_seconds.size(), size_t(2));
    // Per prompt pass: the CPU's, the GPU's and the rest, adding up to the pass.
    const std::vector<double> per = t->per_pass(false);
    QCOMPARE(per.size(), size_t(3));
    QVERIFY(std::abs(per[0] + per[1] + per[2] - t->multi_seconds / double(t->multi_passes)) <= 1e-12);
    QVERIFY(!K3Session(*model_).split_times().has_value());
    layout.prefill_from_rows = 1;
    QVERIFY_THROWS_EXCEPTION(Error, layout.check(cfg_.layers));
  }

  void a_full_context_is_refused_and_the_session_goes_on() {
    // A GPU side that holds 6 tokens: the pass that would pass them is refused before any side runs,
    // with nothing lost; a shorter one then runs as a plain session's would.
    class Capped : public HoldingSession {
     public:
      using HoldingSession::HoldingSession;
      int64_t max_context() const override { return 6; }
    };
    K3Session plain(*model_), a(*model_), b(*model_);
    Capped g(b);
    SplitSession s(a, g, split_at(cfg_.layers, 3, true));
    QCOMPARE(s.max_context(), int64_t(6));
    std::vector<float> want, got;
    const std::vector<int32_t> four = {4, 8, 15, 16};
    plain.stage(four, want, {});
    plain.commit(4);
    s.stage(four, got, {});
    s.commit(4);
    try {
      s.stage(four, got, {});
      QFAIL("a pass past the context was taken");
    } catch (const Error& e) {
      QVERIFY2(std::string(e.what()).find("context is full") != std::string::npos, e.what());
    }
    QCOMPARE(s.n_past(), int64_t(4));
    const std::vector<int32_t> two = {23, 42};
    plain.stage(two, want, {});
    s.stage(two, got, {});
    QVERIFY(want == got);
  }

  void one_layer_state_moves_between_sessions() {
    // Layer states handed from one session to another carry the conversation on there: b, which
    // read another prompt, then decodes as the session that read this one.
    K3Session plain(*model_), a(*model_), b(*model_);
    std::vector<float> want, got;
    const std::vector<int32_t> prompt = {4, 8, 15, 16}, other = {42, 7, 9, 11};
    for (K3Session* s : {&plain, &a}) {
      s->stage(prompt, want, {});
      s->commit(4);
    }
    b.stage(other, got, {});
    b.commit(4);
    KdaLayerState kda;
    MlaLayerState mla;
    for (int l = 0; l < cfg_.layers; ++l) {
      a.export_layer(l, kda, mla);
      b.import_layer(l, kda, mla);
    }
    plain.stage({{23}}, want, {});
    b.stage({{23}}, got, {});
    QVERIFY(want == got);
    plain.commit(1);
    b.commit(1);
    // A state of the wrong shape is refused, naming the layer, and the session keeps its own.
    auto refused = [&](int layer, KdaLayerState k, MlaLayerState m, const std::string& what) {
      try {
        b.import_layer(layer, k, m);
        QFAIL(("layer " + std::to_string(layer) + "'s misfit state was taken").c_str());
      } catch (const Error& e) {
        QVERIFY2(std::string(e.what()).find(what + " of layer " + std::to_string(layer)) != std::string::npos,
                 e.what());
      }
    };
    int kda_layer = -1, mla_layer = -1;
    for (int l = 0; l < cfg_.layers; ++l) (cfg_.is_mla[size_t(l)] ? mla_layer : kda_layer) = l;
    QVERIFY(kda_layer >= 0 && mla_layer >= 0);
    refused(kda_layer, KdaLayerState{std::vector<double>(3), {}}, {}, "KDA state size");
    a.export_layer(mla_layer, kda, mla);  // a is at 4 tokens, b at 5
    refused(mla_layer, kda, mla, "MLA cache size");
    plain.stage({{42}}, want, {});
    b.stage({{42}}, got, {});
    QVERIFY(want == got);
  }

  void plans_of_many_budgets() {
    auto ck = Checkpoint::open(dir_);
    const auto bytes = ModelByteMap::from_checkpoint(*ck, cfg_);
    const PlanOptions o = deltafin::test::split_test_plan_options(64);
    MachineBudget b = deltafin::test::roomy_one_gpu_machine();
    const Plan full = make_plan(bytes, b, deltafin::test::split_test_rates(), o);
    const uint64_t vlo = full.vram_minimum, vhi = vlo + bytes.spine_bytes();
    int split = 0, mixed = 0, disk = 0, n = 0;
    for (uint64_t i = 0; i <= 7; ++i) {
      b.gpus[0].budget = vlo + (vhi - vlo) * i / 7;
      // Every other budget also leaves part of the spine on disk.
      b.ram_budget = i % 2 ? 1ull << 40 : full.ram_minimum + bytes.largest_unit_bytes();
      const Plan plan = make_plan(bytes, b, deltafin::test::split_test_rates(), o);
      const SplitLayout layout = split_layout(plan);
      K3Model::Options mo;
      mo.spine = host_spine_placement(plan);
      auto m = K3Model::load(dir_, std::move(mo));
      QVERIFY2(split_ids(*m, layout) == want_, layout.describe().c_str());
      bool vram = false, cpu = false, mix = false, fd = false;
      for (int u = 0; u < layout.units(); ++u) {
        const SplitUnit& su = layout.unit(u);
        vram = vram || su.gpu == GpuCopy::Vram;
        cpu = cpu || !su.decode_gpu;
        mix = mix || su.decode_gpu != su.prefill_gpu;
        fd = fd || su.from_disk;
      }
      split += vram && cpu;
      mixed += mix;
      disk += fd;
      ++n;
    }
    QVERIFY2(split >= 2, "some budgets split the layers between VRAM and the CPU");
    QVERIFY2(mixed >= 1, "some plans decode a unit on the CPU and prefill it on the GPU");
    QVERIFY2(disk >= 1, "some plans stream part of the spine from disk");
    // Budgets the plan refuses: below one layer's working set (the error says the minimum).
    b.gpus[0].budget = vlo - 1;
    try {
      make_plan(bytes, b, deltafin::test::split_test_rates(), o);
      QFAIL("a VRAM budget below the minimum was accepted");
    } catch (const Error& e) {
      QVERIFY2(std::string(e.what()).find(format_gb(vlo)) != std::string::npos, e.what());
    }
    // Several GPUs: a one-GPU layout is refused, the plan runs as a device layout.
    b.gpus[0].budget = 1ull << 40;
    b.gpus.push_back(GpuBudget{"GPU 1", 1ull << 40, 0});
    QVERIFY_THROWS_EXCEPTION(Error, split_layout(make_plan(bytes, b, deltafin::test::split_test_rates(), o)));
    QCOMPARE(device_layout(make_plan(bytes, b, deltafin::test::split_test_rates(), o)).gpus.size(), size_t(2));
  }

  void several_gpus_every_pair_of_split_points() {
    // GPU 0 | GPU 1 | CPU at every a <= b, lm_head on each device; the GPU sides hand the stream to
    // each other directly (a poisoned host copy in between) and to the CPU through host memory.
    const int L = cfg_.layers;
    for (int a = 0; a <= L; ++a)
      for (int b = a; b <= L; ++b)
        for (int head : {kCpu, 0, 1}) {
          const DeviceLayout d = two_gpus(L, a, b, head);
          K3Session c(*model_), g0(*model_), g1(*model_);
          HoldingSession h0(g0), h1(g1);
          SplitSession s(c, {&h0, &h1}, d);
          const auto ids = generate(s, kPrompt, gen_options()).ids;
          const std::string what = d.describe() + " lm_head on " + std::to_string(head);
          QVERIFY2(ids == want_, what.c_str());
          // GPU 0 -> GPU 1 directly when GPU 1's layers (or its lm_head) follow GPU 0's; GPU 1 -> GPU 0
          // when GPU 0's lm_head follows GPU 1's last layer.
          const bool d01 = a > 0 && (b > a || (a == L && head == 1));
          const bool d10 = b > a && b == L && head == 0;
          QVERIFY2((h1.direct > 0) == d01, what.c_str());
          QVERIFY2((h0.direct > 0) == d10, what.c_str());
          QVERIFY2((d01 || d10) == (s.stats().device_handovers > 0), what.c_str());
          QVERIFY(s.stats().device_handovers <= s.stats().handovers);
        }
  }

  void several_gpus_states_move_and_partial_commits() {
    // Layers 1-2 on GPU 0, 3-4 on GPU 1, layer 5 decoded on the CPU and prefilled on GPU 0 (streamed),
    // lm_head on GPU 1: verify-style passes with partial commits, logits bit for bit.
    const int L = cfg_.layers;
    DeviceLayout d = two_gpus(L, 0, 0, 1);
    auto put = [&](int u, int dec, int pre, GpuCopy copy) {
      d.decode[size_t(u)] = dec;
      d.prefill[size_t(u)] = pre;
      for (int g = 0; g < 2; ++g) {
        SplitUnit su;
        if (dec == g || pre == g) su = SplitUnit{copy, dec == g, pre == g, false};
        (u == L ? d.gpus[size_t(g)].lm_head : d.gpus[size_t(g)].layers[size_t(u)]) = su;
      }
    };
    put(1, 0, 0, GpuCopy::Vram);
    put(2, 0, 0, GpuCopy::Vram);
    put(3, 1, 1, GpuCopy::Vram);
    put(4, 1, 1, GpuCopy::Vram);
    put(5, kCpu, 0, GpuCopy::Streamed);
    d.check(L);
    K3Session plain(*model_), c(*model_), g0(*model_), g1(*model_);
    HoldingSession h0(g0), h1(g1);
    SplitSession s(c, {&h0, &h1}, d, {"GPU 0 (test)", "GPU 1 (test)"});
    same_logits_through_partial_commits(plain, s);
    if (QTest::currentTestFailed()) return;
    QVERIFY(s.stats().state_moves > 0);
    QCOMPARE(s.state_device()[5], kCpu);
    QCOMPARE(s.state_device()[3], 1);
    const K3State ws = plain.save_state(), gs = s.save_state();
    for (int l = 0; l < L; ++l) {
      QVERIFY(ws.kda[size_t(l)].S == gs.kda[size_t(l)].S);
      QVERIFY(ws.mla[size_t(l)].cache == gs.mla[size_t(l)].cache);
    }
    QVERIFY(h1.direct > 0);
  }

  void state_moves_through_every_path() {
    // Every session path after layer states moved (swapped out of the CPU-like sides, copied by the
    // default export/import of the holding sides): short and long verify passes with partial commits,
    // a rolled back prompt pass (which resets), save_state / load_state while states sit on the
    // prefill's side, reset; one GPU and two (GPU 0 decodes, GPU 1 prefills: GPU -> GPU moves).
    const int L = cfg_.layers;
    auto check = [&](SplitSession& s, const char* what) {
      K3Session plain(*model_);
      std::vector<float> want, got;
      auto both = [&](const std::vector<int32_t>& ids, const PassOptions& o, int keep) {
        plain.stage(ids, want, o);
        s.stage(ids, got, o);
        QVERIFY2(want == got, what);
        if (keep >= 0) {
          plain.commit(keep);
          s.commit(keep);
        }
        QCOMPARE(s.n_past(), plain.n_past());
      };
      auto same_state = [&] {
        const K3State ws = plain.save_state(), gs = s.save_state();
        QCOMPARE(gs.n_past, ws.n_past);
        for (int l = 0; l < L; ++l) {
          QVERIFY2(ws.kda[size_t(l)].S == gs.kda[size_t(l)].S, what);
          QVERIFY2(ws.kda[size_t(l)].conv == gs.kda[size_t(l)].conv, what);
          QVERIFY2(ws.mla[size_t(l)].cache == gs.mla[size_t(l)].cache, what);
        }
      };
      PassOptions part;
      part.partial_commit = true;
      part.all_logits = true;
      both({1, 5, 9}, {}, 3);
      both({42, 7, 3}, {}, 3);
      both({11}, {}, 1);
      both({4, 8, 15, 16}, part, 2);  // moves to the prefill side, partial commit there
      both({23, 42}, part, 1);        // runs as decode
      both({8}, {}, 1);
      same_state();
      const K3State saved = s.save_state();
      both({2, 3, 4, 5, 6}, part, 0);  // moves, keeps nothing
      both({9, 9, 9, 9}, {}, -1);      // a prompt pass, rolled back: every side resets
      plain.rollback();
      s.rollback();
      QCOMPARE(s.n_past(), int64_t(0));
      both({3, 1, 4, 1}, {}, 4);  // states on the prefill side now
      same_state();
      plain.load_state(saved);
      s.load_state(saved);
      same_state();
      both({5}, {}, 1);
      both({9, 2, 6, 5}, part, 3);
      both({3}, {}, 1);
      same_state();
      plain.reset();
      s.reset();
      both({1, 2, 3, 4, 5, 6, 7}, {}, 7);
      both({8}, {}, 1);
      same_state();
    };
    {
      SplitLayout layout = split_at(L, 2, true);
      for (int l = 2; l < L; ++l) layout.layers[size_t(l)] = SplitUnit{GpuCopy::Streamed, false, true, false};
      layout.prefill_from_rows = 3;
      K3Session a(*model_), b(*model_);
      SplitSession s(a, b, layout);
      check(s, "one GPU, both sides swapping");
      if (QTest::currentTestFailed()) return;
      QVERIFY(s.stats().state_moves > 0);
      K3Session c(*model_), g(*model_);
      HoldingSession h(g);
      SplitSession s2(c, h, layout);
      check(s2, "one GPU, the GPU side copying");
      if (QTest::currentTestFailed()) return;
    }
    for (bool holding : {false, true}) {
      DeviceLayout d = two_gpus(L, 0, 0, 1);
      d.prefill_from_rows = 3;
      for (auto& g : d.gpus) g.prefill_from_rows = 3;
      for (int u = 0; u <= L; ++u) {
        const int dec = u < 3 ? kCpu : u == L ? 1 : 0, pre = u < 2 ? kCpu : 1;
        d.decode[size_t(u)] = dec;
        d.prefill[size_t(u)] = pre;
        for (int g = 0; g < 2; ++g) {
          SplitUnit su;
          if (dec == g || pre == g) su = SplitUnit{GpuCopy::Streamed, dec == g, pre == g, false};
          (u == L ? d.gpus[size_t(g)].lm_head : d.gpus[size_t(g)].layers[size_t(u)]) = su;
        }
      }
      d.check(L);
      K3Session c(*model_), g0(*model_), g1(*model_);
      HoldingSession h0(g0), h1(g1);
      std::vector<LayerRangeSession*> gpus =
          holding ? std::vector<LayerRangeSession*>{&h0, &h1} : std::vector<LayerRangeSession*>{&g0, &g1};
      SplitSession s(c, gpus, d);
      check(s, holding ? "two GPUs, copying" : "two GPUs, swapping");
      if (QTest::currentTestFailed()) return;
      QVERIFY(s.stats().state_moves > 0);
    }
  }

  void plans_over_several_gpus() {
    auto ck = Checkpoint::open(dir_);
    const auto bytes = ModelByteMap::from_checkpoint(*ck, cfg_);
    const PlanOptions o = deltafin::test::split_test_plan_options(64);
    MachineBudget one = deltafin::test::roomy_one_gpu_machine();
    const Plan full = make_plan(bytes, one, deltafin::test::split_test_rates(), o);
    const uint64_t vlo = full.vram_minimum, spine = bytes.spine_bytes();
    int multi = 0;
    for (int ngpu : {2, 3})
      for (int i = 0; i <= 4; ++i) {
        MachineBudget b;
        b.ram_budget = 1ull << 40;
        // Each GPU a share of the spine: together from a few layers to all of it.
        const uint64_t each = vlo + spine * uint64_t(i + 1) / uint64_t(4 * ngpu);
        for (int g = 0; g < ngpu; ++g) b.gpus.push_back(GpuBudget{"GPU " + std::to_string(g), each, 0});
        const Plan p = make_plan(bytes, b, deltafin::test::split_test_rates(), o);
        const std::vector<GpuRange> r = gpu_ranges(p);
        QCOMPARE(int(r.size()), ngpu);
        // The ranges follow one another from layer 0 in GPU order; each within its budget.
        int next = 0, used = 0;
        for (const GpuRange& g : r) {
          if (g.first == g.last) continue;
          QCOMPARE(g.first, next);
          next = g.last;
          ++used;
          QVERIFY(g.spine_bytes + p.vram_reserved[size_t(g.gpu)] <= b.gpus[size_t(g.gpu)].budget);
          QCOMPARE(g.spine_bytes, p.spine_in_gpu(g.gpu));
        }
        for (int l = next; l < cfg_.layers; ++l) QVERIFY(p.units[size_t(l)].home != Home::Vram);
        multi += used >= 2;
        const DeviceLayout d = device_layout(p);
        // The segments of a decode pass run the GPUs' ranges in order.
        const auto segs = device_segments(d, 1);
        int at = 0;
        for (const DeviceSegment& sg : segs) {
          QCOMPARE(sg.first, at);
          at = sg.last;
          for (int l = sg.first; l < sg.last; ++l) QCOMPARE(d.device(l, 1), sg.device);
        }
        QCOMPARE(at, cfg_.layers);
        K3Model::Options mo;
        mo.spine = host_spine_placement(p);
        auto m = K3Model::load(dir_, std::move(mo));
        K3Session c(*m);
        std::vector<std::unique_ptr<K3Session>> inner;
        std::vector<std::unique_ptr<HoldingSession>> gpus;
        std::vector<LayerRangeSession*> ptrs;
        for (int g = 0; g < ngpu; ++g) {
          inner.push_back(std::make_unique<K3Session>(*m));
          gpus.push_back(std::make_unique<HoldingSession>(*inner.back()));
          ptrs.push_back(gpus.back().get());
        }
        SplitSession s(c, ptrs, d);
        QVERIFY2(generate(s, kPrompt, gen_options()).ids == want_, d.describe().c_str());
      }
    QVERIFY2(multi >= 3, "some plans spread the layers over two GPUs or more");
  }

  void several_gpus_bad_input() {
    // One budget figure per GPU of this machine; another machine gets as many GPUs as figures.
    MachineBudget m;
    m.gpus.push_back(GpuBudget{"GPU 0 (test)", 0, 80000000000ull, 0});
    m.gpus.push_back(GpuBudget{"GPU 1 (test)", 0, 80000000000ull, 1});
    try {
      set_vram_budgets(m, parse_gb_list("32,32,32", "--vram-budget"), false);
      QFAIL("three figures for two GPUs were accepted");
    } catch (const Error& e) {
      QVERIFY2(std::string(e.what()).find("3 figure(s) but this machine has 2 GPU(s)") != std::string::npos, e.what());
    }
    try {
      set_vram_budgets(m, parse_gb_list("32,90", "--vram-budget"), false);
      QFAIL("a budget above GPU 1's memory was accepted");
    } catch (const Error& e) {
      QVERIFY2(std::string(e.what()).find("GPU 1 (test)") != std::string::npos, e.what());
    }
    set_vram_budgets(m, parse_gb_list("32,48", "--vram-budget"), false);
    QCOMPARE(m.gpus[1].budget, uint64_t(48000000000ull));
    QCOMPARE(m.gpus[1].device, 1);
    QVERIFY_THROWS_EXCEPTION(Error, parse_gb_list("32,,32", "--vram-budget"));
    set_vram_budgets(m, parse_gb_list("48,48,48,48", "--vram-budget"), true);
    QCOMPARE(m.gpus.size(), size_t(4));
    // A GPU whose budget cannot hold one layer's working set: the error names it and the minimum.
    auto ck = Checkpoint::open(dir_);
    const auto bytes = ModelByteMap::from_checkpoint(*ck, cfg_);
    const PlanOptions o = deltafin::test::split_test_plan_options(64);
    MachineBudget b = deltafin::test::roomy_one_gpu_machine();
    const uint64_t vlo = make_plan(bytes, b, deltafin::test::split_test_rates(), o).vram_minimum;
    b.gpus.push_back(GpuBudget{"GPU 1", vlo - 1, 0});
    try {
      make_plan(bytes, b, deltafin::test::split_test_rates(), o);
      QFAIL("GPU 1's budget below one layer's working set was accepted");
    } catch (const Error& e) {
      const std::string w = e.what();
      QVERIFY2(w.find("for GPU 1") != std::string::npos && w.find(format_gb(vlo)) != std::string::npos, e.what());
    }
    // The device list: every visible device by default; ordinals (repeats imitate several GPUs on one).
    QCOMPARE(parse_device_list("", 2), (std::vector<int>{0, 1}));
    QCOMPARE(parse_device_list("0,0", 1), (std::vector<int>{0, 0}));
    QCOMPARE(parse_device_list("1,0", 2), (std::vector<int>{1, 0}));
    QVERIFY_THROWS_EXCEPTION(Error, parse_device_list("0,2", 2));
    QVERIFY_THROWS_EXCEPTION(Error, parse_device_list("0,x", 2));
    QVERIFY_THROWS_EXCEPTION(Error, parse_device_list("0,-1", 2));
    QVERIFY_THROWS_EXCEPTION(Error, parse_device_list(",", 2));
    QVERIFY(parse_device_list("", 0).empty());
    // Inconsistent device layouts and session lists are refused.
    const int L = cfg_.layers;
    DeviceLayout d = two_gpus(L, 2, 4, 1);
    DeviceLayout bad = d;
    bad.decode[1] = 2;  // a third GPU
    QVERIFY_THROWS_EXCEPTION(Error, bad.check(L));
    bad = d;
    bad.decode[3] = 0;  // GPU 0's layout does not compute layer 3
    QVERIFY_THROWS_EXCEPTION(Error, bad.check(L));
    QVERIFY_THROWS_EXCEPTION(Error, d.check(L + 1));
    K3Session c(*model_), g0(*model_);
    QVERIFY_THROWS_EXCEPTION(Error, SplitSession(c, {&g0}, d));
    QVERIFY_THROWS_EXCEPTION(Error, SplitSession(c, {}, d));
  }

  void plan_names_each_gpu() {
    const K3Config cfg = K3Config::load(test::fixtures_dir() + "/k3-real-meta/config.json");
    const ModelByteMap m = ModelByteMap::from_config(cfg);
    MachineBudget b;
    b.ram_budget = 128000000000ull;
    set_vram_budgets(b, parse_gb_list("32,32", "--vram-budget"), true);
    const Plan p = make_plan(m, b, assumed_desktop());
    const auto r = gpu_ranges(p);
    QCOMPARE(r.size(), size_t(2));
    QCOMPARE(r[0].first, 0);
    QCOMPARE(r[1].first, r[0].last);
    QVERIFY(r[1].last > r[1].first);
    const std::string text = plan_gpus(p);
    const std::string want0 = "GPU 0: budget 32.0 GB, layers 0-" + std::to_string(r[0].last - 1) + " ";
    const std::string want1 =
        "GPU 1: budget 32.0 GB, layers " + std::to_string(r[1].first) + "-" + std::to_string(r[1].last - 1);
    QVERIFY2(text.find(want0) != std::string::npos, text.c_str());
    QVERIFY2(text.find(want1) != std::string::npos, text.c_str());
    QVERIFY2(plan_table(p).rfind(text, 0) == 0, "the table begins with the GPUs");
    // A spine that fits in the GPUs together is shared among them, so that each GPU keeps an
    // expert tier for its own layers (filled in order, the fourth 48 GB GPU would hold none).
    b.ram_budget = 256000000000ull;
    set_vram_budgets(b, parse_gb_list("48,48,48,48", "--vram-budget"), true);
    const Plan q = make_plan(m, b, assumed_desktop());
    QCOMPARE(q.spine_in(Home::Ram) + q.spine_in(Home::Disk), uint64_t(0));
    const auto r4 = gpu_ranges(q);
    QCOMPARE(r4.size(), size_t(4));
    for (const GpuRange& g : r4) {
      QVERIFY2(g.last > g.first, plan_gpus(q).c_str());
      QVERIFY2(q.experts.vram_bytes[size_t(g.gpu)] > 10000000000ull, plan_gpus(q).c_str());
    }
    QVERIFY(r4[3].lm_head);
  }

  void host_placement_of_a_plan() {
    Plan p;
    p.units = {UnitPlan{0, 10, 0, 0, Home::Vram, 0, 0, 0}, UnitPlan{1, 10, 0, 0, Home::Ram, -1, kCpu, 0},
               UnitPlan{2, 10, 0, 0, Home::Disk, -1, kCpu, kCpu}, UnitPlan{kLmHeadUnit, 10, 0, 0, Home::Ram, -1, 0, 0}};
    const SpinePlacement h = host_spine_placement(p);
    QCOMPARE(h.layers.size(), size_t(3));
    QVERIFY(h.layers[0] == SpineHome::Mapped);
    QVERIFY(h.layers[1] == SpineHome::Owned);  // CPU decode, GPU prefill, something streams: owned
    QVERIFY(h.layers[2] == SpineHome::Streamed);
    QVERIFY(h.lm_head == SpineHome::Mapped);  // only the GPU computes it: its pinned copy is its home
    // With nothing streamed a RAM unit only the CPU computes is still a copy of its own in huge
    // pages; one the GPU also computes (it has a pinned copy) stays mapped, so that its bytes are
    // not in RAM twice; without a GPU every RAM unit is owned.
    Plan q = p;
    q.units[2].home = Home::Ram;
    const SpinePlacement hq = host_spine_placement(q);
    QVERIFY(hq.layers[1] == SpineHome::Mapped);
    QVERIFY(hq.layers[2] == SpineHome::Owned);
    QVERIFY(hq.lm_head == SpineHome::Mapped);
    QVERIFY(cpu_spine_placement(q).layers[1] == SpineHome::Owned);
    // Where the GPU copies from the host's own buffer, that unit is held once, owned; one only the
    // GPU computes keeps its pinned copy.
    ::setenv("DELTAFIN_SHARED_SPINE", "1", 1);
    QVERIFY(shared_spine_copy());
    const SpinePlacement hs = host_spine_placement(q);
    ::unsetenv("DELTAFIN_SHARED_SPINE");
    QVERIFY(!shared_spine_copy());
    QVERIFY(hs.layers[1] == SpineHome::Owned);
    QVERIFY(hs.layers[2] == SpineHome::Owned);
    QVERIFY(hs.lm_head == SpineHome::Mapped);
    const SplitLayout s = split_layout(p);
    QVERIFY(s.layers[0].gpu == GpuCopy::Vram);
    QVERIFY(s.layers[1].gpu == GpuCopy::Streamed && !s.layers[1].decode_gpu && s.layers[1].prefill_gpu);
    QVERIFY(s.layers[2].gpu == GpuCopy::None && s.layers[2].from_disk);
    QVERIFY(s.lm_head.gpu == GpuCopy::Streamed && s.lm_head.decode_gpu);
    QCOMPARE(QString::fromStdString(s.describe()), QString("layer 0 VRAM (GPU), layer 1 RAM (CPU decode, GPU prefill), "
                                                           "layer 2 disk (CPU), lm_head RAM (GPU, streamed)"));
    // Inconsistent layouts are refused.
    SplitLayout bad = s;
    bad.layers[2].decode_gpu = true;
    QVERIFY_THROWS_EXCEPTION(Error, bad.check(3));
    bad = s;
    bad.layers[0].decode_gpu = false;
    QVERIFY_THROWS_EXCEPTION(Error, bad.check(3));
    QVERIFY_THROWS_EXCEPTION(Error, s.check(4));
  }

  void segments_of_a_pass() {
    SplitLayout s = split_at(6, 2, true);
    s.layers[4] = SplitUnit{GpuCopy::Streamed, false, true, false};
    const auto d = pass_segments(s, 1);
    QCOMPARE(d.size(), size_t(2));
    QVERIFY(d[0].gpu && d[0].first == 0 && d[0].last == 2);
    QVERIFY(!d[1].gpu && d[1].first == 2 && d[1].last == 6);
    const auto p = pass_segments(s, 8);
    QCOMPARE(p.size(), size_t(4));
    QVERIFY(p[2].gpu && p[2].first == 4 && p[2].last == 5);
    QVERIFY(!p[3].gpu && p[3].first == 5 && p[3].last == 6);
  }

  void stream_buffer_order() {
    // Units 0-1 in VRAM, 2-7 streamed from RAM except 5 (from disk), lm_head streamed.
    SplitLayout s;
    for (int l = 0; l < 8; ++l)
      s.layers.push_back(l < 2 ? SplitUnit{GpuCopy::Vram, true, true, false}
                               : SplitUnit{GpuCopy::Streamed, true, true, l == 5});
    s.lm_head = SplitUnit{GpuCopy::Streamed, true, true, false};
    s.check(8);
    const auto steps = stream_schedule(s, 1);
    std::vector<int> computed, slot_of(9, -1), occupant = {-1, -1};
    std::vector<bool> copied(9, false), done(9, false);
    int outstanding = 0, most = 0;
    for (size_t i = 0; i < steps.size(); ++i) {
      const StreamStep& st = steps[i];
      QVERIFY(st.slot == 0 || st.slot == 1);
      if (st.kind == StreamStep::Copy) {
        QVERIFY2(!copied[size_t(st.unit)], "each unit is copied once per pass");
        // The slot's previous unit has been issued for computation, and the copy waits for it.
        QCOMPARE(st.after, occupant[size_t(st.slot)]);
        if (st.after >= 0) QVERIFY(done[size_t(st.after)]);
        occupant[size_t(st.slot)] = st.unit;
        copied[size_t(st.unit)] = true;
        slot_of[size_t(st.unit)] = st.slot;
        most = std::max(most, ++outstanding);
      } else {
        QVERIFY(copied[size_t(st.unit)]);
        QCOMPARE(st.slot, slot_of[size_t(st.unit)]);
        QCOMPARE(occupant[size_t(st.slot)], st.unit);
        done[size_t(st.unit)] = true;
        computed.push_back(st.unit);
        --outstanding;
        // The next unit from RAM is already on its way while this one computes.
        const int next = st.unit + 1;
        if (next <= 8 && next != 5) QVERIFY2(copied[size_t(next)], std::to_string(next).c_str());
      }
    }
    QCOMPARE(computed, (std::vector<int>{2, 3, 4, 5, 6, 7, 8}));
    QVERIFY(most <= 2);
    // The unit from disk is copied only once the unit before it was issued for computation (its
    // bytes come through the spine streamer, in pass order), and before its own computation.
    auto at = [&](StreamStep::Kind k, int unit) {
      for (size_t i = 0; i < steps.size(); ++i)
        if (steps[i].kind == k && steps[i].unit == unit) return int(i);
      return -1;
    };
    QVERIFY(at(StreamStep::Copy, 5) > at(StreamStep::Compute, 4));
    QVERIFY(at(StreamStep::Copy, 5) < at(StreamStep::Compute, 5));
    // Decode passes that compute nothing streamed on the GPU copy nothing.
    for (auto& u : s.layers)
      if (u.gpu == GpuCopy::Streamed) u.decode_gpu = false;
    s.lm_head.decode_gpu = false;
    QVERIFY(stream_schedule(s, 1).empty());
    QCOMPARE(stream_schedule(s, 4).size(), size_t(14));
  }

  void a_failing_side_ends_the_session() {
    K3Session a(*model_), b(*model_);
    FailingSession f(b, 3);
    SplitSession s(a, f, split_at(cfg_.layers, 4, true));
    std::vector<float> logits;
    s.stage(std::vector<int32_t>{1, 2}, logits, {});
    s.commit(2);
    try {
      for (int i = 0; i < 5; ++i) {
        s.stage(std::vector<int32_t>{3}, logits, {});
        s.commit(1);
      }
      QFAIL("the failure was not reported");
    } catch (const Error& e) {
      const std::string w = e.what();
      QVERIFY2(w.find("the GPU failed in layers 0-3") != std::string::npos, w.c_str());
      QVERIFY2(w.find("simulated") != std::string::npos, w.c_str());
      QVERIFY2(w.find("nothing falls back") != std::string::npos, w.c_str());
    }
    // No later pass runs on what is left, on either side.
    QVERIFY_THROWS_EXCEPTION(Error, s.stage(std::vector<int32_t>{3}, logits, {}));
    QVERIFY_THROWS_EXCEPTION(Error, s.save_state());
    PassOptions traced;
    ForwardTrace tr;
    traced.trace = &tr;
    K3Session c(*model_), d(*model_);
    SplitSession t(c, d, split_at(cfg_.layers, 4, true));
    QVERIFY_THROWS_EXCEPTION(Error, t.stage(std::vector<int32_t>{3}, logits, traced));
  }
};

QTEST_GUILESS_MAIN(TestSplitSession)
#include "test_split_session.moc"

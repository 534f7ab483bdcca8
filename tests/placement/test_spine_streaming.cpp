// The CPU forward following a plan: spine layers copied into engine RAM or streamed from disk per
// pass (direct I/O, two buffers) give the same ids as the mapped spine, at every split point and for
// every RAM budget the planner accepts. Nothing here is timed.
#include <fcntl.h>
#include <unistd.h>

#include "base/error.h"
#include "model/checkpoint.h"
#include "placement/cpu_spine.h"
#include "placement/model_byte_map.h"
#include "placement/planner.h"
#include "runtime/generate.h"
#include "runtime/k3_model.h"
#include "runtime/spine_streamer.h"
#include "support/test_support.h"
#include "synth/k3_synth.h"

using namespace deltafin;

namespace {

std::vector<int32_t> greedy(const std::string& dir, std::optional<SpinePlacement> spine,
                            SpineStreamStats* stats = nullptr, std::optional<StoreOptions> store = std::nullopt) {
  K3Model::Options o;
  o.spine = std::move(spine);
  o.store = store;
  auto m = K3Model::load(dir, std::move(o));
  K3Session s(*m);
  GenerateOptions g;
  g.max_new = 10;
  g.prefill_chunk = 3;  // prefill passes of several rows, and decode passes of one
  const std::vector<int32_t> prompt = {1, 5, 9, 42, 7, 3, 11};
  auto ids = generate(s, prompt, g).ids;
  if (stats && m->spine()) *stats = m->spine()->stats();
  return ids;
}

placement::Bandwidths rates() {
  placement::Bandwidths b;
  b.disk_gbps = 2;
  b.ram_gbps = 20;
  b.cpu_bf16_gbps = 10;
  b.cpu_mxfp4_gbps = 8;
  b.cpu_gflops = 50;
  return b;
}

}  // namespace

class TestSpineStreaming : public QObject {
  Q_OBJECT
  std::string dir_;
  K3Config cfg_;
  std::vector<int32_t> want_;

 private slots:
  void initTestCase() {
    dir_ = test::temp_dir("spine-stream");
    // The demo shape with more layers: MoE and dense, KDA and MLA, all streamed somewhere below.
    K3SynthSpec spec = synth_preset("demo");
    apply_synth_override(spec, "layers=7");
    apply_synth_override(spec, "mla_layers=3+6");
    write_k3_synth(spec, dir_);
    cfg_ = K3Config::load(dir_ + "/config.json");
    want_ = greedy(dir_, std::nullopt);
    QCOMPARE(int(want_.size()), 10);
  }

  void owned_from_the_page_cache_or_from_disk() {
    // A unit wholly in the page cache loads with buffered reads; one that is not, with direct
    // reads. Both give the mapped spine's bytes.
    SpinePlacement p;
    p.layers.assign(size_t(cfg_.layers), SpineHome::Owned);
    p.lm_head = SpineHome::Owned;
    auto ck = Checkpoint::open(dir_);
    for (uint32_t sh = 0; sh < ck->shard_names().size(); ++sh) test::read_file(ck->shard_path(sh));  // cached now
    K3Model::Options o;
    o.spine = p;
    auto cached = K3Model::load(dir_, std::move(o));
    QVERIFY(cached->spine()->owned_from_cache_bytes() > 0);
    QVERIFY(cached->spine()->owned_from_cache_bytes() <= cached->spine()->owned_bytes());
    K3Session s(*cached);
    GenerateOptions g;
    g.max_new = 10;
    g.prefill_chunk = 3;
    const std::vector<int32_t> prompt = {1, 5, 9, 42, 7, 3, 11};
    QCOMPARE(generate(s, prompt, g).ids, want_);
    // Pages dropped where the file system lets them go (not on tmpfs): the units are read again.
    cached.reset();
    for (uint32_t sh = 0; sh < ck->shard_names().size(); ++sh) {
      const int fd = ::open(ck->shard_path(sh).c_str(), O_RDONLY | O_CLOEXEC);
      QVERIFY(fd >= 0);
      ::posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
      ::close(fd);
    }
    QCOMPARE(greedy(dir_, p), want_);
  }

  void every_split_point() {
    // Layers before k in engine RAM, from k on streamed (and lm_head streamed with them).
    for (int k = 0; k <= cfg_.layers; ++k) {
      SpinePlacement p;
      for (int l = 0; l < cfg_.layers; ++l) p.layers.push_back(l < k ? SpineHome::Owned : SpineHome::Streamed);
      p.lm_head = SpineHome::Streamed;
      SpineStreamStats st;
      QCOMPARE(greedy(dir_, p, &st), want_);
      // Every pass reads the streamed units again once there are more of them than buffers.
      const int streamed = cfg_.layers - k + 1;
      if (streamed > 2)
        QVERIFY2(st.units_streamed >= uint64_t(streamed) * 10, std::to_string(st.units_streamed).c_str());
      QVERIFY(st.units_streamed > 0);
    }
  }

  void mixed_homes_and_page_cache_reads() {
    SpinePlacement p;
    for (int l = 0; l < cfg_.layers; ++l)
      p.layers.push_back(l % 3 == 0 ? SpineHome::Streamed : l % 3 == 1 ? SpineHome::Mapped : SpineHome::Owned);
    p.lm_head = SpineHome::Owned;
    QCOMPARE(greedy(dir_, p), want_);
    p.direct_io = false;
    p.use_io_uring = false;
    p.queue_depth = 3;
    p.chunk_bytes = 8192;  // many small reads, some ending inside a tensor
    QCOMPARE(greedy(dir_, p), want_);
  }

  void every_ram_budget_the_planner_accepts() {
    auto ck = Checkpoint::open(dir_);
    const auto bytes = placement::ModelByteMap::from_checkpoint(*ck, cfg_);
    placement::PlanOptions o;
    o.ram_scratch_bytes = 1 << 20;
    o.context_tokens = 64;
    placement::MachineBudget b;
    b.ram_budget = 1ull << 40;
    const auto full = placement::make_plan(bytes, b, rates(), o);
    const uint64_t lo = full.ram_minimum, hi = full.ram_minimum + bytes.spine_bytes() + bytes.all_expert_bytes();
    int streamed_plans = 0, budgets = 0;
    for (uint64_t i = 0; i <= 9; ++i) {
      b.ram_budget = lo + (hi - lo) * i / 9;
      const auto plan = placement::make_plan(bytes, b, rates(), o);
      StoreOptions so;
      placement::size_ram_tier(plan, so);
      QCOMPARE(greedy(dir_, placement::cpu_spine_placement(plan), nullptr, so), want_);
      streamed_plans += plan.streamed_units() > 0;
      ++budgets;
    }
    QVERIFY(budgets >= 10);
    QVERIFY2(streamed_plans >= 3, "the small budgets stream part of the spine");
    QVERIFY2(streamed_plans < budgets, "the large budgets hold it all");
    // Below the minimum: an error that says the minimum.
    b.ram_budget = lo - 1;
    QVERIFY_THROWS_EXCEPTION(Error, placement::make_plan(bytes, b, rates(), o));
  }
};

QTEST_GUILESS_MAIN(TestSpineStreaming)
#include "test_spine_streaming.moc"

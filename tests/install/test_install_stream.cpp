// Stream installs: setup --stream, the sparse expert cache on its own, and a
// K3 prompt end to end with experts fetched on demand, capped, cached, offline.
// Engine headers first: Qt's `slots` keyword macro must not see them.
#include "runtime/generate.h"
#include "runtime/k3_model.h"

#include <QtTest/QtTest>

#include <fcntl.h>
#include <linux/falloc.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "install/disk_space.h"
#include "install/doctor.h"
#include "install/setup.h"
#include "model/checkpoint.h"
#include "model/k3_config.h"
#include "runtime/generate.h"
#include "runtime/k3_model.h"
#include "store/expert_source_factory.h"
#include "store/stream_expert_source.h"
#include "stream/stream_layout.h"
#include "stream/stream_marker.h"
#include "stream/stream_presence.h"
#include "support/test_support.h"
#include "test_hub.h"

namespace fs = std::filesystem;
using namespace deltafin;
using namespace deltafin::test;

namespace {

struct Quiet : InstallObserver {};

std::vector<int32_t> greedy(K3Session& s, const std::vector<int32_t>& prompt) {
  GenerateOptions o;
  o.max_new = 8;
  return generate(s, prompt, o).ids;
}

// Bytes never fetched (or evicted) read as zeros: the sparse file's holes.
bool is_hole(const std::string& path, const ExpertLocation& L) {
  std::string all = read_file(path);
  for (int p = 0; p < 6; ++p)
    for (uint64_t i = 0; i < L.part_bytes[p]; ++i)
      if (all[L.part_offset[p] + i] != 0) return false;
  return true;
}

}  // namespace

class TestInstallStream : public QObject {
  Q_OBJECT
  std::unique_ptr<TestHub> hub_;
  std::string k3_;
  K3Config cfg_;
  uint64_t expert_bytes_ = 0;

  std::string stream_install(uint64_t cap) {
    const std::string root = temp_dir("stream");
    SetupOptions s;
    s.mode = SetupOptions::Mode::Stream;
    s.model_root = root;
    s.hub.base_url = hub_->url();
    s.hub.stall_timeout_s = 2;
    s.revision = "main";
    s.cache_cap = cap;
    s.space_margin = 0;
    s.tuning.backoff_initial_s = 0.01;
    Quiet q;
    run_setup(s, q, nullptr);
    return root;
  }
  StreamCacheOptions options(uint64_t cap = 0, bool offline = false) {
    StreamCacheOptions o;
    o.cap_bytes = cap;
    o.offline = offline;
    o.stall_timeout_s = 2;
    o.tuning.backoff_initial_s = 0.01;
    return o;
  }

 private slots:
  void initTestCase() {
    k3_ = fixtures_dir() + "/k3-tiny";
    cfg_ = K3Config::load(k3_ + "/config.json");
    expert_bytes_ = cfg_.expert_bytes();
    hub_ = std::make_unique<TestHub>();
    hub_->add_repo("moonshotai/Kimi-K3", "main", k3_);
    hub_->add_repo("Inferact/Kimi-K3-DSpark", "main", fixtures_dir() + "/dspark-tiny");
  }
  void init() { hub_->clear_faults(); }

  void setupFetchesSpineOnlyAndWritesTheMarker() {
    const std::string root = stream_install(40 * expert_bytes_);
    auto m = StreamMarker::find(root);
    QVERIFY(m.has_value());
    QCOMPARE(m->cap_bytes, 40 * expert_bytes_);
    QCOMPARE(m->repo, std::string("moonshotai/Kimi-K3"));
    QCOMPARE(m->shards.size(), size_t(3));
    QVERIFY(read_file(root + "/addons/kimi-k3-dspark/model.safetensors") ==
            read_file(fixtures_dir() + "/dspark-tiny/model.safetensors"));
    auto ck = Checkpoint::open(root);
    auto full = Checkpoint::open(k3_);
    for (uint32_t s = 0; s < ck->shard_names().size(); ++s) {
      const std::string local = read_file(ck->shard_path(s)), orig = read_file(full->shard_path(s));
      QCOMPARE(local.size(), orig.size());
      ShardSpine sp = shard_spine(ck->shard_header(s));
      for (const auto& [b, e] : sp.ranges) QVERIFY(local.compare(b, e - b, orig, b, e - b) == 0);
    }
    auto loc = expert_locations(*ck, cfg_.layers, cfg_.experts);
    const ExpertLocation& L = loc[1][0];
    QVERIFY(is_hole(ck->shard_path(L.shard), L));
    QCOMPARE(StreamPresence::load(StreamMarker::presence_path(root)).present_count(), size_t(0));
  }

  void cacheServesExactBytesRespectsTheCapAndWorksOffline() {
    const std::string root = stream_install(40 * expert_bytes_);
    auto ck = Checkpoint::open(root);
    auto full = Checkpoint::open(k3_);
    auto loc = expert_locations(*ck, cfg_.layers, cfg_.experts);
    const uint64_t cap = 6 * expert_bytes_;
    {
      StreamExpertSource src(*ck, loc, root, options(cap));
      std::vector<ExpertView> views;
      const std::vector<int> want = {0, 3, 5};
      src.acquire(1, want, views);
      QCOMPARE(views.size(), size_t(3));
      for (size_t i = 0; i < want.size(); ++i) {
        const ExpertLocation& L = loc[1][want[i]];
        const uint8_t* orig = full->mapping(L.shard).data();
        QVERIFY(std::memcmp(views[i].w1_packed, orig + L.part_offset[0], L.part_bytes[0]) == 0);
        QVERIFY(std::memcmp(views[i].w2_scale, orig + L.part_offset[3], L.part_bytes[3]) == 0);
        QVERIFY(std::memcmp(views[i].w3_scale, orig + L.part_offset[5], L.part_bytes[5]) == 0);
      }
      QCOMPARE(src.counters().net_fetches, uint64_t(3));
      const int fetched = hub_->requests_matching("/resolve/");
      src.acquire(1, want, views);  // cached: no network
      QCOMPARE(hub_->requests_matching("/resolve/"), fetched);
      QCOMPARE(src.cached_experts(), size_t(3));

      // Four more experts exceed the 6-expert cap: the coldest go, as holes.
      src.acquire(2, std::vector<int>{1, 2, 7, 9}, views);
      QVERIFY(src.cached_bytes() <= cap);
      QCOMPARE(src.cached_experts(), size_t(6));
      QVERIFY(is_hole(ck->shard_path(loc[1][0].shard), loc[1][0]));  // the least recently used
      QVERIFY(!is_hole(ck->shard_path(loc[2][9].shard), loc[2][9]));
      QVERIFY(src.verify().empty());

      // A request larger than the cap is refused, saying how to fix it.
      try {
        src.acquire(3, std::vector<int>{0, 1, 2, 3, 4, 5, 6}, views);
        QFAIL("a request above the cap was served");
      } catch (const Error& e) {
        QVERIFY(std::string(e.what()).find("--cache-size") != std::string::npos);
      }
      QCOMPARE(src.evict_to(2 * expert_bytes_), 4 * expert_bytes_);
      QCOMPARE(src.cached_experts(), size_t(2));
    }
    // Offline: what is cached works, what is not is named.
    StreamExpertSource off(*ck, loc, root, options(cap, true));
    std::vector<ExpertView> views;
    std::vector<int> cached;
    for (const auto& c : off.list()) {
      QCOMPARE(c.layer, 2);
      cached.push_back(c.expert);
    }
    QCOMPARE(cached.size(), size_t(2));
    off.acquire(2, cached, views);
    QCOMPARE(views.size(), size_t(2));
    try {
      off.acquire(4, std::vector<int>{11, 12}, views);
      QFAIL("an uncached expert was served offline");
    } catch (const Error& e) {
      const std::string w = e.what();
      QVERIFY(w.find("offline") != std::string::npos);
      QVERIFY(w.find("layer 4 experts 11,12") != std::string::npos);
    }
  }

  // Two sources on one install (two processes in real life: a server and `deltafin cache evict`).
  // The evictor's holes must never be served by the other as expert bytes.
  void anEvictionByAnotherSourceIsSeenNotServedAsHoles() {
    const std::string root = stream_install(40 * expert_bytes_);
    auto ck = Checkpoint::open(root);
    auto full = Checkpoint::open(k3_);
    auto loc = expert_locations(*ck, cfg_.layers, cfg_.experts);
    StreamExpertSource engine(*ck, loc, root, options());
    const std::vector<int> want = {0, 3, 5};
    auto same_as_full = [&](ExpertBatch& b) {
      for (size_t k = 0; k < want.size(); ++k) {
        auto [i, v] = b.next();
        const ExpertLocation& L = loc[1][static_cast<size_t>(want[static_cast<size_t>(i)])];
        const uint8_t* orig = full->mapping(L.shard).data();
        if (std::memcmp(v.w1_packed, orig + L.part_offset[0], L.part_bytes[0]) != 0) return false;
        if (std::memcmp(v.w1_scale, orig + L.part_offset[1], L.part_bytes[1]) != 0) return false;
        if (std::memcmp(v.w3_scale, orig + L.part_offset[5], L.part_bytes[5]) != 0) return false;
      }
      return true;
    };
    QVERIFY(same_as_full(*engine.request(1, want)));
    const uint64_t fetched = engine.counters().net_fetches;
    {
      auto evictor = open_stream_cache(root, options(0, true));
      QCOMPARE(evictor.source->evict_to(0), 3 * expert_bytes_);
    }
    QVERIFY(is_hole(ck->shard_path(loc[1][0].shard), loc[1][0]));
    QVERIFY2(same_as_full(*engine.request(1, want)), "holes were served as expert bytes");
    QCOMPARE(engine.counters().net_fetches, fetched + 3);  // fetched again, as the shared table says
  }

  // While an engine computes with experts, another source's eviction must leave them alone.
  void expertsInUseByAnotherSourceAreNotEvicted() {
    const std::string root = stream_install(40 * expert_bytes_);
    auto ck = Checkpoint::open(root);
    auto full = Checkpoint::open(k3_);
    auto loc = expert_locations(*ck, cfg_.layers, cfg_.experts);
    StreamExpertSource engine(*ck, loc, root, options());
    std::vector<ExpertView> other;
    engine.acquire(2, std::vector<int>{4}, other);  // cached and, after the next acquire, no longer in use
    const std::vector<int> want = {1, 2};
    auto batch = engine.request(1, want);
    engine.acquire(2, std::vector<int>{6}, other);
    auto evictor = open_stream_cache(root, options(0, true));
    QCOMPARE(evictor.source->evict_to(0), expert_bytes_);  // only layer 2 expert 4 was free to go
    QCOMPARE(evictor.source->cached_experts(), size_t(3));
    for (size_t k = 0; k < want.size(); ++k) {
      auto [i, v] = batch->next();
      const ExpertLocation& L = loc[1][static_cast<size_t>(want[static_cast<size_t>(i)])];
      QVERIFY2(std::memcmp(v.w1_packed, full->mapping(L.shard).data() + L.part_offset[0], L.part_bytes[0]) == 0,
               "an expert in use was evicted under the engine");
    }
    QVERIFY(!is_hole(ck->shard_path(loc[2][6].shard), loc[2][6]));
    batch.reset();
    QCOMPARE(evictor.source->evict_to(0), 2 * expert_bytes_);  // released: now they go
    QCOMPARE(evictor.source->cached_experts(), size_t(1));     // the last acquire's expert is still held
  }

  // Bytes punched behind the table's back (a tool that ignores the lock) are caught, not served.
  void aHoleTheTableCallsPresentIsFetchedAgain() {
    const std::string root = stream_install(40 * expert_bytes_);
    auto ck = Checkpoint::open(root);
    auto full = Checkpoint::open(k3_);
    auto loc = expert_locations(*ck, cfg_.layers, cfg_.experts);
    StreamExpertSource engine(*ck, loc, root, options());
    std::vector<ExpertView> views;
    engine.acquire(1, std::vector<int>{7}, views);
    engine.acquire(1, std::vector<int>{8}, views);
    const ExpertLocation& L = loc[1][7];
    const int fd = ::open(ck->shard_path(L.shard).c_str(), O_RDWR);
    QVERIFY(fd >= 0);
    for (int p = 0; p < 6; ++p)
      QCOMPARE(
          ::fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, off_t(L.part_offset[p]), off_t(L.part_bytes[p])),
          0);
    ::close(fd);
    const uint64_t fetched = engine.counters().net_fetches;
    engine.acquire(1, std::vector<int>{7}, views);
    QVERIFY2(std::memcmp(views[0].w1_scale, full->mapping(L.shard).data() + L.part_offset[1], L.part_bytes[1]) == 0,
             "a hole was served");
    QVERIFY(std::memcmp(views[0].w2_packed, full->mapping(L.shard).data() + L.part_offset[2], L.part_bytes[2]) == 0);
    QCOMPARE(engine.counters().net_fetches, fetched + 1);
  }

  // Bytes of a shard are unverified until the whole shard is present: doctor says which and how
  // many; cache verify --fetch completes each shard and checks it.
  void unverifiedShardsAreReportedAndCacheVerifyFetchChecksThem() {
    const std::string root = stream_install(200 * expert_bytes_);
    auto ck = Checkpoint::open(root);
    auto loc = expert_locations(*ck, cfg_.layers, cfg_.experts);
    {
      StreamExpertSource src(*ck, loc, root, options());
      std::vector<ExpertView> views;
      src.acquire(1, std::vector<int>{0, 1}, views);
    }
    // Expected from the checkpoint alone: shards with experts hold their spine (+ the two experts).
    std::vector<std::string> unverified;
    uint64_t bytes = 0;
    for (uint32_t s = 0; s < ck->shard_names().size(); ++s) {
      const ShardSpine sp = shard_spine(ck->shard_header(s));
      if (!sp.has_experts) continue;
      unverified.push_back(ck->shard_names()[s]);
      bytes += sp.bytes;
    }
    bytes += loc[1][0].bytes + loc[1][1].bytes;
    QVERIFY(!unverified.empty());
    auto note = [&](const DoctorReport& rep) {
      for (const auto& f : rep.findings)
        if (f.subject == "stream cache" && f.detail.find("shards") != std::string::npos)
          return f.detail + " -> " + f.fix;
      return std::string();
    };
    const std::string before = note(run_doctor(root, false));
    QVERIFY2(before.find(std::to_string(unverified.size()) + " of " + std::to_string(ck->shard_names().size()) +
                         " shards unverified") != std::string::npos,
             before.c_str());
    QVERIFY2(before.find(format_bytes_exact(bytes)) != std::string::npos, before.c_str());
    for (const auto& n : unverified) QVERIFY2(before.find(n) != std::string::npos, before.c_str());
    QVERIFY(before.find("cache verify --fetch") != std::string::npos);

    ::setenv("DELTAFIN_HUB_URL", hub_->url().c_str(), 1);
    RunResult r = run_process({bin_dir() + "/deltafin", "cache", "verify", "--fetch", "--model-root", root});
    ::unsetenv("DELTAFIN_HUB_URL");
    QVERIFY2(r.code == 0, (r.out + r.err).c_str());
    QVERIFY2(r.out.find(std::to_string(ck->shard_names().size()) + " of " + std::to_string(ck->shard_names().size()) +
                        " shards verified") != std::string::npos,
             r.out.c_str());
    for (uint32_t s = 0; s < ck->shard_names().size(); ++s)
      QVERIFY(read_file(ck->shard_path(s)) == read_file(k3_ + "/" + ck->shard_names()[s]));
    const std::string after = note(run_doctor(root, false));
    QVERIFY2(after.find("complete and verified") != std::string::npos, after.c_str());
  }

  // On K3 --fetch means every expert; --shard checks one shard: that one is completed and
  // verified, the others stay as they were.
  void cacheVerifyShardChecksOnlyThatShard() {
    const std::string root = stream_install(200 * expert_bytes_);
    auto ck = Checkpoint::open(root);
    auto loc = expert_locations(*ck, cfg_.layers, cfg_.experts);
    std::vector<uint32_t> with_experts;
    for (uint32_t s = 0; s < ck->shard_names().size(); ++s)
      if (shard_spine(ck->shard_header(s)).has_experts) with_experts.push_back(s);
    QVERIFY(with_experts.size() >= 2);
    const std::string name = ck->shard_names()[with_experts[0]];
    ::setenv("DELTAFIN_HUB_URL", hub_->url().c_str(), 1);
    RunResult r = run_process({bin_dir() + "/deltafin", "cache", "verify", "--shard", name, "--model-root", root});
    RunResult wrong = run_process(
        {bin_dir() + "/deltafin", "cache", "verify", "--shard", "model-99.safetensors", "--model-root", root});
    ::unsetenv("DELTAFIN_HUB_URL");
    QVERIFY2(r.code == 0, (r.out + r.err).c_str());
    QVERIFY2(r.out.find(name + ": complete and verified against the Hub's SHA-256") != std::string::npos,
             r.out.c_str());
    QVERIFY(read_file(ck->shard_path(with_experts[0])) == read_file(k3_ + "/" + name));
    for (size_t i = 1; i < with_experts.size(); ++i)
      QVERIFY(read_file(ck->shard_path(with_experts[i])) != read_file(k3_ + "/" + ck->shard_names()[with_experts[i]]));
    std::string note;
    for (const auto& f : run_doctor(root, false).findings)
      if (f.subject == "stream cache" && f.detail.find("shards") != std::string::npos) note = f.detail;
    const std::string want = std::to_string(with_experts.size() - 1) + " of " +
                             std::to_string(ck->shard_names().size()) + " shards unverified";
    QVERIFY2(note.find(want) != std::string::npos, note.c_str());
    QVERIFY(note.find(name) == std::string::npos);
    QVERIFY(wrong.code != 0);
    QVERIFY2(wrong.err.find("no shard named model-99.safetensors") != std::string::npos, wrong.err.c_str());
  }

  void completedShardIsHashVerified() {
    const std::string root = stream_install(200 * expert_bytes_);
    auto ck = Checkpoint::open(root);
    auto loc = expert_locations(*ck, cfg_.layers, cfg_.experts);
    StreamExpertSource src(*ck, loc, root, options());
    // Every expert of every layer: each shard becomes complete and is checked against the listing.
    std::vector<int> all(static_cast<size_t>(cfg_.experts));
    for (int e = 0; e < cfg_.experts; ++e) all[static_cast<size_t>(e)] = e;
    std::vector<ExpertView> views;
    for (int l = 0; l < cfg_.layers; ++l)
      if (!loc[static_cast<size_t>(l)].empty()) src.acquire(l, all, views);
    for (uint32_t s = 0; s < ck->shard_names().size(); ++s)
      QVERIFY(read_file(ck->shard_path(s)) == read_file(k3_ + "/" + ck->shard_names()[s]));
    QVERIFY(src.verify().empty());
  }

  void corruptExpertBytesAreCaughtWhenTheShardCompletes() {
    const std::string root = stream_install(200 * expert_bytes_);
    auto ck = Checkpoint::open(root);
    auto loc = expert_locations(*ck, cfg_.layers, cfg_.experts);
    StreamExpertSource src(*ck, loc, root, options());
    const uint32_t target = loc.back().at(0).shard;  // the shard holding the last layer's experts
    hub_->add_fault({HubFault::WrongBytes, ck->shard_names()[target], 1});
    std::vector<int> all(static_cast<size_t>(cfg_.experts));
    for (int e = 0; e < cfg_.experts; ++e) all[static_cast<size_t>(e)] = e;
    std::vector<ExpertView> views;
    std::string error;
    for (int l = 0; l < cfg_.layers && error.empty(); ++l) {
      if (loc[static_cast<size_t>(l)].empty() || loc[static_cast<size_t>(l)][0].shard != target) continue;
      try {
        src.acquire(l, all, views);
      } catch (const Error& e) {
        error = e.what();
      }
    }
    QVERIFY2(error.find("does not match its SHA-256") != std::string::npos || error.find("NaN") != std::string::npos,
             error.c_str());
    // The damaged shard's cached experts were dropped: nothing wrong is left to serve.
    for (const auto& c : src.list())
      QVERIFY(loc[static_cast<size_t>(c.layer)][static_cast<size_t>(c.expert)].shard != target);
  }

  void fullSetupReplacesAStreamInstall() {
    const std::string root = stream_install(40 * expert_bytes_);
    SetupOptions s;
    s.model_root = root;
    s.hub.base_url = hub_->url();
    s.revision = "main";
    s.space_margin = 0;
    Quiet q;
    run_setup(s, q, nullptr);
    QVERIFY(!StreamMarker::find(root));
    for (const auto& e : fs::directory_iterator(k3_))
      QVERIFY2(read_file(root + "/" + e.path().filename().string()) == read_file(e.path().string()), e.path().c_str());
    auto m = K3Model::load(root);
    QVERIFY(m->experts().describe().find("stream") == std::string::npos);
  }

  void unfinishedStreamInstallIsRefusedNotReadAsWeights() {
    const std::string root = stream_install(40 * expert_bytes_);
    StreamPresence p = StreamPresence::load(StreamMarker::presence_path(root));
    p.set_spine_done(0, false);  // as if setup had been killed before this shard's spine landed
    p.save(StreamMarker::presence_path(root));
    try {
      K3Model::load(root);
      QFAIL("an unfinished stream install loaded");
    } catch (const Error& e) {
      QVERIFY(std::string(e.what()).find("setup --stream again") != std::string::npos);
    }
  }

  void promptEndToEndFetchesCachesAndRunsOffline() {
    const std::vector<int32_t> prompt = {768, 84, 104, 101, 32, 99, 97, 112, 105, 116, 97, 108};
    std::vector<int32_t> reference;
    {
      auto m = K3Model::load(k3_);
      K3Session s(*m);
      reference = greedy(s, prompt);
    }
    // A cap that holds every expert: the second run and the offline run fetch nothing.
    const uint64_t all = uint64_t(cfg_.moe_layers()) * cfg_.experts * expert_bytes_;
    const std::string root = stream_install(all);
    {
      auto m = K3Model::load(root);
      QVERIFY(m->experts().describe().find("stream cache") != std::string::npos);
      K3Session s(*m);
      QCOMPARE(greedy(s, prompt), reference);
      QVERIFY(m->experts().counters().net_fetches > 0);
    }
    const int after_first = hub_->requests_matching("/resolve/");
    {
      auto m = K3Model::load(root);
      K3Session s(*m);
      QCOMPARE(greedy(s, prompt), reference);
      QCOMPARE(m->experts().counters().net_fetches, uint64_t(0));
      QCOMPARE(hub_->requests_matching("/resolve/"), after_first);
    }
    ::setenv("DELTAFIN_OFFLINE", "1", 1);
    {
      auto m = K3Model::load(root);
      K3Session s(*m);
      QCOMPARE(greedy(s, prompt), reference);
    }
    ::unsetenv("DELTAFIN_OFFLINE");

    // A small cap: experts are evicted and fetched again, the output does not change, the cap holds.
    const uint64_t small = uint64_t(cfg_.experts) * expert_bytes_ + 4 * expert_bytes_;
    const std::string tight = stream_install(small);
    {
      auto m = K3Model::load(tight);
      K3Session s(*m);
      QCOMPARE(greedy(s, prompt), reference);
      auto* src = dynamic_cast<StreamExpertSource*>(&m->experts());
      QVERIFY(src);
      QVERIFY(src->cached_bytes() <= small);
    }
    // Offline with most experts evicted: a clear error naming what is missing.
    ::setenv("DELTAFIN_OFFLINE", "1", 1);
    try {
      auto m = K3Model::load(tight);
      K3Session s(*m);
      greedy(s, prompt);
      QFAIL("an offline run with evicted experts succeeded");
    } catch (const Error& e) {
      const std::string w = e.what();
      QVERIFY(w.find("offline") != std::string::npos);
      QVERIFY(w.find("layer ") != std::string::npos);
    }
    ::unsetenv("DELTAFIN_OFFLINE");
  }
};

QTEST_GUILESS_MAIN(TestInstallStream)
#include "test_install_stream.moc"

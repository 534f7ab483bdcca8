#include "store/tiered_expert_source.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <fstream>

#include "base/error.h"
#include "model/checkpoint.h"
#include "store/mmap_expert_source.h"

namespace deltafin {

namespace {
constexpr uint64_t kAlign = 4096;
uint64_t align_down(uint64_t x) { return x & ~(kAlign - 1); }
uint64_t align_up(uint64_t x) { return (x + kAlign - 1) & ~(kAlign - 1); }
using Clock = std::chrono::steady_clock;
double since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

struct Region {
  uint64_t offset, bytes;  // the bytes wanted
};
std::vector<Region> regions_of(const ExpertLocation& L) {
  if (L.contiguous) return {{L.offset, L.bytes}};
  std::vector<Region> r;
  for (int k = 0; k < 6; ++k) r.push_back({L.part_offset[k], L.part_bytes[k]});
  return r;
}
uint64_t superset_bytes(const ExpertLocation& L) {
  uint64_t n = 0;
  for (const auto& r : regions_of(L)) n += align_up(r.offset + r.bytes) - align_down(r.offset);
  return n;
}
}  // namespace

const char* policy_name(EvictionPolicy p) {
  switch (p) {
    case EvictionPolicy::Lru: return "lru";
    case EvictionPolicy::LfuDecay: return "lfu";
    case EvictionPolicy::HeatSeeded: return "heat";
  }
  return "?";
}

EvictionPolicy parse_policy(const std::string& s) {
  if (s == "lru") return EvictionPolicy::Lru;
  if (s == "lfu") return EvictionPolicy::LfuDecay;
  if (s == "heat") return EvictionPolicy::HeatSeeded;
  throw Error("unknown cache policy '" + s + "'", "choose lru, lfu (frequency with decay) or heat (lfu seeded from the saved heat map)");
}

uint64_t default_ram_budget(uint64_t slot_bytes) {
  std::ifstream f("/proc/meminfo");
  std::string key, unit;
  uint64_t kb = 0, avail = 0;
  while (f >> key >> kb >> unit)
    if (key == "MemAvailable:") avail = kb * 1024;
  const uint64_t margin = std::max<uint64_t>(2ull << 30, avail / 10);
  return avail > margin + 2 * slot_bytes ? avail - margin : 2 * slot_bytes;
}

TieredExpertSource::TieredExpertSource(const Checkpoint& ck, std::vector<std::vector<ExpertLocation>> locations, StoreOptions opts)
    : ck_(ck), loc_(std::move(locations)), opts_(opts) {
  for (const auto& row : loc_) {
    experts_ = std::max(experts_, static_cast<int>(row.size()));
    for (const auto& L : row) slot_bytes_ = std::max(slot_bytes_, superset_bytes(L));
  }
  if (slot_bytes_ == 0) throw Error("this checkpoint has no routed experts to cache");
  slot_bytes_ = align_up(slot_bytes_);
  const uint64_t budget = opts_.ram_budget ? opts_.ram_budget : default_ram_budget(slot_bytes_);
  uint64_t nslots = budget / slot_bytes_;
  if (opts_.max_slots) nslots = std::min<uint64_t>(nslots, opts_.max_slots);
  if (nslots < 2)
    throw Error("expert cache budget of " + std::to_string(budget >> 20) + " MiB holds fewer than two experts (" +
                    std::to_string(slot_bytes_ >> 20) + " MiB each)",
                "raise --ram-cache");
  arena_bytes_ = nslots * slot_bytes_;
  void* p = ::mmap(nullptr, arena_bytes_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) throw Error("cannot reserve " + std::to_string(arena_bytes_ >> 20) + " MiB for the expert cache", "lower --ram-cache");
  arena_ = static_cast<uint8_t*>(p);
  if (opts_.lock_memory) locked_ = ::mlock(arena_, arena_bytes_) == 0;
  slots_.resize(nslots);

  direct_ = opts_.direct_io;
  for (uint32_t s = 0; s < ck_.shard_names().size(); ++s) {
    const std::string path = ck_.shard_path(s);
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | (direct_ ? O_DIRECT : 0));
    if (fd < 0 && direct_ && errno == EINVAL) {
      // The file system cannot bypass the page cache (tmpfs, some overlays).
      direct_ = false;
      io_note_ = "O_DIRECT unsupported here: page cache used";
      fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    }
    if (fd < 0) throw Error("cannot open " + path + ": " + std::strerror(errno));
    fds_.push_back(fd);
  }
  if (opts_.use_io_uring) {
    std::string why;
    engine_ = make_io_uring_engine(opts_.queue_depth, &why);
    if (!engine_) io_note_ += (io_note_.empty() ? "" : "; ") + why + ", using a pread pool";
  }
  if (!engine_) engine_ = make_pread_engine(opts_.queue_depth);
  heat_ = HeatMap(static_cast<int>(loc_.size()), experts_);
  if (!opts_.heat_path.empty()) heat_.load(opts_.heat_path);
  io_ = std::thread([this] { io_loop(); });
}

TieredExpertSource::~TieredExpertSource() {
  {
    std::lock_guard<std::mutex> lk(mu_);
    stop_ = true;
    demand_q_.clear();
    prefetch_q_.clear();
  }
  io_cv_.notify_all();
  io_.join();
  try {
    save_heat();
  } catch (const Error&) {
  }
  for (int fd : fds_) ::close(fd);
  if (arena_) ::munmap(arena_, arena_bytes_);
}

void TieredExpertSource::save_heat() const {
  if (opts_.heat_path.empty()) return;
  std::lock_guard<std::mutex> lk(mu_);
  heat_.save(opts_.heat_path);
}

std::string TieredExpertSource::describe() const {
  std::string s = "RAM cache " + std::to_string(slots_.size()) + " x " + std::to_string(slot_bytes_ >> 20) + " MiB (" +
                  policy_name(opts_.policy) + (locked_ ? ", locked" : "") + ") over " + engine_->name() + " QD " +
                  std::to_string(engine_->depth()) + (direct_ ? ", O_DIRECT" : ", page cache");
  if (!io_note_.empty()) s += "; " + io_note_;
  return s;
}

double TieredExpertSource::decayed_score_locked(const Slot& s) const {
  return s.score * std::exp2(-(token_clock_ - s.score_tick) / opts_.lfu_half_life_tokens);
}

void TieredExpertSource::touch_locked(Slot& s) {
  s.last_use = ++tick_;
  s.score = decayed_score_locked(s) + 1.0;
  s.score_tick = token_clock_;
}

void TieredExpertSource::evict_locked(int i) {
  Slot& s = slots_[i];
  if (s.state == Slot::Empty) return;
  if (s.prefetched) ++c_.prefetch_wasted;
  if (s.state == Slot::Ready) ++c_.evictions;
  index_.erase(key(s.layer, s.expert));
  s = Slot{};
}

int TieredExpertSource::find_victim_locked() {
  int best = -1;
  for (int i = 0; i < static_cast<int>(slots_.size()); ++i) {
    const Slot& s = slots_[i];
    if (s.pins > 0) continue;
    if (s.state == Slot::Empty) return i;
    if (s.state != Slot::Ready && s.state != Slot::Failed) continue;
    if (best < 0) {
      best = i;
      continue;
    }
    const Slot& b = slots_[best];
    bool better;
    if (opts_.policy == EvictionPolicy::Lru) better = s.last_use < b.last_use;
    else {
      const double ds = decayed_score_locked(s), db = decayed_score_locked(b);
      better = ds != db ? ds < db : s.last_use < b.last_use;
    }
    if (better) best = i;
  }
  return best;
}

void TieredExpertSource::start_load_locked(int i, int layer, int expert, bool demand) {
  evict_locked(i);
  Slot& s = slots_[i];
  const ExpertLocation& L = loc_.at(layer).at(expert);
  s.layer = layer;
  s.expert = expert;
  s.state = Slot::Queued;
  s.prefetched = !demand;
  s.score = 0;
  s.score_tick = token_clock_;
  if (opts_.policy == EvictionPolicy::HeatSeeded) {
    const double mean = double(std::max<uint64_t>(1, heat_.total())) / (double(heat_.layers()) * heat_.experts());
    s.score = heat_.count(layer, expert) / mean;
  }
  s.last_use = ++tick_;
  index_[key(layer, expert)] = i;

  uint8_t* base = arena_ + uint64_t(i) * slot_bytes_;
  uint64_t at = 0;
  const uint8_t* part_ptr[6];
  int chunks = 0;
  const uint64_t file_size = ck_.shard_header(L.shard).file_size;
  for (const auto& r : regions_of(L)) {
    const uint64_t a0 = align_down(r.offset), a1 = align_up(r.offset + r.bytes);
    for (int k = 0; k < 6; ++k)
      if (L.part_offset[k] >= r.offset && L.part_offset[k] < r.offset + r.bytes) part_ptr[k] = base + at + (L.part_offset[k] - a0);
    for (uint64_t o = a0; o < a1; o += opts_.chunk_bytes) {
      Chunk c;
      c.slot = i;
      c.job.fd = fds_[L.shard];
      c.job.offset = o;
      c.job.bytes = std::min(opts_.chunk_bytes, a1 - o);
      c.job.dst = base + at + (o - a0);
      c.job.tag = uint64_t(i);
      c.need = std::min<uint64_t>(c.job.bytes, file_size > o ? file_size - o : 0);
      (demand ? demand_q_ : prefetch_q_).push_back(c);
      ++chunks;
    }
    at += a1 - a0;
  }
  s.chunks_left = chunks;
  s.view = ExpertView{part_ptr[0], part_ptr[1], part_ptr[2], part_ptr[3], part_ptr[4], part_ptr[5]};
  if (demand) {
    ++c_.disk_reads;
    c_.bytes_read += L.bytes;
  } else {
    ++c_.prefetch_issued;
    c_.bytes_read += L.bytes;
  }
}

void TieredExpertSource::promote_locked(int i) {
  std::deque<Chunk> keep;
  for (auto& c : prefetch_q_) (c.slot == i ? demand_q_ : keep).push_back(c);
  prefetch_q_.swap(keep);
}

void TieredExpertSource::cancel_stale_prefetch_locked(int layer, std::span<const int> demand) {
  std::vector<char> cancel(slots_.size(), 0);
  bool any = false;
  for (int i = 0; i < static_cast<int>(slots_.size()); ++i) {
    const Slot& s = slots_[i];
    if (s.state != Slot::Queued || !s.prefetched || s.layer != layer || s.pins) continue;
    if (std::find(demand.begin(), demand.end(), s.expert) != demand.end()) continue;
    cancel[i] = any = 1;
  }
  if (!any) return;
  std::deque<Chunk> keep;
  for (auto& c : prefetch_q_)
    if (!cancel[c.slot]) keep.push_back(c);
  prefetch_q_.swap(keep);
  for (int i = 0; i < static_cast<int>(slots_.size()); ++i)
    if (cancel[i]) {
      ++c_.prefetch_cancelled;
      slots_[i].prefetched = false;  // cancelled, not wasted: no bytes were read
      evict_locked(i);
    }
}

void TieredExpertSource::io_loop() {
  std::unique_lock<std::mutex> lk(mu_);
  std::unordered_map<uint64_t, Chunk> flying;
  uint64_t serial = 0;
  for (;;) {
    io_cv_.wait(lk, [&] { return stop_ || in_flight_ > 0 || (!paused_ && (!demand_q_.empty() || !prefetch_q_.empty())); });
    if (stop_ && in_flight_ == 0) return;
    while (!stop_ && !paused_ && in_flight_ < engine_->depth() && (!demand_q_.empty() || !prefetch_q_.empty())) {
      auto& q = !demand_q_.empty() ? demand_q_ : prefetch_q_;
      Chunk c = q.front();
      q.pop_front();
      Slot& s = slots_[c.slot];
      if (s.state == Slot::Queued) s.state = Slot::Loading;
      c.job.tag = ++serial;
      flying.emplace(c.job.tag, c);
      engine_->submit(c.job);
      ++in_flight_;
    }
    if (in_flight_ == 0) continue;
    lk.unlock();
    const auto t0 = Clock::now();
    ReadDone d = engine_->wait();
    const double waited = since(t0);
    lk.lock();
    c_.read_seconds += waited;
    --in_flight_;
    auto it = flying.find(d.tag);
    if (it == flying.end()) continue;
    const Chunk c = it->second;
    flying.erase(it);
    Slot& s = slots_[c.slot];
    if (d.result < 0) s.error = std::string("read failed: ") + std::strerror(static_cast<int>(-d.result));
    else if (static_cast<uint64_t>(d.result) < c.need)
      s.error = "short read (" + std::to_string(d.result) + " of " + std::to_string(c.need) + " bytes): shard truncated?";
    if (--s.chunks_left == 0) {
      if (s.error.empty()) {
        const ExpertLocation& L = loc_[s.layer][s.expert];
        try {
          validate_expert_scales(s.view, L.part_bytes[1], L.part_bytes[3], s.layer, s.expert);
        } catch (const Error& e) {
          s.error = e.what();
        }
      }
      s.state = s.error.empty() ? Slot::Ready : Slot::Failed;
      ready_cv_.notify_all();
    }
  }
}

class TieredBatch : public ExpertBatch {
 public:
  TieredBatch(TieredExpertSource& src, int layer, std::vector<int> experts, std::vector<int> slots)
      : src_(src), layer_(layer), experts_(std::move(experts)), slot_(std::move(slots)), returned_(experts_.size(), 0) {}
  ~TieredBatch() override {
    std::lock_guard<std::mutex> lk(src_.mu_);
    for (size_t i = 0; i < experts_.size(); ++i)
      if (slot_[i] >= 0 && (!returned_[i] || static_cast<int>(i) == prev_)) --src_.slots_[slot_[i]].pins;
  }

  std::pair<int, ExpertView> next() override {
    std::unique_lock<std::mutex> lk(src_.mu_);
    if (prev_ >= 0) {
      --src_.slots_[slot_[prev_]].pins;
      prev_ = -1;
    }
    const auto t0 = Clock::now();
    bool waited = false;
    for (;;) {
      assign_pending_locked();
      for (size_t i = 0; i < experts_.size(); ++i) {
        if (returned_[i] || slot_[i] < 0) continue;
        const auto& s = src_.slots_[slot_[i]];
        if (s.state == TieredExpertSource::Slot::Failed)
          throw Error("layer " + std::to_string(layer_) + " expert " + std::to_string(experts_[i]) + ": " + s.error,
                      "check the disk and the shard files (deltafin doctor)");
        if (s.state != TieredExpertSource::Slot::Ready) continue;
        returned_[i] = 1;
        prev_ = static_cast<int>(i);
        if (waited) src_.c_.wait_seconds += since(t0);
        return {static_cast<int>(i), s.view};
      }
      bool left = false;
      for (size_t i = 0; i < experts_.size(); ++i) left |= !returned_[i];
      if (!left) throw Error("ExpertBatch::next() called more often than experts requested");
      waited = true;
      src_.ready_cv_.wait(lk);
    }
  }

 private:
  // Experts that found no free slot at request time get one as earlier experts are released.
  void assign_pending_locked() {
    bool started = false;
    for (size_t i = 0; i < experts_.size(); ++i) {
      if (slot_[i] >= 0) continue;
      const int v = src_.find_victim_locked();
      if (v < 0) break;
      src_.start_load_locked(v, layer_, experts_[i], true);
      src_.slots_[v].pins = 1;
      src_.touch_locked(src_.slots_[v]);
      slot_[i] = v;
      started = true;
    }
    if (started) src_.io_cv_.notify_one();
  }

  TieredExpertSource& src_;
  int layer_;
  std::vector<int> experts_, slot_;
  std::vector<char> returned_;
  int prev_ = -1;
};

std::unique_ptr<ExpertBatch> TieredExpertSource::request(int layer, std::span<const int> experts) {
  std::lock_guard<std::mutex> lk(mu_);
  cancel_stale_prefetch_locked(layer, experts);
  std::vector<int> slot(experts.size(), -1);
  // Pin everything already present first, so loading misses cannot evict a hit.
  for (size_t i = 0; i < experts.size(); ++i) {
    ++c_.requests;
    heat_.add(layer, experts[i]);
    auto it = index_.find(key(layer, experts[i]));
    if (it == index_.end()) continue;
    Slot& s = slots_[it->second];
    ++s.pins;
    slot[i] = it->second;
    if (s.state == Slot::Ready) ++c_.ram_hits;
    if (s.state == Slot::Queued || s.state == Slot::Loading) promote_locked(it->second);
    if (s.prefetched) {
      ++c_.prefetch_used;
      s.prefetched = false;
    }
    touch_locked(s);
  }
  for (size_t i = 0; i < experts.size(); ++i) {
    if (slot[i] >= 0) continue;
    const int v = find_victim_locked();
    if (v < 0) break;  // the rest are assigned as the compute releases experts
    start_load_locked(v, layer, experts[i], true);
    slots_[v].pins = 1;
    touch_locked(slots_[v]);
    slot[i] = v;
  }
  io_cv_.notify_one();
  return std::make_unique<TieredBatch>(*this, layer, std::vector<int>(experts.begin(), experts.end()), std::move(slot));
}

void TieredExpertSource::prefetch(int layer, std::span<const int> experts) {
  std::lock_guard<std::mutex> lk(mu_);
  for (int e : experts) {
    if (index_.count(key(layer, e))) continue;
    const int v = find_victim_locked();
    if (v < 0) break;
    start_load_locked(v, layer, e, false);
  }
  io_cv_.notify_one();
}

void TieredExpertSource::pause_io(bool paused) {
  {
    std::lock_guard<std::mutex> lk(mu_);
    paused_ = paused;
  }
  io_cv_.notify_one();
}

void TieredExpertSource::end_token() {
  std::lock_guard<std::mutex> lk(mu_);
  token_clock_ += 1;
}

ExpertCounters TieredExpertSource::counters() const {
  std::lock_guard<std::mutex> lk(mu_);
  return c_;
}

bool TieredExpertSource::cached(int layer, int expert) const {
  std::lock_guard<std::mutex> lk(mu_);
  auto it = index_.find(key(layer, expert));
  return it != index_.end() && slots_[it->second].state == Slot::Ready;
}

size_t TieredExpertSource::warm_from_heat(size_t limit) {
  std::vector<std::pair<int, int>> hot;
  {
    std::lock_guard<std::mutex> lk(mu_);
    hot = heat_.hottest();
  }
  size_t n = 0;
  {
    std::lock_guard<std::mutex> lk(mu_);
    for (auto [l, e] : hot) {
      if (n >= limit || n >= slots_.size()) break;
      if (index_.count(key(l, e))) continue;
      int v = -1;
      for (int i = 0; i < static_cast<int>(slots_.size()); ++i)
        if (slots_[i].state == Slot::Empty) {
          v = i;
          break;
        }
      if (v < 0) break;
      start_load_locked(v, l, e, true);
      --c_.disk_reads;  // a warm-up read, not a demand miss
      ++n;
    }
    io_cv_.notify_one();
  }
  std::unique_lock<std::mutex> lk(mu_);
  ready_cv_.wait(lk, [&] {
    for (const auto& s : slots_)
      if (s.state == Slot::Queued || s.state == Slot::Loading) return false;
    return true;
  });
  return n;
}

}  // namespace deltafin

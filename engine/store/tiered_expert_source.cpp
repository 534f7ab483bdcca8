#include "store/tiered_expert_source.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <fstream>
#include <map>
#include <random>
#include <tuple>

#include "base/error.h"
#include "model/checkpoint.h"
#include "store/mmap_expert_source.h"
#include "store/queue_depth_probe.h"

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
    case EvictionPolicy::Lru:
      return "lru";
    case EvictionPolicy::LfuDecay:
      return "lfu";
    case EvictionPolicy::HeatSeeded:
      return "heat";
  }
  return "?";
}

EvictionPolicy parse_policy(const std::string& s) {
  if (s == "lru") return EvictionPolicy::Lru;
  if (s == "lfu") return EvictionPolicy::LfuDecay;
  if (s == "heat") return EvictionPolicy::HeatSeeded;
  throw Error("unknown cache policy '" + s + "'",
              "choose lru, lfu (frequency with decay) or heat (lfu seeded from the saved heat map)");
}

int best_queue_depth(const Checkpoint& ck, const std::vector<std::vector<ExpertLocation>>& locations, bool direct_io,
                     bool use_io_uring, uint64_t chunk_bytes, std::string* how) {
  // Once per device and process: a bench loads the model many times over the same disk.
  static std::mutex mu;
  static std::map<std::tuple<dev_t, bool, bool, uint64_t>, QueueDepthProbe> known;
  struct stat st {};
  const dev_t dev = ::stat(ck.shard_path(0).c_str(), &st) == 0 ? st.st_dev : 0;
  const auto key = std::make_tuple(dev, direct_io, use_io_uring, chunk_bytes);
  std::lock_guard<std::mutex> lk(mu);
  auto it = known.find(key);
  if (it == known.end()) {
    std::vector<int> fds;
    for (uint32_t s = 0; s < ck.shard_names().size(); ++s) {
      int fd = ::open(ck.shard_path(s).c_str(), O_RDONLY | O_CLOEXEC | (direct_io ? O_DIRECT : 0));
      if (fd < 0 && direct_io) fd = ::open(ck.shard_path(s).c_str(), O_RDONLY | O_CLOEXEC);
      fds.push_back(fd);
    }
    // Chunks of random experts, a fresh draw per process so a cache in front of the disk has
    // not seen them; whole aligned chunks inside each expert's span.
    std::vector<ReadJob> chunks;
    for (const auto& row : locations)
      for (const auto& L : row) {
        if (fds[L.shard] < 0) continue;
        const uint64_t a0 = align_down(L.offset), a1 = align_down(L.offset + L.bytes);
        for (uint64_t o = a0; o + chunk_bytes <= a1; o += chunk_bytes)
          chunks.push_back({fds[L.shard], o, chunk_bytes, nullptr, 0});
      }
    std::mt19937_64 rng{std::random_device{}()};
    std::shuffle(chunks.begin(), chunks.end(), rng);
    QueueDepthProbe p = probe_queue_depth(chunks, chunk_bytes, use_io_uring);
    for (int fd : fds)
      if (fd >= 0) ::close(fd);
    it = known.emplace(key, p).first;
  }
  if (how) *how = it->second.gbps.empty() ? "too small to probe" : it->second.describe();
  return it->second.best;
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

TieredExpertSource::TieredExpertSource(const Checkpoint& ck, std::vector<std::vector<ExpertLocation>> locations,
                                       StoreOptions opts)
    : ck_(ck), loc_(std::move(locations)), opts_(opts) {
  if (opts_.guess_bytes_per_layer >= 0) guess_budget_left_ = double(opts_.guess_bytes_per_layer);
  uint64_t total_experts = 0;
  for (const auto& row : loc_) {
    experts_ = std::max(experts_, static_cast<int>(row.size()));
    total_experts += row.size();
    for (const auto& L : row) slot_bytes_ = std::max(slot_bytes_, superset_bytes(L));
  }
  if (slot_bytes_ == 0) throw Error("this checkpoint has no routed experts to cache");
  slot_bytes_ = align_up(slot_bytes_);
  const uint64_t budget = opts_.ram_budget ? opts_.ram_budget : default_ram_budget(slot_bytes_);
  uint64_t nslots = budget / slot_bytes_;
  if (opts_.max_slots) nslots = std::min<uint64_t>(nslots, opts_.max_slots);
  // More slots than the model has experts would never be used, and a budget sized from free memory
  // would otherwise take most of the machine for a small model.
  nslots = std::min(nslots, total_experts);
  n_cache_ = static_cast<int>(std::min<uint64_t>(nslots, 1u << 30));
  n_stream_ = std::max(0, opts_.stream_slots);
  nslots = uint64_t(n_cache_) + n_stream_;
  if (nslots < 2)
    throw Error("expert cache budget of " + std::to_string(budget >> 20) + " MiB holds fewer than two experts (" +
                    std::to_string(slot_bytes_ >> 20) + " MiB each)",
                "raise --ram-cache");
  arena_bytes_ = nslots * slot_bytes_;
  void* p = ::mmap(nullptr, arena_bytes_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED)
    throw Error("cannot reserve " + std::to_string(arena_bytes_ >> 20) + " MiB for the expert cache",
                "lower --ram-cache");
  arena_ = static_cast<uint8_t*>(p);
  // Huge pages where the system offers them on request (transparent_hugepage "madvise" or "always"):
  // an expert is read end to end (17.5 MB for K3), and with 4 KB pages the TLB misses cost more than
  // the reads on virtualised machines (docs/STREAMING.md, "Huge pages").
  ::madvise(arena_, arena_bytes_, MADV_HUGEPAGE);
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
  int depth = opts_.queue_depth;
  if (depth <= 0) {
    std::string how;
    depth = best_queue_depth(ck_, loc_, direct_, opts_.use_io_uring, opts_.chunk_bytes, &how);
    io_note_ += (io_note_.empty() ? "" : "; ") + std::string("queue depth probed: ") + how;
  }
  if (opts_.use_io_uring) {
    std::string why;
    engine_ = make_io_uring_engine(depth, &why);
    if (!engine_) io_note_ += (io_note_.empty() ? "" : "; ") + why + ", using a pread pool";
  }
  if (!engine_) engine_ = make_pread_engine(depth);
  heat_ = HeatMap(static_cast<int>(loc_.size()), experts_);
  interval_s_.assign(loc_.size(), 0.0);
  if (!opts_.heat_path.empty()) heat_.load(opts_.heat_path);
  score_.assign(loc_.size() * size_t(experts_), 0.0);
  score_tick_.assign(score_.size(), 0.0);
  if (opts_.policy == EvictionPolicy::HeatSeeded) {
    // The saved heat as a head start, in units of the mean expert's demand.
    const double mean = double(std::max<uint64_t>(1, heat_.total())) / (double(heat_.layers()) * heat_.experts());
    for (int l = 0; l < heat_.layers(); ++l)
      for (int e = 0; e < heat_.experts(); ++e) score_[key(l, e)] = heat_.count(l, e) / mean;
  }
  io_ = std::thread([this] { io_loop(); });
}

TieredExpertSource::~TieredExpertSource() {
  {
    std::lock_guard<std::mutex> lk(mu_);
    stop_ = true;
    demand_q_.clear();
    prefetch_q_.clear();
    pending_.clear();
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
  // Slots of a small model are a few KiB; shown in MiB they would read "0 MiB".
  const std::string slot = slot_bytes_ >= (1u << 20) ? std::to_string(slot_bytes_ >> 20) + " MiB"
                                                     : std::to_string((slot_bytes_ + 1023) >> 10) + " KiB";
  std::string s = "RAM cache " + std::to_string(n_cache_) + " x " + slot + " (" + policy_name(opts_.policy) +
                  (locked_ ? ", locked" : "") + ") + streaming buffer " + std::to_string(n_stream_) + " slots over " +
                  engine_->name() + " QD " + std::to_string(engine_->depth()) +
                  (direct_ ? ", O_DIRECT" : ", page cache");
  if (!io_note_.empty()) s += "; " + io_note_;
  return s;
}

double TieredExpertSource::decayed_score_locked(const Slot& s) const {
  const uint64_t k = key(s.layer, s.expert);
  return score_[k] * std::exp2(-(token_clock_ - score_tick_[k]) / opts_.lfu_half_life_tokens);
}

void TieredExpertSource::touch_locked(Slot& s, bool count) {
  s.last_use = ++tick_;
  if (!count) return;  // a guess fetched ahead (request_ahead): not a use until its layer asks
  const uint64_t k = key(s.layer, s.expert);
  score_[k] = decayed_score_locked(s) + 1.0;
  score_tick_[k] = token_clock_;
}

void TieredExpertSource::evict_locked(int i) {
  Slot& s = slots_[i];
  if (s.state == Slot::Empty) return;
  if (s.prefetched) ++c_.prefetch_wasted;
  if (s.kept) --kept_;
  if (s.state == Slot::Ready) ++c_.evictions;
  // A slot that stopped reading has left the index, which may name another slot for its key by now.
  if (const auto it = index_.find(key(s.layer, s.expert)); it != index_.end() && it->second == i) index_.erase(it);
  s = Slot{};
}

int TieredExpertSource::find_victim_locked() {
  int best = -1;
  for (int i = 0; i < static_cast<int>(slots_.size()); ++i) {
    const Slot& s = slots_[i];
    if (s.pins > 0 || !s.kept) continue;
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

int TieredExpertSource::stream_target_locked(bool demand) {
  int transient = -1, guess = -1;
  for (int i = 0; i < static_cast<int>(slots_.size()); ++i) {
    const Slot& s = slots_[i];
    if (s.kept || s.pins > 0) continue;
    if (s.state == Slot::Empty) return i;
    if (s.prefetched) {
      // An unread or unused guess: only a demand read takes its slot, the farthest layer's first.
      if (s.state != Slot::Loading && (guess < 0 || s.layer > slots_[guess].layer)) guess = i;
      continue;
    }
    if (s.state == Slot::Queued || s.state == Slot::Loading) continue;
    // A copy no one holds: an expert the compute released without the cache keeping it, or a cache
    // slot's bytes after the policy gave its place to another. The oldest goes first.
    if (transient < 0 || s.last_use < slots_[transient].last_use) transient = i;
  }
  if (transient >= 0) return transient;
  if (!demand) return -1;
  if (guess >= 0) {
    if (slots_[guess].state == Slot::Queued) cancel_guess_locked(guess);
    return guess;
  }
  return find_victim_locked();
}

uint64_t TieredExpertSource::drop_queued_chunks_locked(int i, int* dropped) {
  std::deque<Chunk> keep;
  uint64_t bytes = 0;
  int n = 0;
  for (auto& c : prefetch_q_)
    if (c.slot == i) {
      ++n;
      bytes += c.need;
    } else {
      keep.push_back(c);
    }
  prefetch_q_.swap(keep);
  if (dropped) *dropped = n;
  return bytes;
}

void TieredExpertSource::cancel_guess_locked(int i) {
  drop_queued_chunks_locked(i);
  ++c_.prefetch_cancelled;
  // Queued only: none of its bytes were read, and a guess for a layer still to come gives its bytes
  // back to this layer's budget (a refined guess replacing it may spend them).
  const uint64_t bytes = loc_[slots_[i].layer][slots_[i].expert].bytes;
  c_.bytes_read -= bytes;
  if (slots_[i].layer > cur_layer_) guess_budget_left_ += double(bytes);
  slots_[i].prefetched = false;  // cancelled, not wasted: no bytes were read
  evict_locked(i);
}

void TieredExpertSource::stop_reading_locked(int i) {
  Slot& s = slots_[i];
  int dropped = 0;
  const uint64_t unread = drop_queued_chunks_locked(i, &dropped);
  if (dropped == 0) return;  // every chunk is read or in flight: it lands as a streaming slot's bytes
  // Bytes never read are not counted as read (start_load counted the expert's bytes).
  c_.bytes_read -= std::min<uint64_t>(unread, loc_[s.layer][s.expert].bytes);
  index_.erase(key(s.layer, s.expert));  // a later request reads it afresh into another slot
  s.chunks_left -= dropped;
  s.abandoned = true;
  if (s.chunks_left == 0) evict_locked(i);
}

void TieredExpertSource::release_locked(int i) {
  Slot& s = slots_[i];
  if (s.pins > 0) return;
  // The cache policy decides whether a released expert stays: keeping it swaps roles with the
  // policy's victim, whose bytes remain usable until the streaming buffer reuses its slot. Under
  // the count-based policies it must outscore the victim: an expert of equal count stays where it
  // is, so a pass that cycles through more experts than the cache holds keeps the cache's share
  // (swapping on ties evicted each expert just before its next use, and nothing was ever hit).
  if (!s.kept && s.state == Slot::Ready && !s.prefetched && n_cache_ > 0) {
    if (kept_ < n_cache_) {
      s.kept = true;
      ++kept_;
    } else if (const int v = find_victim_locked(); v >= 0) {
      if (opts_.policy == EvictionPolicy::Lru || decayed_score_locked(s) > decayed_score_locked(slots_[v])) {
        slots_[v].kept = false;
        s.kept = true;
      }
    }
  }
  if (!pending_.empty()) fill_guesses_locked();
}

void TieredExpertSource::start_load_locked(int i, int layer, int expert, bool demand) {
  evict_locked(i);
  Slot& s = slots_[i];
  const ExpertLocation& L = loc_.at(layer).at(expert);
  s.layer = layer;
  s.expert = expert;
  s.state = Slot::Queued;
  s.prefetched = !demand;
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
      if (L.part_offset[k] >= r.offset && L.part_offset[k] < r.offset + r.bytes)
        part_ptr[k] = base + at + (L.part_offset[k] - a0);
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
    c_.bytes_needed += L.bytes;
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
  // Guesses are for the layers just after the one asked for; anything else was guessed wrong.
  auto wanted = [&](int l, int e) {
    if (l == layer) return std::find(demand.begin(), demand.end(), e) != demand.end();
    return l > layer && l <= layer + opts_.lookahead_layers;
  };
  for (int i = 0; i < static_cast<int>(slots_.size()); ++i) {
    Slot& s = slots_[i];
    if (!s.prefetched || s.pins || wanted(s.layer, s.expert)) continue;
    if (s.state == Slot::Queued) cancel_guess_locked(i);
    else {
      // Read or being read for nothing; the slot is a streaming slot again once its read is done.
      s.prefetched = false;
      ++c_.prefetch_wasted;
      if (s.state == Slot::Loading) stop_reading_locked(i);
    }
  }
  std::erase_if(pending_, [&](const Guess& g) { return g.layer <= layer || !wanted(g.layer, g.expert); });
}

void TieredExpertSource::score_guesses_locked(int layer, std::span<const int> demand) {
  for (int d = 0; d < 2; ++d) {
    auto& g = guess_[d];
    if (layer >= static_cast<int>(g.size()) || g[layer].empty()) continue;
    uint64_t right = 0;
    for (int e : g[layer]) right += std::find(demand.begin(), demand.end(), e) != demand.end();
    c_.guessed[d] += g[layer].size();
    c_.guessed_right[d] += right;
    c_.guessed_demand[d] += demand.size();
    g[layer].clear();
  }
}

void TieredExpertSource::sort_prefetch_queue_locked() {
  // Nearer layers first, and within a layer in disk-offset order.
  std::stable_sort(prefetch_q_.begin(), prefetch_q_.end(), [&](const Chunk& a, const Chunk& b) {
    const int la = slots_[a.slot].layer, lb = slots_[b.slot].layer;
    if (la != lb) return la < lb;
    if (a.job.fd != b.job.fd) return a.job.fd < b.job.fd;
    return a.job.offset < b.job.offset;
  });
}

void TieredExpertSource::fill_guesses_locked() {
  if (pending_.empty() || demand_waiting_ > 0) return;
  std::stable_sort(pending_.begin(), pending_.end(), [&](const Guess& a, const Guess& b) {
    if (a.layer != b.layer) return a.layer < b.layer;
    const ExpertLocation &x = loc_[a.layer][a.expert], &y = loc_[b.layer][b.expert];
    return std::tie(x.shard, x.offset) < std::tie(y.shard, y.offset);
  });
  size_t k = 0;
  bool started = false;
  for (; k < pending_.size(); ++k) {
    const Guess g = pending_[k];
    if (index_.count(key(g.layer, g.expert))) continue;
    const int v = stream_target_locked(false);
    if (v < 0) break;
    start_load_locked(v, g.layer, g.expert, false);
    started = true;
  }
  pending_.erase(pending_.begin(), pending_.begin() + static_cast<std::ptrdiff_t>(k));
  if (started) {
    sort_prefetch_queue_locked();
    io_cv_.notify_one();
  }
}

namespace {
uint64_t this_thread_preemptions() {
  rusage u{};
  return getrusage(RUSAGE_THREAD, &u) == 0 ? uint64_t(u.ru_nivcsw) : 0;
}
}  // namespace

void TieredExpertSource::io_loop() {
  const uint64_t preempted_before = this_thread_preemptions();
  std::unique_lock<std::mutex> lk(mu_);
  std::unordered_map<uint64_t, Chunk> flying;
  uint64_t serial = 0;
  for (;;) {
    io_cv_.wait(lk, [&] {
      return stop_ || in_flight_ > 0 ||
             ((!paused_ || io_allowance_ > 0) && (!demand_q_.empty() || !prefetch_q_.empty()));
    });
    if (stop_ && in_flight_ == 0) return;
    const int guess_cap = opts_.guess_chunks_in_flight > 0 ? opts_.guess_chunks_in_flight : engine_->depth();
    while (!stop_ && (!paused_ || io_allowance_ > 0) && in_flight_ < engine_->depth() &&
           (!demand_q_.empty() || (!prefetch_q_.empty() && guesses_in_flight_ < guess_cap))) {
      if (paused_) --io_allowance_;
      const bool guess = demand_q_.empty();
      auto& q = guess ? prefetch_q_ : demand_q_;
      Chunk c = q.front();
      q.pop_front();
      c.guess = guess;
      guesses_in_flight_ += guess;
      Slot& s = slots_[c.slot];
      if (s.state == Slot::Queued) s.state = Slot::Loading;
      c.job.tag = ++serial;
      flying.emplace(c.job.tag, c);
      engine_->submit(c.job);
      ++in_flight_;
      peak_in_flight_ = std::max(peak_in_flight_, in_flight_);
      peak_guesses_in_flight_ = std::max(peak_guesses_in_flight_, guesses_in_flight_);
    }
    if (in_flight_ == 0) continue;
    lk.unlock();
    const auto t0 = Clock::now();
    ReadDone d = engine_->wait();
    const double waited = since(t0);
    const uint64_t preempted = this_thread_preemptions() - preempted_before;  // a system call: outside the lock
    lk.lock();
    c_.read_seconds += waited;
    c_.read_depth_seconds += waited * in_flight_;
    c_.io_preemptions = preempted;
    --in_flight_;
    auto it = flying.find(d.tag);
    if (it == flying.end()) continue;
    const Chunk c = it->second;
    flying.erase(it);
    guesses_in_flight_ -= c.guess;
    Slot& s = slots_[c.slot];
    if (s.abandoned) {
      if (--s.chunks_left == 0) {
        evict_locked(c.slot);
        if (!pending_.empty()) fill_guesses_locked();
      }
      continue;
    }
    if (d.result < 0) s.error = std::string("read failed: ") + std::strerror(static_cast<int>(-d.result));
    else if (static_cast<uint64_t>(d.result) < c.need)
      s.error =
          "short read (" + std::to_string(d.result) + " of " + std::to_string(c.need) + " bytes): shard truncated?";
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
      // A guess that turned stale while its read was in flight frees a slot now.
      if (!pending_.empty() && !s.prefetched && s.pins == 0) fill_guesses_locked();
    }
  }
}

class TieredBatch : public ExpertBatch {
 public:
  TieredBatch(TieredExpertSource& src, int layer, std::vector<int> experts, std::vector<int> slots, bool ahead)
      : src_(src),
        layer_(layer),
        experts_(std::move(experts)),
        slot_(std::move(slots)),
        returned_(experts_.size(), 0),
        ahead_(ahead) {}
  ~TieredBatch() override {
    std::lock_guard<std::mutex> lk(src_.mu_);
    for (size_t i = 0; i < experts_.size(); ++i)
      if (slot_[i] < 0) --src_.demand_waiting_;
    for (size_t i = 0; i < experts_.size(); ++i)
      if (slot_[i] >= 0 && (!returned_[i] || std::find(prev_.begin(), prev_.end(), int(i)) != prev_.end())) {
        --src_.slots_[slot_[i]].pins;
        src_.release_locked(slot_[i]);
      }
  }

  std::pair<int, ExpertView> next() override {
    std::vector<std::pair<int, ExpertView>> one;
    next_ready(one, 1);
    return one.front();
  }

  void next_ready(std::vector<std::pair<int, ExpertView>>& out, int max) override {
    if (max <= 0) return;
    std::unique_lock<std::mutex> lk(src_.mu_);
    for (int i : prev_) {
      --src_.slots_[slot_[i]].pins;
      src_.release_locked(slot_[i]);
    }
    prev_.clear();
    const auto t0 = Clock::now();
    bool waited = false;
    for (;;) {
      assign_pending_locked();
      // While an expert of this request waits for a slot, one at a time: each one computed
      // frees its slot for the next read at once (caches of a few experts).
      const bool starved = std::find(slot_.begin(), slot_.end(), -1) != slot_.end();
      const int take = starved ? 1 : max;
      for (size_t i = 0; i < experts_.size() && int(prev_.size()) < take; ++i) {
        if (returned_[i] || slot_[i] < 0) continue;
        const auto& s = src_.slots_[slot_[i]];
        if (s.state == TieredExpertSource::Slot::Failed)
          throw Error("layer " + std::to_string(layer_) + " expert " + std::to_string(experts_[i]) + ": " + s.error,
                      "check the disk and the shard files (deltafin doctor)");
        if (s.state != TieredExpertSource::Slot::Ready) continue;
        returned_[i] = 1;
        prev_.push_back(static_cast<int>(i));
        out.emplace_back(static_cast<int>(i), s.view);
      }
      if (!prev_.empty()) {
        if (waited) src_.c_.wait_seconds += since(t0);
        return;
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
      const int v = src_.stream_target_locked(true);
      if (v < 0) break;
      src_.start_load_locked(v, layer_, experts_[i], true);
      src_.slots_[v].pins = 1;
      src_.touch_locked(src_.slots_[v], !ahead_);
      slot_[i] = v;
      --src_.demand_waiting_;
      started = true;
    }
    if (started) src_.io_cv_.notify_one();
  }

  TieredExpertSource& src_;
  int layer_;
  std::vector<int> experts_, slot_;
  std::vector<char> returned_;
  bool ahead_ = false;     // a request_ahead: its experts' counts are not raised
  std::vector<int> prev_;  // handed out by the last call, released by the next
};

std::unique_ptr<ExpertBatch> TieredExpertSource::request(int layer, std::span<const int> experts) {
  std::lock_guard<std::mutex> lk(mu_);
  return request_locked(layer, experts, false);
}

std::unique_ptr<ExpertBatch> TieredExpertSource::request_ahead(int layer, std::span<const int> experts) {
  std::lock_guard<std::mutex> lk(mu_);
  return request_locked(layer, experts, true);
}

std::unique_ptr<ExpertBatch> TieredExpertSource::request_locked(int layer, std::span<const int> experts, bool ahead) {
  if (!ahead) {
    cancel_stale_prefetch_locked(layer, experts);
    score_guesses_locked(layer, experts);
    cur_layer_ = layer;
  }
  std::vector<int> slot(experts.size(), -1);
  // Pin everything already present first, so loading misses cannot evict a hit.
  for (size_t i = 0; i < experts.size(); ++i) {
    if (!ahead) {
      ++c_.requests;
      heat_.add(layer, experts[i]);
    }
    auto it = index_.find(key(layer, experts[i]));
    if (it == index_.end()) continue;
    Slot& s = slots_[it->second];
    ++s.pins;
    slot[i] = it->second;
    if (s.state == Slot::Ready && !ahead) ++c_.ram_hits;
    if (s.state == Slot::Queued || s.state == Slot::Loading) promote_locked(it->second);
    if (s.prefetched) {
      ++c_.prefetch_used;
      c_.bytes_needed += loc_[layer][experts[i]].bytes;
      s.prefetched = false;
    }
    touch_locked(s, !ahead);
  }
  // Misses in disk-offset order: the reads then sweep the shard in one direction.
  std::vector<size_t> miss;
  for (size_t i = 0; i < experts.size(); ++i)
    if (slot[i] < 0) miss.push_back(i);
  std::sort(miss.begin(), miss.end(), [&](size_t a, size_t b) {
    const ExpertLocation &x = loc_.at(layer).at(experts[a]), &y = loc_.at(layer).at(experts[b]);
    return std::tie(x.shard, x.offset) < std::tie(y.shard, y.offset);
  });
  for (size_t i : miss) {
    const int v = stream_target_locked(true);
    if (v < 0) break;  // the rest are assigned as the compute releases experts
    start_load_locked(v, layer, experts[i], true);
    slots_[v].pins = 1;
    touch_locked(slots_[v], !ahead);
    slot[i] = v;
  }
  for (int v : slot) demand_waiting_ += v < 0;
  if (!ahead) {
    double miss_bytes = 0;
    for (size_t i : miss) miss_bytes += double(loc_[layer][experts[i]].bytes);
    renew_guess_budget_locked(layer, miss_bytes);
  }
  fill_guesses_locked();
  io_cv_.notify_one();
  return std::make_unique<TieredBatch>(*this, layer, std::vector<int>(experts.begin(), experts.end()), std::move(slot),
                                       ahead);
}

void TieredExpertSource::prefetch(int layer, std::span<const int> experts) {
  std::lock_guard<std::mutex> lk(mu_);
  if (layer < 0 || layer >= static_cast<int>(loc_.size())) return;
  // Remember the guess to score it when the layer asks (prediction precision).
  const int d = layer - cur_layer_;
  if (cur_layer_ >= 0 && d >= 1 && d <= 2) {
    guess_[d - 1].resize(loc_.size());
    guess_[d - 1][layer].assign(experts.begin(), experts.end());
  }
  // Read the most confident guesses while the budget lasts; the rest stay unread (scored above all
  // the same). Present ones cost nothing. A guess for a layer not after the last one asked for (a
  // pass's first MoE layer, guessed from its own attention input) is the next demand: read in full.
  const bool budgeted = cur_layer_ >= 0 && d >= 1;
  // This guess replaces the layer's earlier one: what it no longer names and is not read yet goes
  // first, its bytes back in the budget for what this one names.
  auto guessed = [&](int e) { return std::find(experts.begin(), experts.end(), e) != experts.end(); };
  for (int i = 0; i < static_cast<int>(slots_.size()); ++i) {
    const Slot& s = slots_[i];
    if (s.prefetched && s.layer == layer && s.state == Slot::Queued && s.pins == 0 && !guessed(s.expert))
      cancel_guess_locked(i);
  }
  std::vector<int> read;
  for (int e : experts) {
    if (index_.count(key(layer, e))) {
      read.push_back(e);
      continue;
    }
    const double bytes = double(loc_[layer][e].bytes);
    if (budgeted && bytes > guess_budget_left_) {
      ++c_.prefetch_skipped;
      continue;
    }
    if (budgeted) guess_budget_left_ -= bytes;
    read.push_back(e);
  }
  auto named = [&](int e) { return std::find(read.begin(), read.end(), e) != read.end(); };
  std::erase_if(pending_, [&](const Guess& g) { return g.layer == layer && !named(g.expert); });
  for (int e : read) {
    if (auto it = index_.find(key(layer, e)); it != index_.end()) {
      slots_[it->second].last_use = ++tick_;  // present already: the streaming buffer reuses it last
      continue;
    }
    if (std::none_of(pending_.begin(), pending_.end(),
                     [&](const Guess& g) { return g.layer == layer && g.expert == e; }))
      pending_.push_back({layer, e});
  }
  fill_guesses_locked();
}

void TieredExpertSource::renew_guess_budget_locked(int layer, double demand_bytes) {
  const auto now = std::chrono::steady_clock::now();
  if (opts_.guess_bytes_per_layer >= 0) {
    guess_budget_left_ = double(opts_.guess_bytes_per_layer);
    return;
  }
  // The wall time from a layer's request to the next request, waits included, per layer (the last
  // layer's runs through the head and the next token's first attention): in it the disk reads the
  // layer's misses and is otherwise idle (under the next layer's attention and router, and under
  // the compute the misses did not cover). Guesses fill that idle time: the budget is what the disk
  // reads in it, less this layer's own misses, so demand reads never queue behind guesses. (The
  // compute time alone, wall less waits, would leave no budget in exactly the disk-bound layers
  // whose disk idles under the next attention.) Smoothed by halves, so a prefill pass's long
  // intervals fade within a few decode tokens. Until reads have been timed, every guess is read.
  if (last_layer_ >= 0) {
    const double dt = std::chrono::duration<double>(now - last_request_).count();
    double& iv = interval_s_[size_t(last_layer_)];
    if (dt > 0) iv = iv > 0 ? 0.5 * iv + 0.5 * dt : dt;
  }
  last_request_ = now;
  last_layer_ = layer;
  const double iv = interval_s_[size_t(layer)];
  const bool timed = c_.read_seconds > 0.05 && c_.bytes_read > 0 && iv > 0;
  guess_budget_left_ = timed ? std::max(0.0, iv * (double(c_.bytes_read) / c_.read_seconds) - demand_bytes) : 1e300;
}

int TieredExpertSource::peak_in_flight() const {
  std::lock_guard<std::mutex> lk(mu_);
  return peak_in_flight_;
}

int TieredExpertSource::peak_guesses_in_flight() const {
  std::lock_guard<std::mutex> lk(mu_);
  return peak_guesses_in_flight_;
}

size_t TieredExpertSource::pending_guesses() const {
  std::lock_guard<std::mutex> lk(mu_);
  return pending_.size();
}

void TieredExpertSource::pause_io(bool paused) {
  {
    std::lock_guard<std::mutex> lk(mu_);
    paused_ = paused;
    io_allowance_ = 0;
  }
  io_cv_.notify_one();
}

void TieredExpertSource::step_io(int chunks) {
  {
    std::lock_guard<std::mutex> lk(mu_);
    io_allowance_ += chunks;
  }
  io_cv_.notify_one();
}

int TieredExpertSource::reads_in_flight() const {
  std::lock_guard<std::mutex> lk(mu_);
  return in_flight_;
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
      if (n >= limit || n >= static_cast<size_t>(n_cache_)) break;
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
      c_.bytes_needed -= loc_[l][e].bytes;
      slots_[v].kept = true;
      ++kept_;
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

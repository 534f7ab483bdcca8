#include "runtime/spine_streamer.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <thread>

#include "base/error.h"
#include "model/checkpoint.h"

namespace deltafin {

namespace {

constexpr uint64_t kAlign = 4096;
uint64_t align_down(uint64_t x) { return x & ~(kAlign - 1); }
uint64_t align_up(uint64_t x) { return (x + kAlign - 1) & ~(kAlign - 1); }
using Clock = std::chrono::steady_clock;
double since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

// The matrices of a layer that a pass reads (the router stays resident: lookahead reads it early).
std::vector<Mat*> layer_mats(LayerWeights& L) {
  std::vector<Mat*> v;
  if (L.mla) {
    auto& m = L.mla_w;
    for (Mat* x : {&m.q_a_proj, &m.q_b_proj, &m.kv_a_proj, &m.kv_b_proj, &m.o_proj, &m.g_proj}) v.push_back(x);
  } else {
    auto& k = L.kda;
    for (Mat* x : {&k.q_proj, &k.k_proj, &k.v_proj, &k.g_proj, &k.o_proj, &k.f_a, &k.f_b, &k.b_proj}) v.push_back(x);
  }
  if (L.moe) {
    auto& m = L.moe_w;
    for (Mat* x : {&m.latent_down, &m.latent_up}) v.push_back(x);
    if (m.has_shared)
      for (Mat* x : {&m.shared.gate, &m.shared.up, &m.shared.down}) v.push_back(x);
  } else {
    for (Mat* x : {&L.dense.gate, &L.dense.up, &L.dense.down}) v.push_back(x);
  }
  std::erase_if(v, [](const Mat* m) { return m->data == nullptr; });
  return v;
}

uint8_t* map_buffer(uint64_t bytes) {
  void* p = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED)
    throw Error("cannot allocate " + std::to_string(bytes >> 20) + " MiB for the spine", "lower --ram-budget");
  // Huge pages where offered on request: every byte is read once per token, end to end, and with
  // 4 KB pages the TLB misses cost more than the reads on virtualised machines (docs/STREAMING.md).
  ::madvise(p, bytes, MADV_HUGEPAGE);
  return static_cast<uint8_t*>(p);
}

// Whether every page of [p, p + n) is in the page cache (the mapping of a shard another run read).
bool resident(const void* p, uint64_t n) {
  if (n == 0) return true;
  static const uint64_t page = uint64_t(::sysconf(_SC_PAGESIZE));
  const auto a = reinterpret_cast<uintptr_t>(p) & ~uintptr_t(page - 1);
  const uint64_t len = reinterpret_cast<uintptr_t>(p) + n - a;
  std::vector<unsigned char> v((len + page - 1) / page);
  if (::mincore(reinterpret_cast<void*>(a), len, v.data()) != 0) return false;
  return std::all_of(v.begin(), v.end(), [](unsigned char c) { return (c & 1) != 0; });
}

}  // namespace

bool SpinePlacement::any_streamed() const {
  return lm_head == SpineHome::Streamed || std::find(layers.begin(), layers.end(), SpineHome::Streamed) != layers.end();
}

SpineStreamer::SpineStreamer(const Checkpoint& ck, const K3Config& c, K3Weights& w, SpinePlacement p,
                             const std::function<void(const std::string&)>& say)
    : ck_(ck), p_(std::move(p)) {
  if (p_.layers.size() != size_t(c.layers))
    throw Error("spine placement names " + std::to_string(p_.layers.size()) + " layers; the model has " +
                std::to_string(c.layers));
  // Where a mapped matrix sits in its shard file.
  auto locate = [&](const Mat& m, Region& r) {
    const auto* ptr = static_cast<const uint8_t*>(m.data);
    for (uint32_t s = 0; s < ck.shard_names().size(); ++s) {
      const MappedFile& f = ck.mapping(s);
      if (ptr >= f.data() && ptr < f.data() + f.size()) {
        r.shard = s;
        r.offset = uint64_t(ptr - f.data());
        r.bytes = m.bytes();
        return;
      }
    }
    throw Error("a spine matrix is not inside any shard mapping of " + ck.dir());
  };
  units_.resize(size_t(c.layers) + 1);
  for (int u = 0; u <= c.layers; ++u) {
    Unit& U = units_[size_t(u)];
    std::vector<Mat*> mats;
    if (u < c.layers) {
      U.layer = w.layers[size_t(u)];
      mats = layer_mats(U.layer);
    } else {
      U.lm_head = w.lm_head;
      mats = {&U.lm_head};
    }
    uint64_t off = 0;
    for (Mat* m : mats) {
      Region r;
      r.field = m;
      locate(*m, r);
      r.dst = off;
      off += align_up(r.offset + r.bytes) - align_down(r.offset);
      U.regions.push_back(r);
    }
    U.buffer_bytes = off;
  }

  for (uint32_t s = 0; s < ck.shard_names().size(); ++s) {
    const std::string path = ck.shard_path(s);
    int fd = p_.direct_io ? ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_DIRECT) : -1;
    if (fd >= 0) direct_ = true;
    if (fd < 0) {
      fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
      if (p_.direct_io) io_note_ = "O_DIRECT unsupported here: page cache used";
      direct_ = false;
    }
    if (fd < 0) throw Error("cannot open " + path + ": " + std::strerror(errno));
    fds_.push_back(fd);
  }
  std::string why;
  if (p_.use_io_uring) engine_ = make_io_uring_engine(p_.queue_depth, &why);
  if (!engine_) engine_ = make_pread_engine(p_.queue_depth);

  auto home = [&](int u) { return u < c.layers ? p_.layers[size_t(u)] : p_.lm_head; };
  // The router of an owned or streamed layer is copied into engine RAM (the router lookahead of
  // the layer before reads it, before the layer itself is acquired).
  auto own_router = [&](int u) {
    if (u >= c.layers || !w.layers[size_t(u)].moe) return;
    Mat& router = w.layers[size_t(u)].moe_w.router;
    Unit tmp;
    tmp.lm_head = router;
    Region r;
    r.field = &tmp.lm_head;
    locate(router, r);
    tmp.regions.push_back(r);
    const uint64_t n = align_up(r.offset + r.bytes) - align_down(r.offset);
    uint8_t* buf = map_buffer(n);
    owned_.push_back(buf);
    owned_sizes_.push_back(n);
    owned_bytes_ += n;
    load_regions(tmp, buf);
    router.data = buf + (r.offset - align_down(r.offset));
    units_[size_t(u)].layer.moe_w.router = router;
  };
  unit_spans_.assign(size_t(c.layers) + 1, Span{});
  // Progress: loading real K3's owned spine takes tens of seconds.
  uint64_t to_own = 0, owned_so_far = 0;
  for (int u = 0; u <= c.layers; ++u)
    if (home(u) == SpineHome::Owned) to_own += units_[size_t(u)].buffer_bytes;
  const bool tell = say && to_own >= 8000000000ull;
  const auto load_start = Clock::now();
  auto one_decimal = [](double v) {
    char t[32];
    std::snprintf(t, sizeof t, "%.1f", v);
    return std::string(t);
  };
  auto gb = [&](uint64_t b) { return one_decimal(double(b) / 1e9); };
  if (tell) say("loading " + gb(to_own) + " GB of the spine into RAM");
  int tenths_told = 0;
  for (int u = 0; u <= c.layers; ++u) {
    Unit& U = units_[size_t(u)];
    if (home(u) == SpineHome::Owned) {
      // Copied once; the bound weights point at the copy from now on.
      const uint64_t n = std::max<uint64_t>(U.buffer_bytes, kAlign);
      uint8_t* buf = map_buffer(n);
      owned_.push_back(buf);
      owned_sizes_.push_back(n);
      owned_bytes_ += U.buffer_bytes;
      unit_spans_[size_t(u)] = Span{buf, n};
      load_regions(U, buf);
      if (u < c.layers) rebase(U, buf, &w.layers[size_t(u)], nullptr);
      else rebase(U, buf, nullptr, &w.lm_head);
      own_router(u);
      owned_so_far += U.buffer_bytes;
      if (tell && int(10 * owned_so_far / to_own) > tenths_told && owned_so_far < to_own) {
        tenths_told = int(10 * owned_so_far / to_own);
        say("  " + gb(owned_so_far) + " of " + gb(to_own) + " GB");
      }
    } else if (home(u) == SpineHome::Streamed) {
      slot_bytes_ = std::max(slot_bytes_, align_up(U.buffer_bytes));
      own_router(u);
    }
  }
  if (tell)
    say("spine in RAM: " + gb(to_own) + " GB in " + one_decimal(since(load_start)) + " s (" +
        gb(owned_from_cache_bytes_) + " GB of it from the page cache)");
  if (p_.any_streamed()) {
    slots_.resize(2);
    for (auto& s : slots_) s.buf = map_buffer(slot_bytes_);
    loader_ = std::thread([this] { loader_loop(); });
  }
}

SpineStreamer::~SpineStreamer() {
  {
    std::lock_guard<std::mutex> lk(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (loader_.joinable()) loader_.join();
  engine_.reset();
  for (auto& s : slots_) ::munmap(s.buf, slot_bytes_);
  for (size_t i = 0; i < owned_.size(); ++i) ::munmap(owned_[i], owned_sizes_[i]);
  for (int fd : fds_) ::close(fd);
  for (int fd : buffered_fds_)
    if (fd >= 0) ::close(fd);
}

void SpineStreamer::rebase(Unit& u, uint8_t* buf, LayerWeights* layer, Mat* lm_head) const {
  // The template's fields are re-pointed, then copied out: the template stays the bound layout.
  std::vector<const void*> saved;
  for (auto& r : u.regions) {
    saved.push_back(r.field->data);
    r.field->data = buf + r.dst + (r.offset - align_down(r.offset));
  }
  if (layer) *layer = u.layer;
  if (lm_head) *lm_head = u.lm_head;
  for (size_t i = 0; i < u.regions.size(); ++i) u.regions[i].field->data = saved[i];
}

void SpineStreamer::load_regions(const Unit& u, uint8_t* buf) {
  // A unit a recent run left in the page cache is copied from there (memory speed); otherwise read
  // with direct I/O (a partly cached unit too: copying it would fault the rest in 4 KB pages
  // through the cache). The template's fields still point into the shards' mapping here.
  const bool cached =
      std::all_of(u.regions.begin(), u.regions.end(), [](const Region& r) { return resident(r.field->data, r.bytes); });
  if (!cached) {
    read_regions(u, buf);
    return;
  }
  // Buffered reads in 64 MiB pieces on up to 16 threads: the kernel copies from its cache without the
  // page faults a copy from the mapping takes (3 GB/s on one thread of the 2-vCPU VM).
  struct Piece {
    int fd;
    uint64_t offset, bytes;
    uint8_t* dst;
  };
  std::vector<Piece> pieces;
  constexpr uint64_t kPiece = 64ull << 20;
  for (const Region& r : u.regions) {
    if (buffered_fds_.empty()) buffered_fds_.assign(fds_.size(), -1);
    int& fd = buffered_fds_[r.shard];
    if (fd < 0) fd = ::open(ck_.shard_path(r.shard).c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
      read_regions(u, buf);
      return;
    }
    uint8_t* dst = buf + r.dst + (r.offset - align_down(r.offset));
    for (uint64_t o = 0; o < r.bytes; o += kPiece)
      pieces.push_back(Piece{fd, r.offset + o, std::min(kPiece, r.bytes - o), dst + o});
  }
  // Threads of their own, not the compute pool: a load may run beside another model's pass.
  std::atomic<bool> failed{false};
  std::atomic<size_t> next{0};
  auto copy = [&] {
    for (size_t i; (i = next.fetch_add(1)) < pieces.size() && !failed;) {
      uint64_t done = 0;
      while (done < pieces[i].bytes) {
        const ssize_t n =
            ::pread(pieces[i].fd, pieces[i].dst + done, pieces[i].bytes - done, off_t(pieces[i].offset + done));
        if (n <= 0) {
          failed = true;
          break;
        }
        done += uint64_t(n);
      }
    }
  };
  const size_t threads = std::min<size_t>({pieces.size(), std::max(1u, std::thread::hardware_concurrency()), 16});
  std::vector<std::thread> workers;
  for (size_t t = 1; t < threads; ++t) workers.emplace_back(copy);
  copy();
  for (auto& w : workers) w.join();
  if (failed) {
    read_regions(u, buf);  // direct reads say what failed
    return;
  }
  for (const Region& r : u.regions) owned_from_cache_bytes_ += r.bytes;
}

void SpineStreamer::read_regions(const Unit& u, uint8_t* buf) {
  std::vector<ReadJob> jobs;
  std::vector<uint64_t> need;
  for (const auto& r : u.regions) {
    const uint64_t a0 = align_down(r.offset), a1 = align_up(r.offset + r.bytes), end = r.offset + r.bytes;
    for (uint64_t o = a0; o < a1; o += p_.chunk_bytes) {
      const uint64_t n = std::min(p_.chunk_bytes, a1 - o);
      jobs.push_back(ReadJob{fds_[r.shard], o, n, buf + r.dst + (o - a0), jobs.size()});
      need.push_back(std::min(o + n, end) - o);
    }
  }
  size_t next = 0, done = 0;
  int flying = 0;
  std::string error;
  while (done < jobs.size()) {
    while (next < jobs.size() && flying < engine_->depth()) {
      engine_->submit(jobs[next++]);
      ++flying;
    }
    const ReadDone d = engine_->wait();
    --flying;
    ++done;
    if (d.result < 0) error = std::string("read failed: ") + std::strerror(int(-d.result));
    else if (uint64_t(d.result) < need[d.tag]) error = "short read (the shard is shorter than its header says)";
  }
  if (!error.empty()) throw Error("streaming the spine from " + ck_.dir() + ": " + error, "run deltafin doctor");
}

int SpineStreamer::next_streamed_after(int unit) const {
  const int n = static_cast<int>(units_.size());
  for (int i = 1; i <= n; ++i) {
    const int u = (unit + i) % n;
    const SpineHome h = u < n - 1 ? p_.layers[size_t(u)] : p_.lm_head;
    if (h == SpineHome::Streamed) return u;
  }
  return -1;
}

void SpineStreamer::start_load_locked(int slot, int unit) {
  Slot& s = slots_[size_t(slot)];
  s.unit = unit;
  s.state = Slot::Loading;
  s.error.clear();
  jobs_.emplace_back(slot, unit);
  cv_.notify_all();
}

void SpineStreamer::loader_loop() {
  std::unique_lock<std::mutex> lk(mu_);
  for (;;) {
    cv_.wait(lk, [&] { return stop_ || !jobs_.empty(); });
    if (stop_) return;
    const auto [slot, unit] = jobs_.front();
    jobs_.erase(jobs_.begin());
    uint8_t* buf = slots_[size_t(slot)].buf;
    lk.unlock();
    const auto t0 = Clock::now();
    std::string error;
    try {
      read_regions(units_[size_t(unit)], buf);
    } catch (const std::exception& e) {
      error = e.what();
    }
    const double sec = since(t0);
    lk.lock();
    Slot& s = slots_[size_t(slot)];
    stats_.read_seconds += sec;
    if (!error.empty()) {
      s.state = Slot::Failed;
      s.error = error;
    } else {
      if (unit == lm_head_unit()) rebase(units_[size_t(unit)], buf, nullptr, &s.lm_head);
      else rebase(units_[size_t(unit)], buf, &s.layer, nullptr);
      s.state = Slot::Ready;
      stats_.units_streamed += 1;
      stats_.bytes_streamed += units_[size_t(unit)].buffer_bytes;
    }
    cv_.notify_all();
  }
}

const SpineStreamer::Slot& SpineStreamer::acquire_unit(int unit) {
  std::unique_lock<std::mutex> lk(mu_);
  const auto t0 = Clock::now();
  int slot = -1;
  for (;;) {
    for (size_t i = 0; i < slots_.size(); ++i)
      if (slots_[i].unit == unit && slots_[i].state != Slot::Failed) slot = int(i);
    if (slot >= 0) break;
    // Not loading anywhere: take an unpinned slot (one not holding the next unit, when possible).
    const int after = next_streamed_after(unit);
    int pick = -1;
    for (size_t i = 0; i < slots_.size(); ++i)
      if (slots_[i].pins == 0 && slots_[i].state != Slot::Loading && (pick < 0 || slots_[size_t(pick)].unit == after))
        pick = int(i);
    if (pick >= 0) {
      start_load_locked(pick, unit);
      slot = pick;
      break;
    }
    cv_.wait(lk);
  }
  Slot& s = slots_[size_t(slot)];
  ++s.pins;  // pinned while loading too: nobody may take the slot from under the wait
  cv_.wait(lk, [&] { return s.state == Slot::Ready || s.state == Slot::Failed; });
  stats_.wait_seconds += since(t0);
  if (s.state == Slot::Failed) {
    --s.pins;
    const std::string e = s.error;
    s.unit = -1;
    s.state = Slot::Empty;
    throw Error(e);
  }
  // Double buffering: the next streamed unit loads into the other slot while this one computes.
  const int after = next_streamed_after(unit);
  if (after >= 0 && after != unit) {
    bool present = false;
    for (const auto& x : slots_) present |= x.unit == after && x.state != Slot::Failed;
    if (!present)
      for (size_t i = 0; i < slots_.size(); ++i)
        if (slots_[i].pins == 0 && slots_[i].state != Slot::Loading) {
          start_load_locked(int(i), after);
          break;
        }
  }
  return s;
}

void SpineStreamer::release_unit(int unit) {
  std::lock_guard<std::mutex> lk(mu_);
  for (auto& s : slots_)
    if (s.unit == unit && s.pins > 0) {
      --s.pins;
      break;
    }
  cv_.notify_all();
}

const LayerWeights& SpineStreamer::acquire(int layer) {
  if (p_.layers.at(size_t(layer)) != SpineHome::Streamed)
    throw Error("layer " + std::to_string(layer) + " is not streamed: use the bound weights");
  return acquire_unit(layer).layer;
}

void SpineStreamer::release(int layer) {
  if (p_.layers.at(size_t(layer)) == SpineHome::Streamed) release_unit(layer);
}

const Mat& SpineStreamer::acquire_lm_head() {
  if (p_.lm_head != SpineHome::Streamed) throw Error("lm_head is not streamed: use the bound weights");
  return acquire_unit(lm_head_unit()).lm_head;
}

void SpineStreamer::release_lm_head() {
  if (p_.lm_head == SpineHome::Streamed) release_unit(lm_head_unit());
}

SpineStreamStats SpineStreamer::stats() const {
  std::lock_guard<std::mutex> lk(mu_);
  return stats_;
}

std::string SpineStreamer::describe() const {
  int owned = 0, streamed = 0;
  for (auto h : p_.layers) owned += h == SpineHome::Owned, streamed += h == SpineHome::Streamed;
  owned += p_.lm_head == SpineHome::Owned;
  streamed += p_.lm_head == SpineHome::Streamed;
  std::string s = std::to_string(owned) + " unit(s) in engine RAM (" + std::to_string(owned_bytes_ / 1000000) + " MB" +
                  (owned_from_cache_bytes_
                       ? ", " + std::to_string(owned_from_cache_bytes_ / 1000000) + " MB of it from the page cache"
                       : std::string()) +
                  "), " + std::to_string(streamed) + " streamed through 2 x " + std::to_string(slot_bytes_ / 1000000) +
                  " MB buffers (" + engine_->name() + ", QD " + std::to_string(engine_->depth()) +
                  (direct_ ? ", O_DIRECT" : ", page cache") + ")";
  if (!io_note_.empty()) s += "; " + io_note_;
  return s;
}

}  // namespace deltafin

#include "cuda/vram_expert_cache.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>

#include "base/error.h"
#include "base/thread_pool.h"
#include "cuda/cuda_support.h"

namespace deltafin::cuda {

struct VramExpertCache::Impl {
  DeviceBuffer pool;
  OwnedStream copy;
  std::vector<PinnedBuffer> staging;
  std::vector<std::unique_ptr<OwnedEvent>> staged;  // one per staging buffer: its DMA is done
  std::vector<bool> staged_used;
  OwnedEvent done, compute_done;
  // The compute stream's position when the last request was made: every kernel that reads a slot
  // the request does not use was queued before it.
  OwnedEvent request_point;
  bool has_request_point = false;
  // Experts copied ahead of their request (prefetch): the copies' completion, which the compute
  // stream waits on before using any slot, and the host batch they read from, held until then.
  OwnedEvent ahead_done;
  bool ahead_pending = false;
  std::unique_ptr<ExpertBatch> ahead_batch;
  std::vector<char> ahead_slot;  // filled ahead and not yet used
  // Lets the RAM tier reuse the slots the last copies ahead read from, once those copies are done.
  void release_ahead_batch() {
    if (!ahead_batch) return;
    ahead_done.sync();
    ahead_batch.reset();
  }
  // The source's arena, pinned in pieces of whole units as misses reach them: pinning all of a
  // RAM tier of 100+ GB up front would stall start-up for seconds and commit every page at once.
  HostArena arena;
  uint64_t piece = 0;
  std::vector<int8_t> piece_state;  // 0 not yet, 1 pinned, -1 refused
};

namespace {

// ExpertView order: w1 packed, w1 scale, w2 packed, w2 scale, w3 packed, w3 scale.
void part_sizes(int latent, int inter, uint64_t (&sizes)[6]) {
  const uint64_t I = inter, Z = latent;
  const uint64_t s[6] = {I * Z / 2, I * Z / 32, Z * I / 2, Z * I / 32, I * Z / 2, I * Z / 32};
  for (int p = 0; p < 6; ++p) sizes[p] = s[p];
}

}  // namespace

uint64_t VramExpertCache::slot_bytes_for(int latent, int inter) {
  uint64_t sizes[6], total = 0;
  part_sizes(latent, inter, sizes);
  for (uint64_t b : sizes) total += DeviceArena::round(b);
  return total;
}

VramExpertCache::VramExpertCache(ExpertSource& host, int latent, int inter, int slots, int staging_buffers)
    : host_(host), map_(slots), impl_(std::make_unique<Impl>()) {
  if (slots < 1) throw Error("the VRAM expert tier needs at least one slot");
  uint64_t sizes[6];
  part_sizes(latent, inter, sizes);
  for (int p = 0; p < 6; ++p) {
    part_bytes_[p] = sizes[p];
    part_off_[p] = slot_bytes_;
    slot_bytes_ += DeviceArena::round(sizes[p]);
  }
  impl_->pool = DeviceBuffer(slot_bytes_ * uint64_t(slots));
  for (int i = 0; i < staging_buffers; ++i) {
    impl_->staging.emplace_back(slot_bytes_);
    impl_->staged.push_back(std::make_unique<OwnedEvent>());
    impl_->staged_used.push_back(false);
  }
  const char* env = std::getenv("DELTAFIN_VRAM_DIRECT");
  direct_on_ = !(env && std::string(env) == "off");
  impl_->arena = host_.host_arena();
  impl_->piece = impl_->arena.base ? impl_->arena.piece_bytes(512ull << 20) : 0;
  impl_->piece_state.assign(impl_->arena.pieces(impl_->piece), 0);
  impl_->ahead_slot.assign(size_t(slots), 0);
}

VramExpertCache::~VramExpertCache() {
  cudaStreamSynchronize(impl_->copy.get());
  impl_->ahead_batch.reset();
  for (size_t i = 0; i < impl_->piece_state.size(); ++i)
    if (impl_->piece_state[i] == 1) cudaHostUnregister(const_cast<uint8_t*>(impl_->arena.base) + i * impl_->piece);
}

bool VramExpertCache::pinned(const uint8_t* p, uint64_t n) {
  const HostArena& a = impl_->arena;
  const int64_t i = direct_on_ ? a.piece_of(p, n, impl_->piece) : -1;
  if (i < 0) return false;
  int8_t& st = impl_->piece_state[size_t(i)];
  if (st == 0) {
    const uint64_t len = std::min(impl_->piece, a.bytes - i * impl_->piece);
    const cudaError_t e =
        cudaHostRegister(const_cast<uint8_t*>(a.base) + i * impl_->piece, len, cudaHostRegisterDefault);
    st = e == cudaSuccess ? 1 : -1;
    if (e != cudaSuccess) {
      cudaGetLastError();  // not sticky: clear it so later checks do not report it
      direct_note_ =
          std::string("pinning the RAM tier failed (") + cudaGetErrorString(e) + "): copies go through staging";
    }
  }
  return st == 1;
}

MxExpert VramExpertCache::view(int slot) const {
  auto* b = static_cast<const uint8_t*>(impl_->pool.data()) + uint64_t(slot) * slot_bytes_;
  // MxExpert: gate = w1, up = w3, down = w2.
  return MxExpert{b + part_off_[0], b + part_off_[1], b + part_off_[4],
                  b + part_off_[5], b + part_off_[2], b + part_off_[3]};
}

void VramExpertCache::gather(int layer, std::span<const int> experts, std::vector<MxExpert>& out, Stream stream) {
  const auto t0 = std::chrono::steady_clock::now();
  out.assign(experts.size(), MxExpert{});
  if (int(experts.size()) > slots())
    throw Error("a pass needs " + std::to_string(experts.size()) + " experts of one layer but the VRAM tier has " +
                    std::to_string(slots()) + " slots",
                "give the VRAM tier more slots or run fewer rows per pass");
  map_.begin_request(layer);
  impl_->request_point.record(static_cast<cudaStream_t>(stream));
  impl_->has_request_point = true;
  // Slots filled ahead may still be landing: the work that reads them waits for those copies, and
  // the host batch they came from goes once they are done.
  if (impl_->ahead_pending) {
    check_cuda(cudaStreamWaitEvent(static_cast<cudaStream_t>(stream), impl_->ahead_done.get(), 0),
               "cudaStreamWaitEvent");
    impl_->release_ahead_batch();
  }
  std::vector<int> missing_idx;
  std::vector<int> missing;
  uint64_t ahead_used = 0;
  for (size_t i = 0; i < experts.size(); ++i) {
    ++c_.requests;
    if (const int s = map_.use(layer, experts[i]); s >= 0) {
      ++c_.hits;
      if (impl_->ahead_slot[size_t(s)]) {
        ++c_.ahead_used;
        ++ahead_used;
        impl_->ahead_slot[size_t(s)] = 0;
      }
      out[i] = view(s);
    } else {
      missing_idx.push_back(int(i));
      missing.push_back(experts[i]);
    }
  }
  if (layer == ahead_layer_) {
    if (ahead_sent_ > 0)
      ahead_precision_ = 0.75 * ahead_precision_ + 0.25 * std::min(1.0, double(ahead_used) / double(ahead_sent_));
    // The guesses this request did not use were wrong: a later hit on one is not a guess's.
    for (int s = 0; s < slots(); ++s)
      if (impl_->ahead_slot[size_t(s)] && map_.holds(s) && map_.layer_of(s) == layer) impl_->ahead_slot[size_t(s)] = 0;
    ahead_layer_ = -1;
  }
  if (missing.empty()) return;
  std::vector<int> slot_for(missing.size());
  for (size_t m = 0; m < missing.size(); ++m) {
    bool evicted = false;
    slot_for[m] = map_.claim(layer, missing[m], &evicted);  // experts.size() <= slots(): always one
    if (evicted) {
      ++c_.evictions;
      ++epoch_;
    }
    impl_->ahead_slot[size_t(slot_for[m])] = 0;
    out[missing_idx[m]] = view(slot_for[m]);
  }
  std::unique_ptr<ExpertBatch> batch;  // lives until its direct copies are done (below)
  const bool any_direct = fill(layer, missing, slot_for, stream, false, batch);
  cudaStream_t cs = impl_->copy.get();
  impl_->done.record(cs);
  check_cuda(cudaStreamWaitEvent(static_cast<cudaStream_t>(stream), impl_->done.get(), 0), "cudaStreamWaitEvent");
  // The batch keeps the RAM tier from reusing its slots: it may only go once their DMA is done.
  if (any_direct) impl_->done.sync();
  c_.fill_seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

bool VramExpertCache::ahead_worthwhile() {
  if (ahead_precision_ >= 0.5) return true;
  return ++ahead_skipped_ % 16 == 0;
}

void VramExpertCache::prefetch(int layer, std::span<const int> experts, Stream stream) {
  const auto t0 = std::chrono::steady_clock::now();
  impl_->release_ahead_batch();  // the previous guesses
  std::vector<int> missing, slot_for;
  for (int e : experts) {
    if (map_.find(layer, e) >= 0) continue;
    // Never a slot of the request just made: its experts are in use by work queued or running.
    const int s = map_.claim_ahead(layer, e, map_.request());
    if (s < 0) break;
    impl_->ahead_slot[size_t(s)] = 1;
    missing.push_back(e);
    slot_for.push_back(s);
  }
  ahead_layer_ = layer;
  ahead_sent_ = missing.size();
  if (missing.empty()) return;
  ++epoch_;
  c_.ahead += missing.size();
  std::unique_ptr<ExpertBatch> batch;
  fill(layer, missing, slot_for, stream, true, batch);
  impl_->ahead_done.record(impl_->copy.get());
  impl_->ahead_pending = true;
  impl_->ahead_batch = std::move(batch);
  c_.fill_seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

bool VramExpertCache::fill(int layer, const std::vector<int>& missing, const std::vector<int>& slot_for, Stream stream,
                           bool ahead, std::unique_ptr<ExpertBatch>& batch) {
  cudaStream_t cs = impl_->copy.get();
  // A slot being overwritten may still be read by work already queued on the compute stream. Copies
  // ahead go into slots the last request does not use, which only work queued before that request
  // reads: they wait for that point, not for the request's own experts' kernels queued since (so
  // the next layer's experts cross PCIe while this layer computes).
  if (ahead && impl_->has_request_point) {
    check_cuda(cudaStreamWaitEvent(cs, impl_->request_point.get(), 0), "cudaStreamWaitEvent");
  } else {
    impl_->compute_done.record(static_cast<cudaStream_t>(stream));
    check_cuda(cudaStreamWaitEvent(cs, impl_->compute_done.get(), 0), "cudaStreamWaitEvent");
  }
  bool any_direct = false;
  try {
    batch = ahead ? host_.request_ahead(layer, missing) : host_.request(layer, missing);
    const int nstage = static_cast<int>(impl_->staging.size());
    int staged = 0;
    for (size_t done = 0; done < missing.size(); ++done) {
      auto [mi, v] = batch->next();
      const uint8_t* parts[6] = {v.w1_packed, v.w1_scale, v.w2_packed, v.w2_scale, v.w3_packed, v.w3_scale};
      auto* dst = static_cast<uint8_t*>(impl_->pool.data()) + uint64_t(slot_for[mi]) * slot_bytes_;
      bool direct = true;
      for (int p = 0; p < 6 && direct; ++p) direct = pinned(parts[p], part_bytes_[p]);
      if (direct) {
        for (int p = 0; p < 6; ++p)
          check_cuda(cudaMemcpyAsync(dst + part_off_[p], parts[p], part_bytes_[p], cudaMemcpyHostToDevice, cs),
                     "cudaMemcpyAsync (expert, pinned RAM tier)");
        any_direct = true;
        ++c_.direct;
        if (!ahead) ++c_.misses;
        c_.bytes_h2d += slot_bytes_;
        continue;
      }
      const int sb = staged++ % nstage;
      if (impl_->staged_used[sb]) impl_->staged[sb]->sync();  // its previous DMA has finished
      uint8_t* st = impl_->staging[sb].as<uint8_t>();
      // Host memory -> pinned staging over the pool's threads: one thread's memcpy (about 5 GB/s
      // from the page cache) would otherwise be the bound, not PCIe.
      constexpr uint64_t kPiece = 1ull << 20;
      std::vector<std::pair<int, uint64_t>> pieces;
      for (int p = 0; p < 6; ++p)
        for (uint64_t o = 0; o < part_bytes_[p]; o += kPiece) pieces.emplace_back(p, o);
      ThreadPool::global().parallel_for(pieces.size(), [&](size_t b, size_t e) {
        for (size_t i = b; i < e; ++i) {
          const auto [p, o] = pieces[i];
          std::memcpy(st + part_off_[p] + o, parts[p] + o, std::min(kPiece, part_bytes_[p] - o));
        }
      });
      check_cuda(cudaMemcpyAsync(dst, st, slot_bytes_, cudaMemcpyHostToDevice, cs), "cudaMemcpyAsync (expert)");
      impl_->staged[sb]->record(cs);
      impl_->staged_used[sb] = true;
      if (!ahead) ++c_.misses;
      c_.bytes_h2d += slot_bytes_;
    }
  } catch (...) {
    // A failed fill leaves no slot claiming an expert it does not hold, and the batch's RAM slots
    // stay pinned until the copies already queued from them are done.
    cudaStreamSynchronize(cs);
    for (int slot : slot_for) {
      map_.forget(slot);
      impl_->ahead_slot[size_t(slot)] = 0;
    }
    if (ahead) ahead_layer_ = -1;
    ++epoch_;
    batch.reset();
    throw;
  }
  return any_direct;
}

std::vector<std::pair<int, int>> VramExpertCache::resident_experts() const {
  std::vector<std::pair<int, int>> out;
  for (int s = 0; s < slots(); ++s)
    if (map_.holds(s)) out.emplace_back(map_.layer_of(s), map_.expert_of(s));
  std::sort(out.begin(), out.end());
  return out;
}

bool VramExpertCache::resident_views(int layer, int n, std::vector<MxExpert>& out) const {
  out.assign(size_t(std::max(0, n)), MxExpert{});
  for (int e = 0; e < n; ++e) {
    const int s = map_.find(layer, e);
    if (s < 0) return false;
    out[e] = view(s);
  }
  return true;
}

void VramExpertCache::evict_all() {
  impl_->release_ahead_batch();
  ahead_layer_ = -1;
  std::fill(impl_->ahead_slot.begin(), impl_->ahead_slot.end(), 0);
  ++epoch_;
  map_.clear();
}

void VramExpertCache::preload(const std::vector<int>& layers, int experts_per_layer) {
  if (uint64_t(layers.size()) * experts_per_layer > uint64_t(slots()))
    throw Error("resident experts need " + std::to_string(layers.size() * experts_per_layer) +
                " VRAM slots, the tier has " + std::to_string(slots()));
  std::vector<int> all(experts_per_layer);
  for (int e = 0; e < experts_per_layer; ++e) all[e] = e;
  std::vector<MxExpert> out;
  for (int l : layers) {
    for (int e0 = 0; e0 < experts_per_layer; e0 += 64) {
      const int n = std::min(64, experts_per_layer - e0);
      gather(l, std::span<const int>(all).subspan(e0, n), out, impl_->copy.opaque());
    }
  }
  impl_->copy.sync();
}

}  // namespace deltafin::cuda

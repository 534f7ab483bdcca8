// The Qwen3 drafter on a CUDA GPU (built with DELTAFIN_CUDA=ON only): the CPU forward of
// qwen3_model.cpp step for step, BF16 weights as shipped, fp32 activations and KV cache.
// q/k/v and gate/up are uploaded as one matrix each, so one GEMM reads both halves.
#include <algorithm>
#include <cstring>

#include "base/error.h"
#include "cuda/cuda_kernels.h"
#include "cuda/qwen3/qwen3_kernels.h"
#include "drafts/qwen3_model.h"
#include "drafts/qwen3_runner.h"

namespace deltafin {

namespace {

namespace cu = deltafin::cuda;
namespace qk = deltafin::cuda::qwen3;

// Rows per internal pass: bounds the attention score scratch on long prompts.
constexpr int kMaxRows = 128;
// GPU memory kept free beyond the weights, for sessions' caches and scratch.
constexpr uint64_t kDeviceMargin = uint64_t(512) << 20;

struct DevLayer {
  cu::DeviceBuffer qkv, o, gate_up, down, input_norm, post_norm, q_norm, k_norm;
};

cu::DeviceBuffer upload_rows(const std::vector<const Mat*>& parts) {
  size_t bytes = 0;
  for (const Mat* m : parts) {
    if (m->dtype != DType::BF16)
      throw Error("a Qwen3 weight is not BF16", "the GPU drafter takes BF16 checkpoints only; the CPU one is used");
    bytes += m->bytes();
  }
  cu::DeviceBuffer b(bytes);
  size_t off = 0;
  for (const Mat* m : parts) {
    b.upload(m->data, m->bytes(), off);
    off += m->bytes();
  }
  return b;
}

cu::DeviceBuffer upload_vec(const std::vector<float>& v) {
  cu::DeviceBuffer b(v.size() * sizeof(float));
  b.upload(v.data(), b.size());
  return b;
}

class CudaBackend : public Qwen3Backend {
 public:
  const char* device() const override { return "cuda"; }
  const Qwen3Config& config() const override { return cfg_; }
  std::unique_ptr<Qwen3Runner> session() const override;
  const Qwen3Model* host_model() const override { return host_; }

  static uint64_t weight_bytes(const Qwen3Config& c) {
    const uint64_t H = c.hidden, QW = uint64_t(c.heads) * c.head_dim, KW = uint64_t(c.kv_heads) * c.head_dim;
    const uint64_t per_layer = (QW + 2 * KW) * H + H * QW + 3 * uint64_t(c.intermediate) * H;
    return 2 * (per_layer * c.layers + uint64_t(c.vocab) * H * (c.tied ? 1 : 2));
  }

  static void check_shape(const Qwen3Config& c) {
    // The GEMM reads weight rows as 16-byte vectors and activation rows as float4.
    if (c.hidden % 8 || (c.heads * c.head_dim) % 8 || c.intermediate % 8 || c.head_dim % 4)
      throw Error("the Qwen3 shape is not one the GPU drafter supports (widths must be multiples of 8)");
  }

  static void check_memory(const Qwen3Config& c) {
    const cu::DeviceInfo info = cu::device_info();
    const uint64_t need = weight_bytes(c) + kDeviceMargin;
    if (info.free_bytes < need)
      throw Error("too little free GPU memory for the Qwen3 drafter (" + std::to_string(need >> 20) + " MiB needed, " +
                  std::to_string(info.free_bytes >> 20) + " MiB free)");
  }

  static std::unique_ptr<CudaBackend> upload(const Qwen3Model& m) {
    auto b = std::unique_ptr<CudaBackend>(new CudaBackend());
    b->cfg_ = m.config();
    b->host_ = &m;
    check_shape(b->cfg_);
    check_memory(b->cfg_);
    b->embed_ = upload_rows({&m.embed});
    if (!b->cfg_.tied) b->lm_head_own_ = upload_rows({&m.lm_head});
    b->final_norm_ = upload_vec(m.final_norm);
    for (const Qwen3LayerWeights& w : m.layers) {
      DevLayer d;
      d.qkv = upload_rows({&w.q_proj, &w.k_proj, &w.v_proj});
      d.o = upload_rows({&w.o_proj});
      d.gate_up = upload_rows({&w.gate, &w.up});
      d.down = upload_rows({&w.down});
      d.input_norm = upload_vec(w.input_norm);
      d.post_norm = upload_vec(w.post_attn_norm);
      d.q_norm = upload_vec(w.q_norm);
      d.k_norm = upload_vec(w.k_norm);
      b->layers_.push_back(std::move(d));
    }
    return b;
  }

  static std::unique_ptr<CudaBackend> synthesize(const Qwen3Config& c, uint64_t seed) {
    auto b = std::unique_ptr<CudaBackend>(new CudaBackend());
    b->cfg_ = c;
    check_shape(c);
    check_memory(c);
    const int64_t H = c.hidden, QW = int64_t(c.heads) * c.head_dim, KW = int64_t(c.kv_heads) * c.head_dim,
                  I = c.intermediate;
    uint64_t stream = seed * 1000;
    auto random = [&](int64_t rows, int64_t cols, float scale) {
      cu::DeviceBuffer d(size_t(rows * cols) * 2);
      qk::fill_random_bf16(d.data(), rows * cols, ++stream, scale);
      return d;
    };
    auto ones = [](int64_t n) {
      cu::DeviceBuffer d(size_t(n) * 4);
      qk::fill_f32(d.as<float>(), n, 1.0f);
      return d;
    };
    b->embed_ = random(c.vocab, H, 0.05f);
    if (!c.tied) b->lm_head_own_ = random(c.vocab, H, 0.05f);
    b->final_norm_ = ones(H);
    for (int l = 0; l < c.layers; ++l) {
      DevLayer d;
      d.qkv = random(QW + 2 * KW, H, 0.05f);
      d.o = random(H, QW, 0.02f);
      d.gate_up = random(2 * I, H, 0.05f);
      d.down = random(H, I, 0.02f);
      d.input_norm = ones(H);
      d.post_norm = ones(H);
      d.q_norm = ones(c.head_dim);
      d.k_norm = ones(c.head_dim);
      b->layers_.push_back(std::move(d));
    }
    cu::synchronize();
    return b;
  }

  const void* lm_head() const { return cfg_.tied ? embed_.data() : lm_head_own_.data(); }

  Qwen3Config cfg_;
  const Qwen3Model* host_ = nullptr;
  cu::DeviceBuffer embed_, lm_head_own_, final_norm_;
  std::vector<DevLayer> layers_;

 private:
  CudaBackend() = default;
};

class CudaSession : public Qwen3Runner {
 public:
  explicit CudaSession(const CudaBackend& b) : b_(b), k_(b.cfg_.layers), v_(b.cfg_.layers) {}

  void forward(std::span<const int32_t> ids, std::vector<float>& logits, bool all_logits) override {
    const int V = b_.cfg_.vocab;
    const int T = check_ids(ids);
    logits.resize(size_t(all_logits ? T : 1) * V);
    for (int done = 0; done < T; done += kMaxRows) {
      const int n = std::min(kMaxRows, T - done);
      const bool last_chunk = done + n == T;
      if (!all_logits && !last_chunk) {
        pass(ids.subspan(done, n), 0);
        continue;
      }
      const int rows = all_logits ? n : 1;
      pass(ids.subspan(done, n), rows);
      logits_.download(logits.data() + size_t(all_logits ? done : 0) * V, size_t(rows) * V * sizeof(float));
    }
  }

  int32_t forward_greedy(std::span<const int32_t> ids) override {
    const int T = check_ids(ids);
    for (int done = 0; done < T; done += kMaxRows) {
      const int n = std::min(kMaxRows, T - done);
      pass(ids.subspan(done, n), done + n == T ? 1 : 0);
    }
    qk::argmax(logits_.as<float>(), b_.cfg_.vocab, index_.as<int32_t>());
    int32_t id = 0;
    index_.download(&id, sizeof id);
    return id;
  }

  void truncate(int64_t n) override {
    if (n < 0 || n > n_past_)
      throw Error("Qwen3 GPU session truncate(" + std::to_string(n) + ") outside 0.." + std::to_string(n_past_));
    n_past_ = n;  // rows past n are overwritten by the next pass
  }

  int64_t n_past() const override { return n_past_; }

 private:
  int check_ids(std::span<const int32_t> ids) const {
    if (ids.empty()) throw Error("Qwen3 GPU forward with no tokens");
    for (int32_t id : ids)
      if (id < 0 || id >= b_.cfg_.vocab)
        throw Error("Qwen3 token id " + std::to_string(id) + " is outside the vocabulary");
    return static_cast<int>(ids.size());
  }

  static void grow(cu::DeviceBuffer& b, size_t bytes, size_t keep = 0) {
    if (b.size() >= bytes) return;
    cu::DeviceBuffer nb(bytes);
    if (keep) qk::copy_device(nb.data(), b.data(), keep);
    b = std::move(nb);
  }

  void reserve(int64_t ctx, int T, int logit_rows) {
    const Qwen3Config& c = b_.cfg_;
    const size_t KW = size_t(c.kv_heads) * c.head_dim, QW = size_t(c.heads) * c.head_dim, H = c.hidden;
    if (ctx > cap_) {
      const int64_t cap = std::max<int64_t>({ctx, 2 * cap_, 256});
      for (int l = 0; l < c.layers; ++l) {
        grow(k_[l], size_t(cap) * KW * 4, size_t(n_past_) * KW * 4);
        grow(v_[l], size_t(cap) * KW * 4, size_t(n_past_) * KW * 4);
      }
      cap_ = cap;
    }
    grow(ids_, size_t(T) * 4);
    grow(x_, size_t(T) * H * 4);
    grow(r_, size_t(T) * H * 4);
    grow(o_, size_t(T) * H * 4);
    grow(qkv_, size_t(T) * (QW + 2 * KW) * 4);
    grow(att_, size_t(T) * QW * 4);
    grow(gu_, size_t(T) * 2 * c.intermediate * 4);
    grow(h_, size_t(T) * c.intermediate * 4);
    grow(scores_, size_t(T) * c.heads * size_t(ctx) * 4);
    grow(logits_, size_t(std::max(logit_rows, 1)) * c.vocab * 4);
    grow(index_, 4);
  }

  // One pass of T <= kMaxRows rows; the last `logit_rows` rows' logits land in logits_.
  void pass(std::span<const int32_t> ids, int logit_rows) {
    const Qwen3Config& c = b_.cfg_;
    const int T = static_cast<int>(ids.size());
    const int64_t H = c.hidden, hd = c.head_dim, QW = int64_t(c.heads) * hd, KW = int64_t(c.kv_heads) * hd;
    const int64_t QKV = QW + 2 * KW, I = c.intermediate;
    reserve(n_past_ + T, T, logit_rows);
    ids_.upload(ids.data(), size_t(T) * 4);
    float* x = x_.as<float>();
    float* r = r_.as<float>();
    float* o = o_.as<float>();
    qk::embed_rows(b_.embed_.data(), H, ids_.as<int32_t>(), T, x);
    for (int l = 0; l < c.layers; ++l) {
      const DevLayer& w = b_.layers_[l];
      cu::rmsnorm(x, H, w.input_norm.data(), cu::WeightType::F32, H, T, c.rms_eps, r, H);
      cu::bf16_gemm(w.qkv.data(), QKV, H, r, H, T, qkv_.as<float>(), QKV);
      qk::qk_norm_rope_store(qkv_.as<float>(), T, c.heads, c.kv_heads, c.head_dim, w.q_norm.as<float>(),
                             w.k_norm.as<float>(), c.rms_eps, n_past_, c.rope_theta, k_[l].as<float>(),
                             v_[l].as<float>());
      qk::gqa_attention(qkv_.as<float>(), T, c.heads, c.kv_heads, c.head_dim, n_past_, k_[l].as<float>(),
                        v_[l].as<float>(), scores_.as<float>(), att_.as<float>());
      cu::bf16_gemm(w.o.data(), H, QW, att_.as<float>(), QW, T, o, H);
      qk::add_inplace(x, o, T * H);
      cu::rmsnorm(x, H, w.post_norm.data(), cu::WeightType::F32, H, T, c.rms_eps, r, H);
      cu::bf16_gemm(w.gate_up.data(), 2 * I, H, r, H, T, gu_.as<float>(), 2 * I);
      qk::silu_gate(gu_.as<float>(), T, I, h_.as<float>());
      cu::bf16_gemm(w.down.data(), H, I, h_.as<float>(), I, T, o, H);
      qk::add_inplace(x, o, T * H);
    }
    if (logit_rows > 0) {
      const int first = T - logit_rows;
      cu::rmsnorm(x + int64_t(first) * H, H, b_.final_norm_.data(), cu::WeightType::F32, H, logit_rows, c.rms_eps, r,
                  H);
      cu::bf16_gemm(b_.lm_head(), c.vocab, H, r, H, logit_rows, logits_.as<float>(), c.vocab);
    }
    n_past_ += T;
  }

  const CudaBackend& b_;
  std::vector<cu::DeviceBuffer> k_, v_;  // [layer][cap][kv_heads * head_dim]
  cu::DeviceBuffer ids_, x_, r_, o_, qkv_, att_, gu_, h_, scores_, logits_, index_;
  int64_t n_past_ = 0, cap_ = 0;
};

std::unique_ptr<Qwen3Runner> CudaBackend::session() const { return std::make_unique<CudaSession>(*this); }

template <class F>
std::unique_ptr<Qwen3Backend> guarded(F&& make, std::string* why) {
  try {
    std::string no_gpu;
    if (!cu::device_available(&no_gpu)) {
      if (why) *why = no_gpu;
      return nullptr;
    }
    return make();
  } catch (const std::exception& e) {
    if (why) *why = e.what();
    return nullptr;
  }
}

}  // namespace

bool qwen3_cuda_built() { return true; }

std::unique_ptr<Qwen3Backend> qwen3_cuda_backend(const Qwen3Model& m, std::string* why) {
  return guarded([&] { return CudaBackend::upload(m); }, why);
}

std::unique_ptr<Qwen3Backend> qwen3_cuda_synthetic_backend(const Qwen3Config& c, uint64_t seed, std::string* why) {
  return guarded([&] { return CudaBackend::synthesize(c, seed); }, why);
}

}  // namespace deltafin

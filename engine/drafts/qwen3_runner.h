#pragma once
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

namespace deltafin {

struct Qwen3Config;
class Qwen3Model;

// One Qwen3 sequence with a KV cache that can be cut back, on some device.
class Qwen3Runner {
 public:
  virtual ~Qwen3Runner() = default;
  // Runs `ids` at positions n_past().. and commits them; `logits` gets [rows][vocab]
  // (every row, or only the last when all_logits is false).
  virtual void forward(std::span<const int32_t> ids, std::vector<float>& logits, bool all_logits = false) = 0;
  // forward() and the first maximum of the last row's logits, without handing the logits over.
  virtual int32_t forward_greedy(std::span<const int32_t> ids);
  virtual void truncate(int64_t n) = 0;
  virtual int64_t n_past() const = 0;
};

// Qwen3 weights resident on one device; sessions share them.
class Qwen3Backend {
 public:
  virtual ~Qwen3Backend() = default;
  virtual const char* device() const = 0;  // "cpu" or "cuda"
  virtual const Qwen3Config& config() const = 0;
  virtual std::unique_ptr<Qwen3Runner> session() const = 0;
  // The checkpoint the weights came from (null for synthesized benchmark weights): where a
  // failing device session falls back to the CPU.
  virtual const Qwen3Model* host_model() const = 0;
};

enum class Qwen3Device { Auto, Cpu, Cuda };

// "auto" | "cpu" | "cuda"; throws Error listing the choices.
Qwen3Device parse_qwen3_device(const std::string& s);

// True when this build has the CUDA Qwen3 forward (DELTAFIN_CUDA=ON).
bool qwen3_cuda_built();

std::unique_ptr<Qwen3Backend> qwen3_cpu_backend(const Qwen3Model& m);

// The weights uploaded to the GPU; null with *why set when there is no CUDA build, no usable GPU,
// too little GPU memory, or weights the GPU path cannot take exactly.
std::unique_ptr<Qwen3Backend> qwen3_cuda_backend(const Qwen3Model& m, std::string* why);

// Random BF16 weights of `c`'s shape made on the GPU (benchmarks of real-size drafters without
// their checkpoint); null with *why set as above.
std::unique_ptr<Qwen3Backend> qwen3_cuda_synthetic_backend(const Qwen3Config& c, uint64_t seed, std::string* why);

// Cuda when asked, or for Auto when a GPU is usable; otherwise (and on any CUDA failure) the CPU.
// *note says which device was picked and, when it is not the GPU, why.
std::unique_ptr<Qwen3Backend> make_qwen3_backend(const Qwen3Model& m, Qwen3Device d, std::string* note);

}  // namespace deltafin

#include "placement/bandwidths.h"

#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <sstream>
#include <vector>

#include "base/error.h"
#include "base/thread_pool.h"
#include "placement/direct_read_probe.h"
#include "runtime/ops.h"

namespace deltafin::placement {

using json = nlohmann::json;

std::string Bandwidths::json() const {
  nlohmann::json j;
  j["disk_gbps"] = disk_gbps;
  j["ram_gbps"] = ram_gbps;
  j["cpu_bf16_gbps"] = cpu_bf16_gbps;
  j["cpu_mxfp4_gbps"] = cpu_mxfp4_gbps;
  j["cpu_gflops"] = cpu_gflops;
  j["cpu_threads"] = cpu_threads;
  j["h2d_gbps"] = h2d_gbps;
  j["hbm_gbps"] = hbm_gbps;
  j["gpu_tflops"] = gpu_tflops;
  j["source"] = source;
  j["probe_method"] = probe_method;
  return j.dump(2);
}

Bandwidths Bandwidths::from_json(const std::string& text, const std::string& origin) {
  Bandwidths b;
  try {
    const auto j = json::parse(text);
    b.disk_gbps = j.at("disk_gbps").get<double>();
    b.ram_gbps = j.at("ram_gbps").get<double>();
    b.cpu_bf16_gbps = j.at("cpu_bf16_gbps").get<double>();
    b.cpu_mxfp4_gbps = j.at("cpu_mxfp4_gbps").get<double>();
    b.cpu_gflops = j.at("cpu_gflops").get<double>();
    b.cpu_threads = j.value("cpu_threads", 0);
    b.h2d_gbps = j.value("h2d_gbps", 0.0);
    b.hbm_gbps = j.value("hbm_gbps", 0.0);
    b.gpu_tflops = j.value("gpu_tflops", 0.0);
    b.source = j.value("source", std::string());
    b.probe_method = j.value("probe_method", 1);
  } catch (const std::exception& e) {
    throw Error(origin + " is not a bandwidth record: " + e.what(), "delete it; the next plan probes again");
  }
  return b;
}

bool BandwidthOverrides::any() const {
  return disk_gbps || ram_gbps || cpu_bf16_gbps || cpu_mxfp4_gbps || cpu_gflops || h2d_gbps || hbm_gbps || gpu_tflops;
}

void BandwidthOverrides::apply(Bandwidths& b) const {
  auto set = [&](const std::optional<double>& v, double& dst, const char* flag) {
    if (!v) return;
    if (!(*v > 0)) throw Error(std::string("--") + flag + " must be above 0");
    dst = *v;
  };
  set(disk_gbps, b.disk_gbps, "disk-gbps");
  set(ram_gbps, b.ram_gbps, "ram-gbps");
  set(cpu_bf16_gbps, b.cpu_bf16_gbps, "cpu-bf16-gbps");
  set(cpu_mxfp4_gbps, b.cpu_mxfp4_gbps, "cpu-mxfp4-gbps");
  set(cpu_gflops, b.cpu_gflops, "cpu-gflops");
  set(h2d_gbps, b.h2d_gbps, "h2d-gbps");
  set(hbm_gbps, b.hbm_gbps, "hbm-gbps");
  set(gpu_tflops, b.gpu_tflops, "gpu-tflops");
  if (any()) b.source += b.source.empty() ? "given" : " + given";
}

Bandwidths assumed_desktop() {
  Bandwidths b;
  b.disk_gbps = 7;
  b.ram_gbps = 80;
  b.cpu_bf16_gbps = 60;
  b.cpu_mxfp4_gbps = 40;
  b.cpu_gflops = 1500;
  b.cpu_threads = 16;
  b.h2d_gbps = 25;
  b.hbm_gbps = 900;
  b.gpu_tflops = 1.5;  // fp64 (the forward's arithmetic) on a desktop GPU: 1/64 of its fp32 rate
  b.source = "assumed desktop";
  return b;
}

namespace {

using Clock = std::chrono::steady_clock;

// Each of `reps` passes of fn timed, in seconds, shortest first.
std::vector<double> pass_seconds(int reps, const std::function<void()>& fn) {
  std::vector<double> t;
  for (int r = 0; r < reps; ++r) {
    const auto t0 = Clock::now();
    fn();
    t.push_back(std::chrono::duration<double>(Clock::now() - t0).count());
  }
  std::sort(t.begin(), t.end());
  return t;
}

double best_seconds(int reps, const std::function<void()>& fn) { return pass_seconds(reps, fn).front(); }

// The median pass, for the memory-bound probes: on a shared host the best of a few passes is the
// rate of a quiet moment (the H100 machine of 2026-12-05 gave 33 to 117 GB/s minutes apart), and a
// token's layers read for a quarter of a second at whatever rate the neighbours leave.
double median_seconds(int reps, const std::function<void()>& fn) {
  const std::vector<double> t = pass_seconds(reps, fn);
  return t[t.size() / 2];
}

// Anonymous memory the probes read.
struct ProbeBuffer {
  void* p = nullptr;
  size_t n = 0;
  explicit ProbeBuffer(size_t bytes) : n(bytes) {
    p = ::mmap(nullptr, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) throw Error("cannot map " + std::to_string(n >> 20) + " MiB for the bandwidth probe");
    ::madvise(p, n, MADV_HUGEPAGE);  // as the expert cache and the spine's buffers are mapped
  }
  ~ProbeBuffer() { ::munmap(p, n); }
  uint8_t* bytes() const { return static_cast<uint8_t*>(p); }
};

// The largest CPU cache of this machine in bytes (sysfs; 0 when unknown).
uint64_t largest_cache_bytes() {
  uint64_t best = 0;
  for (int i = 0; i < 8; ++i) {
    std::ifstream f("/sys/devices/system/cpu/cpu0/cache/index" + std::to_string(i) + "/size");
    std::string v;
    if (!(f >> v) || v.empty()) continue;
    uint64_t n = std::strtoull(v.c_str(), nullptr, 10);
    if (v.back() == 'K') n <<= 10;
    else if (v.back() == 'M') n <<= 20;
    best = std::max(best, n);
  }
  return best;
}

// What the weight probes read per pass: four times the last-level cache and at least 1 GiB, so
// that every byte comes from RAM as the forward's weights do. One 117 MB matrix, read again and
// again, stayed in the 300 MiB L3 of the H100 machine of 2026-12-05: the probe said 142 GB/s and
// the forward's CPU layers ran at half that.
uint64_t probe_span_bytes() { return std::max<uint64_t>(1ull << 30, 4 * largest_cache_bytes()); }

}  // namespace

void probe_cpu(Bandwidths& b) {
  b.probe_method = kProbeMethod;
  ThreadPool& pool = ThreadPool::global();
  b.cpu_threads = pool.size();
  const uint64_t span = probe_span_bytes();
  {
    const size_t n = size_t(span);
    ProbeBuffer buf(n);
    std::memset(buf.p, 1, n);
    const uint64_t* w = static_cast<const uint64_t*>(buf.p);
    std::atomic<uint64_t> sink{0};  // keeps the reads from being optimized away
    const double s = median_seconds(7, [&] {
      pool.parallel_for(
          n / 8,
          [&](size_t a, size_t e) {
            uint64_t acc = 0;
            for (size_t i = a; i < e; ++i) acc += w[i];
            sink.fetch_add(acc, std::memory_order_relaxed);
          },
          4096);
    });
    b.ram_gbps = n / s / 1e9;
  }
  {
    // BF16 matrices of 7168 columns (K3's hidden size), 117 MB each, as many as the span holds,
    // each multiplied once per pass (one row: decode) as the layers' matrices are.
    const int64_t rows = 8192, cols = 7168;
    const uint64_t one = uint64_t(rows * cols * 2);
    const int count = int(std::max<uint64_t>(1, span / one));
    ProbeBuffer buf(size_t(one * count));
    for (size_t i = 0; i < buf.n / 2; ++i) reinterpret_cast<uint16_t*>(buf.p)[i] = uint16_t(0x3c00 + (i % 97));
    // fp64 activations: the forward's own kernels (its arithmetic is fp64, twice fp32's per flop).
    std::vector<double> x(size_t(cols) * 64, 0.5), y(size_t(rows) * 64);
    auto mat = [&](int i) { return Mat{buf.bytes() + uint64_t(i) * one, DType::BF16, rows, cols}; };
    const double s1 = median_seconds(7, [&] {
      for (int i = 0; i < count; ++i) matmul(mat(i), x.data(), 1, y.data());
    });
    b.cpu_bf16_gbps = double(buf.n) / s1 / 1e9;
    // 64 rows (prefill, verify) are bound by arithmetic: one matrix suffices.
    const double s64 = best_seconds(2, [&] { matmul(mat(0), x.data(), 64, y.data()); });
    b.cpu_gflops = 2.0 * rows * cols * 64 / s64 / 1e9;
  }
  {
    // MXFP4 rows of K3's expert shape (3584 columns), 16 experts' worth of gate rows per block,
    // as many blocks as the span holds.
    const int64_t rows = 3072 * 16, cols = 3584;
    const uint64_t packed_one = uint64_t(rows * cols / 2), scale_one = uint64_t(rows * cols / 32);
    const int count = int(std::max<uint64_t>(1, span / (packed_one + scale_one)));
    ProbeBuffer packed(size_t(packed_one * count)), scale(size_t(scale_one * count));
    for (size_t i = 0; i < packed.n; ++i) packed.bytes()[i] = uint8_t(i * 37 + 11);
    std::memset(scale.p, 120, scale.n);
    std::vector<double> x(static_cast<size_t>(cols), 0.25), y(static_cast<size_t>(rows));
    const double s = median_seconds(7, [&] {
      for (int i = 0; i < count; ++i)
        matmul_mxfp4(packed.bytes() + uint64_t(i) * packed_one, scale.bytes() + uint64_t(i) * scale_one, rows, cols,
                     x.data(), 1, y.data());
    });
    b.cpu_mxfp4_gbps = double(packed.n + scale.n) / s / 1e9;
  }
}

void probe_disk(Bandwidths& b, const std::string& model_root) {
  b.disk_gbps = measure_direct_read_gbps(model_root, 32, 16, nullptr, uint32_t(::time(nullptr)));
}

std::string bandwidth_cache_path(const std::string& model_root) {
  const std::string beside = model_root + "/deltafin-bandwidths.json";
  if (::access(model_root.c_str(), W_OK) == 0) return beside;
  std::string base;
  if (const char* x = std::getenv("XDG_CACHE_HOME"); x && *x) base = x;
  else if (const char* h = std::getenv("HOME"); h && *h) base = std::string(h) + "/.cache";
  else return beside;
  // One file per model folder: the folder's path with '/' made safe.
  std::string key = model_root;
  std::replace(key.begin(), key.end(), '/', '_');
  return base + "/deltafin/bandwidths" + key + ".json";
}

std::optional<Bandwidths> load_cached_bandwidths(const std::string& model_root) {
  const std::string path = bandwidth_cache_path(model_root);
  std::ifstream f(path);
  if (!f) return std::nullopt;
  std::stringstream ss;
  ss << f.rdbuf();
  Bandwidths b = Bandwidths::from_json(ss.str(), path);
  if (b.probe_method != kProbeMethod) return std::nullopt;
  b.source = "cache " + path + (b.source.empty() ? "" : " (" + b.source + ")");
  return b;
}

void save_cached_bandwidths(const std::string& model_root, const Bandwidths& b) {
  const std::string path = bandwidth_cache_path(model_root);
  const auto slash = path.rfind('/');
  if (slash != std::string::npos) ::mkdir(path.substr(0, slash).c_str(), 0755);
  std::ofstream f(path);
  if (f) f << b.json() << "\n";
}

}  // namespace deltafin::placement

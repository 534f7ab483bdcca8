#include "serve/state_snapshot.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zstd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>

#include "base/error.h"
#include "serve/token_hash.h"

namespace deltafin::serve {

namespace fs = std::filesystem;

namespace {

// 02: the state is fp64 (01's fp32 snapshots are not read: they are rebuilt).
constexpr char kMagic[8] = {'D', 'F', 'S', 'N', 'A', 'P', '0', '2'};
constexpr uint64_t kMaxIds = uint64_t(1) << 31;

struct FileCloser {
  void operator()(std::FILE* f) const {
    if (f) std::fclose(f);
  }
};
using File = std::unique_ptr<std::FILE, FileCloser>;

class ZstdWriter {
 public:
  ZstdWriter(std::FILE* f, int level) : f_(f), cctx_(ZSTD_createCCtx()), out_(ZSTD_CStreamOutSize()) {
    if (!cctx_) throw Error("zstd could not allocate a compression context");
    ZSTD_CCtx_setParameter(cctx_, ZSTD_c_compressionLevel, level);
  }
  ~ZstdWriter() { ZSTD_freeCCtx(cctx_); }
  void write(const void* data, size_t n) { pump(data, n, ZSTD_e_continue); }
  void finish() { pump(nullptr, 0, ZSTD_e_end); }

 private:
  void pump(const void* data, size_t n, ZSTD_EndDirective mode) {
    ZSTD_inBuffer in{data, n, 0};
    for (;;) {
      ZSTD_outBuffer out{out_.data(), out_.size(), 0};
      const size_t left = ZSTD_compressStream2(cctx_, &out, &in, mode);
      if (ZSTD_isError(left)) throw Error(std::string("zstd compression failed: ") + ZSTD_getErrorName(left));
      if (out.pos && std::fwrite(out_.data(), 1, out.pos, f_) != out.pos)
        throw Error("could not write a state snapshot", "check free disk space");
      if (mode == ZSTD_e_end ? left == 0 : in.pos == in.size) break;
    }
  }
  std::FILE* f_;
  ZSTD_CCtx* cctx_;
  std::vector<char> out_;
};

class ZstdReader {
 public:
  explicit ZstdReader(std::FILE* f) : f_(f), dctx_(ZSTD_createDCtx()), buf_(ZSTD_DStreamInSize()) {
    if (!dctx_) throw Error("zstd could not allocate a decompression context");
  }
  ~ZstdReader() { ZSTD_freeDCtx(dctx_); }
  // Fills exactly n bytes or throws: a short or corrupt frame is a corrupt snapshot.
  void read(void* dst, size_t n) {
    ZSTD_outBuffer out{dst, n, 0};
    while (out.pos < out.size) {
      if (in_.pos == in_.size) {
        in_.size = std::fread(buf_.data(), 1, buf_.size(), f_);
        in_.pos = 0;
        in_.src = buf_.data();
        if (in_.size == 0) throw Error("state snapshot is truncated", "delete it; it will be rebuilt");
      }
      const size_t r = ZSTD_decompressStream(dctx_, &out, &in_);
      if (ZSTD_isError(r))
        throw Error(std::string("state snapshot is corrupt: ") + ZSTD_getErrorName(r), "delete it; it will be rebuilt");
    }
  }
  template <class T>
  T value() {
    T v;
    read(&v, sizeof v);
    return v;
  }

 private:
  std::FILE* f_;
  ZSTD_DCtx* dctx_;
  std::vector<char> buf_;
  ZSTD_inBuffer in_{nullptr, 0, 0};
};

void write_values(ZstdWriter& w, const std::vector<double>& v) {
  const uint64_t n = v.size();
  w.write(&n, sizeof n);
  w.write(v.data(), n * sizeof(double));
}

void read_values(ZstdReader& r, std::vector<double>& v, uint64_t expected, const std::string& what) {
  const uint64_t n = r.value<uint64_t>();
  if (n != expected)
    throw Error("state snapshot does not fit this model (" + what + ")", "delete it; it will be rebuilt");
  v.resize(n);
  r.read(v.data(), n * sizeof(double));
}

bool read_header(std::FILE* f, SnapshotHeader& h) {
  char magic[8];
  uint64_t n = 0;
  if (std::fread(magic, 1, 8, f) != 8 || std::memcmp(magic, kMagic, 8) != 0) return false;
  if (std::fread(&h.model_fingerprint, 8, 1, f) != 1 || std::fread(&h.prefix_hash, 8, 1, f) != 1 ||
      std::fread(&n, 8, 1, f) != 1 || n > kMaxIds)
    return false;
  h.ids.resize(n);
  if (n && std::fread(h.ids.data(), sizeof(int32_t), n, f) != n) return false;
  return token_hash(h.ids) == h.prefix_hash;
}

uint64_t mix(uint64_t h, const std::string& bytes) {
  for (unsigned char c : bytes) {
    h ^= c;
    h *= 0x100000001b3ull;
  }
  return h;
}

std::string file_text(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

}  // namespace

void write_state_snapshot(const std::string& path, uint64_t fingerprint, std::span<const int32_t> ids,
                          const K3State& state, int zstd_level) {
  const std::string tmp = path + ".tmp";
  {
    // Owner-only: a snapshot holds a conversation's state, from which its text can be recovered.
    const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd >= 0) ::fchmod(fd, 0600);  // an older leftover of this name keeps its mode otherwise
    File f(fd >= 0 ? ::fdopen(fd, "wb") : nullptr);
    if (!f) {
      if (fd >= 0) ::close(fd);
      throw Error("could not create " + tmp, "check that the snapshot folder is writable");
    }
    const uint64_t hash = token_hash(ids), n = ids.size();
    bool ok = std::fwrite(kMagic, 1, 8, f.get()) == 8 && std::fwrite(&fingerprint, 8, 1, f.get()) == 1 &&
              std::fwrite(&hash, 8, 1, f.get()) == 1 && std::fwrite(&n, 8, 1, f.get()) == 1 &&
              (n == 0 || std::fwrite(ids.data(), sizeof(int32_t), n, f.get()) == n);
    if (!ok) throw Error("could not write " + tmp, "check free disk space");
    ZstdWriter w(f.get(), zstd_level);
    const uint32_t layers = static_cast<uint32_t>(state.kda.size());
    w.write(&layers, sizeof layers);
    w.write(&state.n_past, sizeof state.n_past);
    for (uint32_t l = 0; l < layers; ++l) {
      write_values(w, state.kda[l].S);
      write_values(w, state.kda[l].conv);
      write_values(w, state.mla[l].cache);
    }
    w.finish();
    if (std::fflush(f.get()) != 0) throw Error("could not write " + tmp, "check free disk space");
  }
  std::error_code ec;
  fs::rename(tmp, path, ec);
  if (ec) {
    fs::remove(tmp, ec);
    throw Error("could not move a snapshot into place at " + path);
  }
}

bool is_outdated_snapshot(const std::string& path) {
  File f(std::fopen(path.c_str(), "rb"));
  char magic[8];
  return f && std::fread(magic, 1, 8, f.get()) == 8 && std::memcmp(magic, kMagic, 6) == 0 &&
         std::memcmp(magic, kMagic, 8) != 0;
}

bool read_snapshot_header(const std::string& path, SnapshotHeader& out) {
  File f(std::fopen(path.c_str(), "rb"));
  return f && read_header(f.get(), out);
}

K3State read_state_snapshot(const std::string& path, const K3Config& c, SnapshotHeader& header) {
  File f(std::fopen(path.c_str(), "rb"));
  if (!f) throw Error("could not open state snapshot " + path);
  if (!read_header(f.get(), header))
    throw Error("state snapshot " + path + " has a bad header", "delete it; it will be rebuilt");
  ZstdReader r(f.get());
  const uint32_t layers = r.value<uint32_t>();
  if (layers != uint32_t(c.layers)) throw Error("state snapshot does not fit this model (layer count)");
  K3State st;
  st.n_past = r.value<int64_t>();
  if (st.n_past != int64_t(header.ids.size())) throw Error("state snapshot is inconsistent (token count)");
  st.kda.resize(layers);
  st.mla.resize(layers);
  const uint64_t S = uint64_t(c.kda_heads) * c.kda_head_dim * c.kda_head_dim;
  const uint64_t conv = uint64_t(3) * (c.conv_kernel - 1) * c.kda_dim();
  for (uint32_t l = 0; l < layers; ++l) {
    const bool mla = c.is_mla[l];
    read_values(r, st.kda[l].S, mla ? 0 : S, "KDA state");
    read_values(r, st.kda[l].conv, mla ? 0 : conv, "conv state");
    read_values(r, st.mla[l].cache, mla ? uint64_t(st.n_past) * c.mla_cache_width() : 0, "MLA cache");
  }
  return st;
}

uint64_t model_fingerprint(const std::string& root) {
  uint64_t h = kTokenHashSeed;
  h = mix(h, file_text(fs::path(root) / "config.json"));
  h = mix(h, file_text(fs::path(root) / "model.safetensors.index.json"));
  std::vector<std::string> shards;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(root, ec))
    if (e.path().extension() == ".safetensors") shards.push_back(e.path().filename().string());
  std::sort(shards.begin(), shards.end());
  for (const std::string& s : shards) {
    const fs::path p = fs::path(root) / s;
    const auto size = fs::file_size(p, ec);
    const auto mtime = fs::last_write_time(p, ec).time_since_epoch().count();
    h = mix(h, s + ":" + std::to_string(size) + ":" + std::to_string(mtime));
  }
  return h;
}

}  // namespace deltafin::serve

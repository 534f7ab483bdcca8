#pragma once
#include <sys/types.h>

#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

namespace deltafin {

// The presence table of a stream install (.deltafin/stream-presence.bin, the
// layout StreamPresence saves), shared by every process and every source that
// uses the install: the Studio's engine, a `deltafin serve` it started,
// `deltafin cache evict`, a second `deltafin run`. The file is mapped shared and
// changed in place, so all of them see one authoritative table.
//
// Two kinds of lock, both released by the kernel when their holder dies:
// - the table lock (flock on .deltafin/stream.lock): every read or change of the
//   table happens under it; its holder is the only one deciding at that moment;
// - pins (shared byte-range OFD locks on .deltafin/stream-pins.lock, one byte per
//   expert slot): an expert pinned by anyone is never evicted. Sources pin an
//   expert under the table lock before they confirm it present (or start
//   fetching it) and unpin when its views are released; an evictor claims an
//   expert with an exclusive byte lock, which fails while anyone pins it.
//
// Each instance has its own open files, so two instances in one process
// exclude each other exactly like two processes do.
class SharedStreamPresence {
 public:
  explicit SharedStreamPresence(const std::string& model_root);  // throws Error when missing or damaged
  ~SharedStreamPresence();
  SharedStreamPresence(const SharedStreamPresence&) = delete;
  SharedStreamPresence& operator=(const SharedStreamPresence&) = delete;

  // Holds the table lock; the accessors below may be used only while one is alive.
  class Guard {
   public:
    explicit Guard(SharedStreamPresence& p);
    ~Guard();
    Guard(const Guard&) = delete;
    Guard& operator=(const Guard&) = delete;

   private:
    SharedStreamPresence& p_;
    std::unique_lock<std::mutex> local_;
  };

  int layers() const { return layers_; }
  int experts() const { return experts_; }
  int shards() const { return shards_; }

  // A shard's state byte: 0 its non-expert part is missing, 1 present (not yet
  // checked as a whole), 2 every byte present and matching the Hub's SHA-256.
  uint8_t shard_state(int shard) const;
  void set_shard_state(int shard, uint8_t state);
  bool spine_done(int shard) const { return shard_state(shard) != 0; }
  bool all_spine_done() const;

  bool present(int layer, int expert) const { return last_use(layer, expert) != 0; }
  uint64_t last_use(int layer, int expert) const;
  void touch(int layer, int expert);
  void clear(int layer, int expert);
  size_t present_count() const;
  // Makes the table durable: called after marking experts absent and before punching their bytes.
  void flush();

  // Pins (see above). pin() needs the table lock; unpin() does not.
  void pin(int layer, int expert);
  void unpin(int layer, int expert);
  // Under the table lock: true when nobody pins the expert; the claim lasts until release_claim().
  bool claim(int layer, int expert);
  void release_claim(int layer, int expert);

 private:
  void map_table();
  void unmap_table();
  void remap_if_replaced();
  size_t idx(int layer, int expert) const;
  uint8_t* tick_ptr(size_t i) const;
  void byte_lock(int fd, size_t at, short type, bool wait);

  std::string root_, table_path_;
  int table_fd_ = -1, lock_fd_ = -1, pin_fd_ = -1, claim_fd_ = -1;
  dev_t dev_ = 0;
  ino_t ino_ = 0;
  uint8_t* map_ = nullptr;
  size_t map_bytes_ = 0;
  int layers_ = 0, experts_ = 0, shards_ = 0;
  std::mutex mu_;      // threads of this instance take the table lock one at a time
  std::mutex pin_mu_;  // pin_count_
  std::vector<uint32_t> pin_count_;
};

// The table lock's file, also taken by StreamPresence::save (setup) so that a
// rewrite never interleaves with changes made in place.
std::string stream_table_lock_path(const std::string& presence_path);

}  // namespace deltafin

#pragma once
// Answers to identical requests. A greedy or seeded request is a pure function of its prompt ids
// and generation settings (the engine is exact and batch-invariant), so a repeat can be answered
// from memory without running the model. Bounded by entries and bytes, least recently used out.
#include <cstdint>
#include <list>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

namespace deltafin::serve {

// A tool call the model made, as the client sees it (the id is the server's: K3 makes none).
struct ToolCallResult {
  std::string id, name, arguments;
};

struct MemoAnswer {
  std::string reasoning, content;
  std::vector<ToolCallResult> tool_calls;
  std::string finish_reason;
  int completion_tokens = 0, reasoning_tokens = 0;
};

class ResponseMemo {
 public:
  ResponseMemo(size_t max_entries, uint64_t max_bytes) : max_entries_(max_entries), max_bytes_(max_bytes) {}

  std::optional<MemoAnswer> find(const std::string& key);
  void put(const std::string& key, MemoAnswer answer);
  size_t count() const;

 private:
  using Item = std::pair<std::string, MemoAnswer>;
  static uint64_t size_of(const Item& i);
  mutable std::mutex mu_;
  std::list<Item> items_;  // most recently used first
  std::unordered_map<std::string, std::list<Item>::iterator> index_;
  size_t max_entries_;
  uint64_t max_bytes_, bytes_ = 0;
};

}  // namespace deltafin::serve

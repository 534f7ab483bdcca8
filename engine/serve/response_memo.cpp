#include "serve/response_memo.h"

namespace deltafin::serve {

uint64_t ResponseMemo::size_of(const Item& i) {
  uint64_t calls = 0;
  for (const ToolCallResult& c : i.second.tool_calls) calls += c.id.size() + c.name.size() + c.arguments.size() + 32;
  return i.first.size() + i.second.reasoning.size() + i.second.content.size() + i.second.finish_reason.size() + calls +
         64;
}

std::optional<MemoAnswer> ResponseMemo::find(const std::string& key) {
  std::lock_guard lk(mu_);
  auto it = index_.find(key);
  if (it == index_.end()) return std::nullopt;
  items_.splice(items_.begin(), items_, it->second);
  return it->second->second;
}

void ResponseMemo::put(const std::string& key, MemoAnswer answer) {
  std::lock_guard lk(mu_);
  if (max_entries_ == 0 || index_.count(key)) return;
  Item item{key, std::move(answer)};
  const uint64_t b = size_of(item);
  if (b > max_bytes_) return;
  items_.push_front(std::move(item));
  index_[items_.front().first] = items_.begin();
  bytes_ += b;
  while (items_.size() > max_entries_ || bytes_ > max_bytes_) {
    bytes_ -= size_of(items_.back());
    index_.erase(items_.back().first);
    items_.pop_back();
  }
}

size_t ResponseMemo::count() const {
  std::lock_guard lk(mu_);
  return items_.size();
}

}  // namespace deltafin::serve

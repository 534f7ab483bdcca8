#pragma once
#include <string>
#include <string_view>
#include <vector>

namespace deltafin::serve {

// Applies OpenAI `stop` sequences to streamed text: text that might be the start of a stop
// sequence is held back until it is known not to be, so a stop sequence is never shown, even
// when it arrives split across tokens.
class StopMatcher {
 public:
  explicit StopMatcher(std::vector<std::string> stops) : stops_(std::move(stops)) {}

  // The text now safe to show. After a match, stopped() is true and later text is dropped.
  std::string push(std::string_view text);
  // Generation ended another way: the held text was not a stop sequence after all.
  std::string finish();
  bool stopped() const { return stopped_; }

 private:
  std::vector<std::string> stops_;
  std::string held_;
  bool stopped_ = false;
};

}  // namespace deltafin::serve

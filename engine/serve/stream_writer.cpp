#include "serve/stream_writer.h"

namespace deltafin::serve {

using nlohmann::json;

namespace {

const std::string kDone = "data: [DONE]\n\n";

class ChatStreamWriter final : public StreamWriter {
 public:
  ChatStreamWriter(ResponseMeta meta, bool usage) : meta_(std::move(meta)), usage_(usage) {}
  std::string begin() override {
    return sse_event(chat_chunk_json(meta_, {{"role", "assistant"}, {"content", ""}}, std::nullopt, usage_));
  }
  std::string delta(const Delta& d) override {
    std::string out;
    if (!d.reasoning.empty())
      out += sse_event(chat_chunk_json(meta_, {{"reasoning_content", d.reasoning}}, std::nullopt, usage_));
    // An answer token's log probabilities travel with its text (a token whose text is still held
    // back, mid-character or mid-stop-sequence, sends an empty content).
    if (!d.content.empty() || !d.logprobs.empty())
      out += sse_event(chat_chunk_json(meta_, {{"content", d.content}}, std::nullopt, usage_,
                                       d.logprobs.empty() ? json(nullptr) : d.logprobs));
    // One delta per completed call, whole: K3 writes a call's arguments before it closes.
    if (!d.tool_calls.empty()) {
      out += sse_event(chat_chunk_json(meta_, {{"tool_calls", tool_calls_json(d.tool_calls, calls_sent_, true)}},
                                       std::nullopt, usage_));
      calls_sent_ += d.tool_calls.size();
    }
    return out;
  }
  std::string end(const JobResult& r) override {
    std::string out = sse_event(chat_chunk_json(meta_, json::object(), r.finish_reason, usage_));
    if (usage_) out += sse_event(usage_chunk_json(meta_, true, r));
    return out + kDone;
  }
  std::string error(const ApiError& e) override { return sse_event(e.body()) + kDone; }

 private:
  ResponseMeta meta_;
  bool usage_;
  size_t calls_sent_ = 0;
};

class CompletionStreamWriter final : public StreamWriter {
 public:
  CompletionStreamWriter(ResponseMeta meta, bool usage) : meta_(std::move(meta)), usage_(usage) {}
  std::string begin() override { return {}; }
  std::string delta(const Delta& d) override {
    if (d.content.empty() && d.logprobs.empty()) return {};
    json lp = nullptr;
    if (!d.logprobs.empty()) {
      lp = legacy_logprobs_json(d.logprobs, offset_);
      for (const json& e : d.logprobs) offset_ += e.value("token", std::string()).size();
    }
    return sse_event(text_chunk_json(meta_, d.content, std::nullopt, usage_, lp));
  }
  std::string end(const JobResult& r) override {
    std::string out = sse_event(text_chunk_json(meta_, "", r.finish_reason, usage_));
    if (usage_) out += sse_event(usage_chunk_json(meta_, false, r));
    return out + kDone;
  }
  std::string error(const ApiError& e) override { return sse_event(e.body()) + kDone; }

 private:
  ResponseMeta meta_;
  bool usage_;
  size_t offset_ = 0;  // text_offset of the next token
};

}  // namespace

std::unique_ptr<StreamWriter> make_chat_stream_writer(const ResponseMeta& meta, bool include_usage) {
  return std::make_unique<ChatStreamWriter>(meta, include_usage);
}

std::unique_ptr<StreamWriter> make_completion_stream_writer(const ResponseMeta& meta, bool include_usage) {
  return std::make_unique<CompletionStreamWriter>(meta, include_usage);
}

std::string sse_named_event(const std::string& name, const json& data) {
  return "event: " + name + "\n" + sse_event(data);
}

}  // namespace deltafin::serve

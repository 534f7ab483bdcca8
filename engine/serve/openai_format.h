#pragma once
// The JSON shapes of OpenAI responses and stream chunks, built from a job's result.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "serve/job_queue.h"

namespace deltafin::serve {

struct ResponseMeta {
  std::string id;  // chatcmpl-..., cmpl-..., msg_... or resp_...
  int64_t created = 0;
  std::string model;
};

// `prefix`: "chatcmpl-", "cmpl-", "msg_" (Messages API) or "resp_" (Responses API).
ResponseMeta new_response_meta(const std::string& prefix, const std::string& model);

nlohmann::json usage_json(const JobResult& r);
nlohmann::json chat_completion_json(const ResponseMeta& m, const JobResult& r);
nlohmann::json text_completion_json(const ResponseMeta& m, const JobResult& r);

// One streamed chunk. `delta` is the chat delta object or the completion text; `finish` is
// null until the last choice chunk; `with_usage_null` adds "usage": null as OpenAI does when
// stream_options.include_usage is set.
nlohmann::json chat_chunk_json(const ResponseMeta& m, const nlohmann::json& delta,
                               const std::optional<std::string>& finish, bool with_usage_null,
                               const nlohmann::json& logprobs = nullptr);
// The message's tool_calls array; `first_index` numbers them (stream deltas carry an index).
nlohmann::json tool_calls_json(const std::vector<ToolCallResult>& calls, size_t first_index, bool with_index);
nlohmann::json text_chunk_json(const ResponseMeta& m, const std::string& text, const std::optional<std::string>& finish,
                               bool with_usage_null, const nlohmann::json& logprobs = nullptr);
// The completions API's (legacy) logprobs object from per-token entries as the chat API has them
// ({token, logprob, bytes, top_logprobs}): {tokens, token_logprobs, top_logprobs (token ->
// logprob, one object per token), text_offset}. `offset`: the bytes of text before the first
// entry (text_offset counts UTF-8 bytes of the completion).
nlohmann::json legacy_logprobs_json(const nlohmann::json& entries, size_t offset = 0);
// The final usage-only chunk: empty choices.
nlohmann::json usage_chunk_json(const ResponseMeta& m, bool chat, const JobResult& r);

// JSON text that never throws on bad UTF-8 (it becomes U+FFFD).
std::string dump_json(const nlohmann::json& j);
std::string sse_event(const nlohmann::json& j);

}  // namespace deltafin::serve

#pragma once
// Anthropic's Messages API (POST /v1/messages) over the same engine: a request becomes the
// equivalent OpenAI chat request (so it is validated and rendered by the same code), and the
// answer goes back as a message with thinking, text and tool_use blocks, JSON or streamed events.
#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "serve/api_error.h"
#include "serve/job_queue.h"
#include "serve/openai_format.h"
#include "serve/stream_writer.h"

namespace deltafin::serve {

// The OpenAI chat body for an Anthropic request; ApiError 400 naming the Anthropic field.
nlohmann::json anthropic_to_chat_request(const nlohmann::json& body);
nlohmann::json anthropic_message_json(const ResponseMeta& meta, const JobResult& r);
// {"type": "error", "error": {"type", "message"}}
nlohmann::json anthropic_error_json(const ApiError& e);
std::unique_ptr<StreamWriter> make_anthropic_stream_writer(const ResponseMeta& meta, int prompt_tokens);

}  // namespace deltafin::serve

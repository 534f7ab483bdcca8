#pragma once
// OpenAI's Responses API (POST /v1/responses), the subset coding agents use, over the same engine:
// `input` (text or message / function_call / function_call_output / reasoning items),
// `instructions`, function `tools`, `tool_choice`, `text.format`, `reasoning.effort`,
// `max_output_tokens`, streaming. Nothing is stored: `previous_response_id` and `store: true`
// are refused.
#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "serve/job_queue.h"
#include "serve/openai_format.h"
#include "serve/stream_writer.h"

namespace deltafin::serve {

// The OpenAI chat body for a Responses request; ApiError 400 naming the Responses field.
nlohmann::json responses_to_chat_request(const nlohmann::json& body);
nlohmann::json response_json(const ResponseMeta& meta, const JobResult& r);
std::unique_ptr<StreamWriter> make_responses_stream_writer(const ResponseMeta& meta);

}  // namespace deltafin::serve

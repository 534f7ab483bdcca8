#pragma once
// Turns an OpenAI request body into what the engine worker runs, refusing (ApiError 400, naming
// the field) everything that would not be honoured exactly. Runs on HTTP threads.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "runtime/sampler.h"
#include "tokenizer/chat_template.h"
#include "tokenizer/tokenizer.h"

namespace deltafin::serve {

// The conversation and rendering options of an OpenAI chat request, validated (ApiError 400
// naming the field), before anything is tokenized. `deltafin render-chat` renders these too.
struct ChatRequestParts {
  std::vector<ChatMessage> messages;
  ChatOptions options;
};
ChatRequestParts parse_chat_messages(const nlohmann::json& body, size_t max_messages = 4096);

struct GenerationRequest {
  enum class Kind { Chat, Completion };
  Kind kind = Kind::Completion;
  std::string model;
  std::vector<int32_t> prompt;
  // Chat: tokens before the assistant's opening (the last turn boundary); 0 = none.
  size_t turn_boundary = 0;
  bool thinking = false;  // chat: the prompt ends inside <|open|>think
  int max_tokens = 16;
  SamplingParams sampling;
  bool seeded = false;  // greedy or seed given: the answer is a pure function of the request
  std::vector<std::string> stop;
  bool stream = false, include_usage = false;
  // Log probabilities of each answer token (chat) or generated token (completions), from the fp32
  // logits, with the `top_logprobs` most likely alternatives.
  bool logprobs = false;
  int top_logprobs = 0;
  bool parallel_tool_calls = true;  // false: only the first call the model makes is returned

  // Kept from validation until tokenize_request(), which runs once the queue admitted the request.
  ChatRequestParts chat_parts;
  std::optional<std::string> prompt_text;  // completions: a text prompt
  nlohmann::json length_fields;            // max_tokens / max_completion_tokens as sent
  bool tokenized = false;
};

struct ParseContext {
  const Tokenizer* tokenizer = nullptr;
  std::string model_id;                    // the name served (the model folder's, or --model-id)
  std::vector<std::string> model_aliases;  // other names accepted for it
  int max_tokens_limit = 4096;             // tokens per response
  int context_limit = 4096;                // prompt + response tokens
  float default_temperature = 1.f, default_top_p = 1.f;
  size_t max_messages = 4096;
};

// Validation (cheap: no tokenizing), then tokenization (the prompt ids, the length limits), which
// the server runs only once the queue has room for the request. ApiError 400/404 from both.
GenerationRequest validate_chat_request(const nlohmann::json& body, const ParseContext& ctx);
GenerationRequest validate_completion_request(const nlohmann::json& body, const ParseContext& ctx);
void tokenize_request(GenerationRequest& r, const ParseContext& ctx);

// Parses JSON text; refuses bodies nested deeper than `max_depth` before parsing them, since
// the parser's cost (and, for some inputs, its stack) grows with depth.
nlohmann::json parse_json_body(std::string_view body, int max_depth = 64);

GenerationRequest parse_chat_request(const nlohmann::json& body, const ParseContext& ctx);
GenerationRequest parse_completion_request(const nlohmann::json& body, const ParseContext& ctx);

}  // namespace deltafin::serve

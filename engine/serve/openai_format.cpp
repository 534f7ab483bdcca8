#include "serve/openai_format.h"

#include <atomic>
#include <chrono>
#include <cstdio>
#include <random>

namespace deltafin::serve {

using nlohmann::json;

ResponseMeta new_response_meta(const std::string& prefix, const std::string& model) {
  static std::atomic<uint64_t> counter{0};
  static const uint64_t salt = std::random_device{}();
  char id[64];
  std::snprintf(id, sizeof id, "%s%08llx%08llx", prefix.c_str(), static_cast<unsigned long long>(salt & 0xffffffffu),
                static_cast<unsigned long long>(++counter));
  const int64_t now =
      std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
  return ResponseMeta{id, now, model};
}

json usage_json(const JobResult& r) {
  return {{"prompt_tokens", r.prompt_tokens},
          {"completion_tokens", r.completion_tokens},
          {"total_tokens", r.prompt_tokens + r.completion_tokens},
          {"prompt_tokens_details", {{"cached_tokens", r.cached_tokens}}},
          // OpenAI's predicted-output counters carry the drafter's: guesses the target kept and
          // guesses it rejected (they never change the text, only how fast it came).
          {"completion_tokens_details",
           {{"reasoning_tokens", r.reasoning_tokens},
            {"accepted_prediction_tokens", r.draft_accepted},
            {"rejected_prediction_tokens", r.draft_proposed - r.draft_accepted}}}};
}

json tool_calls_json(const std::vector<ToolCallResult>& calls, size_t first_index, bool with_index) {
  json out = json::array();
  for (size_t i = 0; i < calls.size(); ++i) {
    json c = {{"id", calls[i].id},
              {"type", "function"},
              {"function", {{"name", calls[i].name}, {"arguments", calls[i].arguments}}}};
    if (with_index) c["index"] = first_index + i;
    out.push_back(std::move(c));
  }
  return out;
}

json chat_completion_json(const ResponseMeta& m, const JobResult& r) {
  // OpenAI sends a null content with tool calls and no text.
  json msg = {{"role", "assistant"},
              {"content", r.content.empty() && !r.tool_calls.empty() ? json(nullptr) : json(r.content)},
              {"refusal", nullptr}};
  if (!r.reasoning.empty()) msg["reasoning_content"] = r.reasoning;
  if (!r.tool_calls.empty()) msg["tool_calls"] = tool_calls_json(r.tool_calls, 0, false);
  const json logprobs = r.logprobs.is_null() ? json(nullptr) : json{{"content", r.logprobs}, {"refusal", nullptr}};
  return {{"id", m.id},
          {"object", "chat.completion"},
          {"created", m.created},
          {"model", m.model},
          {"system_fingerprint", nullptr},
          {"choices",
           json::array({{{"index", 0}, {"message", msg}, {"logprobs", logprobs}, {"finish_reason", r.finish_reason}}})},
          {"usage", usage_json(r)}};
}

json legacy_logprobs_json(const json& entries, size_t offset) {
  json tokens = json::array(), token_logprobs = json::array(), top = json::array(), offsets = json::array();
  for (const json& e : entries) {
    const std::string token = e.value("token", std::string());
    tokens.push_back(token);
    token_logprobs.push_back(e.value("logprob", 0.0));
    json alts = json::object();
    if (e.contains("top_logprobs"))
      for (const json& a : e["top_logprobs"]) alts[a.value("token", std::string())] = a.value("logprob", 0.0);
    top.push_back(std::move(alts));
    offsets.push_back(offset);
    offset += token.size();
  }
  return {{"tokens", tokens}, {"token_logprobs", token_logprobs}, {"top_logprobs", top}, {"text_offset", offsets}};
}

json text_completion_json(const ResponseMeta& m, const JobResult& r) {
  const json logprobs = r.logprobs.is_null() ? json(nullptr) : legacy_logprobs_json(r.logprobs);
  return {
      {"id", m.id},
      {"object", "text_completion"},
      {"created", m.created},
      {"model", m.model},
      {"system_fingerprint", nullptr},
      {"choices",
       json::array({{{"index", 0}, {"text", r.content}, {"logprobs", logprobs}, {"finish_reason", r.finish_reason}}})},
      {"usage", usage_json(r)}};
}

static json finish_value(const std::optional<std::string>& f) { return f ? json(*f) : json(nullptr); }

json chat_chunk_json(const ResponseMeta& m, const json& delta, const std::optional<std::string>& finish,
                     bool with_usage_null, const json& logprobs) {
  const json lp = logprobs.is_null() ? json(nullptr) : json{{"content", logprobs}, {"refusal", nullptr}};
  json j = {
      {"id", m.id},
      {"object", "chat.completion.chunk"},
      {"created", m.created},
      {"model", m.model},
      {"system_fingerprint", nullptr},
      {"choices",
       json::array({{{"index", 0}, {"delta", delta}, {"logprobs", lp}, {"finish_reason", finish_value(finish)}}})}};
  if (with_usage_null) j["usage"] = nullptr;
  return j;
}

json text_chunk_json(const ResponseMeta& m, const std::string& text, const std::optional<std::string>& finish,
                     bool with_usage_null, const json& logprobs) {
  json j = {
      {"id", m.id},
      {"object", "text_completion"},
      {"created", m.created},
      {"model", m.model},
      {"system_fingerprint", nullptr},
      {"choices",
       json::array({{{"index", 0}, {"text", text}, {"logprobs", logprobs}, {"finish_reason", finish_value(finish)}}})}};
  if (with_usage_null) j["usage"] = nullptr;
  return j;
}

json usage_chunk_json(const ResponseMeta& m, bool chat, const JobResult& r) {
  return {{"id", m.id},
          {"object", chat ? "chat.completion.chunk" : "text_completion"},
          {"created", m.created},
          {"model", m.model},
          {"system_fingerprint", nullptr},
          {"choices", json::array()},
          {"usage", usage_json(r)}};
}

std::string dump_json(const json& j) { return j.dump(-1, ' ', false, json::error_handler_t::replace); }

std::string sse_event(const json& j) { return "data: " + dump_json(j) + "\n\n"; }

}  // namespace deltafin::serve

#include "serve/anthropic_messages.h"

#include <set>

namespace deltafin::serve {

using nlohmann::json;

namespace {

const json* field(const json& obj, const char* name) {
  auto it = obj.find(name);
  if (it == obj.end() || it->is_null()) return nullptr;
  return &*it;
}

void only_known(const json& obj, const std::set<std::string>& known, const std::string& prefix) {
  for (auto it = obj.begin(); it != obj.end(); ++it)
    if (!known.count(it.key()))
      throw ApiError(400, "Unrecognized field: " + prefix + it.key(), prefix + it.key(), "invalid_request_error",
                     "unknown_parameter");
}

// The text of a string or of an array of text blocks.
std::string block_text(const json& content, const std::string& param) {
  if (content.is_string()) return content.get<std::string>();
  if (!content.is_array()) throw bad_field(param, "'" + param + "' must be a string or an array of text blocks.");
  std::string text;
  for (size_t i = 0; i < content.size(); ++i) {
    const json& b = content[i];
    if (!b.is_object() || b.value("type", "") != "text" || !b.contains("text") || !b["text"].is_string())
      throw bad_field(param + "[" + std::to_string(i) + "]",
                      "only text blocks are supported here (K3 is served text-only).");
    text += b["text"].get<std::string>();
  }
  return text;
}

json tool_input(const std::string& arguments) {
  const json j = json::parse(arguments, nullptr, false);
  if (j.is_object()) return j;
  return json{{"arguments", arguments}};  // the model wrote arguments that are not a JSON object
}

std::string stop_reason(const JobResult& r) {
  if (r.finish_reason == "tool_calls") return "tool_use";
  if (r.finish_reason == "length") return "max_tokens";
  return "end_turn";
}

}  // namespace

json anthropic_to_chat_request(const json& body) {
  only_known(body,
             {"model", "max_tokens", "messages", "system", "tools", "tool_choice", "stop_sequences", "temperature",
              "top_p", "top_k", "stream", "thinking", "metadata", "service_tier"},
             "");
  json chat = json::object();
  for (const char* k : {"model", "temperature", "top_p", "top_k", "stream"})
    if (body.contains(k)) chat[k] = body[k];
  const json* mt = field(body, "max_tokens");
  if (!mt)
    throw ApiError(400, "max_tokens: Field required", "max_tokens", "invalid_request_error",
                   "missing_required_parameter");
  chat["max_tokens"] = *mt;
  if (const json* s = field(body, "stop_sequences")) chat["stop"] = *s;
  // Anthropic's default is no extended thinking; "enabled" lets K3 think (its budget is K3's own).
  chat["reasoning_effort"] = "none";
  if (const json* t = field(body, "thinking")) {
    if (!t->is_object() || !t->contains("type") || !(*t)["type"].is_string())
      throw bad_field("thinking", "'thinking' must be {\"type\": \"enabled\" | \"disabled\"}.");
    const std::string type = (*t)["type"];
    if (type == "enabled") chat.erase("reasoning_effort");
    else if (type != "disabled") throw bad_field("thinking.type", "'thinking.type' must be 'enabled' or 'disabled'.");
  }
  json messages = json::array();
  if (const json* sys = field(body, "system"))
    messages.push_back({{"role", "system"}, {"content", block_text(*sys, "system")}});
  const json* msgs = field(body, "messages");
  if (!msgs || !msgs->is_array())
    throw ApiError(400, "messages: Field required (an array)", "messages", "invalid_request_error",
                   "missing_required_parameter");
  for (size_t i = 0; i < msgs->size(); ++i) {
    const json& m = (*msgs)[i];
    const std::string p = "messages[" + std::to_string(i) + "]";
    if (!m.is_object()) throw bad_field(p, "each message must be an object.");
    only_known(m, {"role", "content"}, p + ".");
    const std::string role = m.value("role", "");
    if (role != "user" && role != "assistant") throw bad_field(p + ".role", "'role' must be 'user' or 'assistant'.");
    const json* content = field(m, "content");
    if (!content) throw bad_field(p + ".content", "each message needs 'content'.");
    if (content->is_string()) {
      messages.push_back({{"role", role}, {"content", *content}});
      continue;
    }
    if (!content->is_array()) throw bad_field(p + ".content", "'content' must be a string or an array of blocks.");
    json out = {{"role", role}, {"content", ""}};
    std::string text, reasoning;
    json calls = json::array();
    for (size_t k = 0; k < content->size(); ++k) {
      const json& b = (*content)[k];
      const std::string q = p + ".content[" + std::to_string(k) + "]";
      const std::string type = b.is_object() ? b.value("type", "") : "";
      if (type == "text") {
        text += block_text(json::array({b}), q);
      } else if (type == "thinking" && role == "assistant") {
        if (b.contains("thinking") && b["thinking"].is_string()) reasoning += b["thinking"].get<std::string>();
      } else if (type == "tool_use" && role == "assistant") {
        if (!b.contains("id") || !b["id"].is_string() || !b.contains("name") || !b["name"].is_string())
          throw bad_field(q, "a tool_use block needs a string 'id' and 'name'.");
        const json input = b.contains("input") ? b["input"] : json::object();
        calls.push_back(
            {{"id", b["id"]}, {"type", "function"}, {"function", {{"name", b["name"]}, {"arguments", input.dump()}}}});
      } else if (type == "tool_result" && role == "user") {
        if (!b.contains("tool_use_id") || !b["tool_use_id"].is_string())
          throw bad_field(q + ".tool_use_id", "a tool_result needs 'tool_use_id'.");
        std::string result =
            b.contains("content") && !b["content"].is_null() ? block_text(b["content"], q + ".content") : "";
        messages.push_back({{"role", "tool"}, {"tool_call_id", b["tool_use_id"]}, {"content", result}});
      } else {
        throw bad_field(q + ".type",
                        "content blocks of type '" + type + "' are not supported in " + role + " messages here.");
      }
    }
    if (role == "user" && text.empty() && !content->empty()) continue;  // only tool results
    out["content"] = text;
    if (!reasoning.empty()) out["reasoning_content"] = reasoning;
    if (!calls.empty()) out["tool_calls"] = calls;
    messages.push_back(out);
  }
  chat["messages"] = messages;
  if (const json* tools = field(body, "tools")) {
    if (!tools->is_array()) throw bad_field("tools", "'tools' must be an array.");
    json out = json::array();
    for (size_t i = 0; i < tools->size(); ++i) {
      const json& t = (*tools)[i];
      const std::string q = "tools[" + std::to_string(i) + "]";
      if (!t.is_object() || !t.contains("name") || !t["name"].is_string())
        throw bad_field(q + ".name", "each tool needs a string 'name'.");
      if (t.contains("type") && t["type"] != "custom")
        throw bad_field(q + ".type",
                        "server tools are not available here: declare client tools with 'name' and 'input_schema'.");
      json fn = {{"name", t["name"]}};
      if (t.contains("description")) fn["description"] = t["description"];
      if (t.contains("input_schema")) fn["parameters"] = t["input_schema"];
      out.push_back({{"type", "function"}, {"function", fn}});
    }
    chat["tools"] = out;
  }
  if (const json* tc = field(body, "tool_choice")) {
    const std::string type = tc->is_object() ? tc->value("type", "") : "";
    if (type == "auto") chat["tool_choice"] = "auto";
    else if (type == "any") chat["tool_choice"] = "required";
    else if (type == "none") chat["tool_choice"] = "none";
    else if (type == "tool")
      throw ApiError(400,
                     "tool_choice {\"type\": \"tool\"} is not supported: K3 cannot be told which tool to call. Use "
                     "{\"type\": \"any\"}.",
                     "tool_choice", "invalid_request_error", "unsupported_parameter");
    else throw bad_field("tool_choice", "'tool_choice.type' must be 'auto', 'any' or 'none'.");
    if (tc->is_object() && tc->contains("disable_parallel_tool_use") && (*tc)["disable_parallel_tool_use"] == true)
      chat["parallel_tool_calls"] = false;
  }
  return chat;
}

json anthropic_message_json(const ResponseMeta& meta, const JobResult& r) {
  json content = json::array();
  if (!r.reasoning.empty()) content.push_back({{"type", "thinking"}, {"thinking", r.reasoning}, {"signature", ""}});
  if (!r.content.empty() || r.tool_calls.empty()) content.push_back({{"type", "text"}, {"text", r.content}});
  for (const ToolCallResult& c : r.tool_calls)
    content.push_back({{"type", "tool_use"}, {"id", c.id}, {"name", c.name}, {"input", tool_input(c.arguments)}});
  return {{"id", meta.id},
          {"type", "message"},
          {"role", "assistant"},
          {"model", meta.model},
          {"content", content},
          {"stop_reason", stop_reason(r)},
          {"stop_sequence", nullptr},
          {"usage",
           {{"input_tokens", r.prompt_tokens},
            {"output_tokens", r.completion_tokens},
            {"cache_read_input_tokens", r.cached_tokens}}}};
}

json anthropic_error_json(const ApiError& e) {
  std::string type = e.type();
  if (e.status() == 404) type = "not_found_error";
  else if (e.status() == 429) type = "rate_limit_error";
  else if (e.status() == 401) type = "authentication_error";
  else if (e.status() >= 500) type = "api_error";
  return {{"type", "error"}, {"error", {{"type", type}, {"message", e.what()}}}};
}

namespace {

class AnthropicStreamWriter final : public StreamWriter {
 public:
  AnthropicStreamWriter(ResponseMeta meta, int prompt_tokens) : meta_(std::move(meta)), prompt_tokens_(prompt_tokens) {}
  std::string begin() override {
    const json msg = {{"id", meta_.id},           {"type", "message"},
                      {"role", "assistant"},      {"model", meta_.model},
                      {"content", json::array()}, {"stop_reason", nullptr},
                      {"stop_sequence", nullptr}, {"usage", {{"input_tokens", prompt_tokens_}, {"output_tokens", 0}}}};
    return sse_named_event("message_start", {{"type", "message_start"}, {"message", msg}});
  }
  std::string delta(const Delta& d) override {
    std::string out;
    if (!d.reasoning.empty()) out += text_block("thinking", "thinking_delta", "thinking", d.reasoning);
    if (!d.content.empty()) out += text_block("text", "text_delta", "text", d.content);
    for (const ToolCallResult& c : d.tool_calls) {
      out += close_block();
      out += sse_named_event(
          "content_block_start",
          {{"type", "content_block_start"},
           {"index", index_},
           {"content_block", {{"type", "tool_use"}, {"id", c.id}, {"name", c.name}, {"input", json::object()}}}});
      out += sse_named_event(
          "content_block_delta",
          {{"type", "content_block_delta"},
           {"index", index_},
           {"delta", {{"type", "input_json_delta"}, {"partial_json", tool_input(c.arguments).dump()}}}});
      open_ = "tool_use";
      out += close_block();
    }
    return out;
  }
  std::string end(const JobResult& r) override {
    std::string out = close_block();
    out += sse_named_event("message_delta", {{"type", "message_delta"},
                                             {"delta", {{"stop_reason", stop_reason(r)}, {"stop_sequence", nullptr}}},
                                             {"usage", {{"output_tokens", r.completion_tokens}}}});
    return out + sse_named_event("message_stop", {{"type", "message_stop"}});
  }
  std::string error(const ApiError& e) override { return sse_named_event("error", anthropic_error_json(e)); }

 private:
  std::string close_block() {
    if (open_.empty()) return {};
    open_.clear();
    return sse_named_event("content_block_stop", {{"type", "content_block_stop"}, {"index", index_++}});
  }
  std::string text_block(const std::string& type, const std::string& delta_type, const std::string& key,
                         const std::string& text) {
    std::string out;
    if (open_ != type) {
      out += close_block();
      json block = {{"type", type}, {key, ""}};
      if (type == "thinking") block["signature"] = "";
      out += sse_named_event("content_block_start",
                             {{"type", "content_block_start"}, {"index", index_}, {"content_block", block}});
      open_ = type;
    }
    return out + sse_named_event("content_block_delta", {{"type", "content_block_delta"},
                                                         {"index", index_},
                                                         {"delta", {{"type", delta_type}, {key, text}}}});
  }

  ResponseMeta meta_;
  int prompt_tokens_;
  std::string open_;  // the type of the block being streamed ("" = none)
  int index_ = 0;
};

}  // namespace

std::unique_ptr<StreamWriter> make_anthropic_stream_writer(const ResponseMeta& meta, int prompt_tokens) {
  return std::make_unique<AnthropicStreamWriter>(meta, prompt_tokens);
}

}  // namespace deltafin::serve

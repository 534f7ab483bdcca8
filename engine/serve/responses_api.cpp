#include "serve/responses_api.h"

#include <set>

#include "serve/api_error.h"

namespace deltafin::serve {

using nlohmann::json;

namespace {

const json* field(const json& obj, const char* name) {
  auto it = obj.find(name);
  if (it == obj.end() || it->is_null()) return nullptr;
  return &*it;
}

std::string content_text(const json& content, const std::string& param) {
  if (content.is_string()) return content.get<std::string>();
  if (!content.is_array()) throw bad_field(param, "'" + param + "' must be a string or an array of text parts.");
  std::string text;
  for (size_t i = 0; i < content.size(); ++i) {
    const json& part = content[i];
    const std::string type = part.is_object() ? part.value("type", "") : "";
    if ((type != "input_text" && type != "output_text" && type != "text") || !part.contains("text") ||
        !part["text"].is_string())
      throw bad_field(param + "[" + std::to_string(i) + "].type",
                      "only text parts are supported (K3 is served text-only).");
    text += part["text"].get<std::string>();
  }
  return text;
}

json usage(const JobResult& r) {
  return {{"input_tokens", r.prompt_tokens},
          {"input_tokens_details", {{"cached_tokens", r.cached_tokens}}},
          {"output_tokens", r.completion_tokens},
          {"output_tokens_details", {{"reasoning_tokens", r.reasoning_tokens}}},
          {"total_tokens", r.prompt_tokens + r.completion_tokens}};
}

json reasoning_item(const std::string& id, const std::string& text) {
  return {{"type", "reasoning"},
          {"id", id},
          {"summary", json::array()},
          {"content", json::array({{{"type", "reasoning_text"}, {"text", text}}})}};
}
json message_item(const std::string& id, const std::string& text, const std::string& status) {
  return {{"type", "message"},
          {"id", id},
          {"status", status},
          {"role", "assistant"},
          {"content", json::array({{{"type", "output_text"}, {"text", text}, {"annotations", json::array()}}})}};
}
json call_item(const ToolCallResult& c, const std::string& status) {
  return {{"type", "function_call"},
          {"id", "fc_" + c.id.substr(c.id.find('_') + 1)},
          {"call_id", c.id},
          {"name", c.name},
          {"arguments", status == "completed" ? c.arguments : std::string()},
          {"status", status}};
}

json response_shell(const ResponseMeta& meta, const std::string& status) {
  return {{"id", meta.id},    {"object", "response"},         {"created_at", meta.created},
          {"status", status}, {"model", meta.model},          {"output", json::array()},
          {"error", nullptr}, {"incomplete_details", nullptr}};
}

}  // namespace

json responses_to_chat_request(const json& body) {
  static const std::set<std::string> known = {"model",
                                              "input",
                                              "instructions",
                                              "tools",
                                              "tool_choice",
                                              "parallel_tool_calls",
                                              "text",
                                              "reasoning",
                                              "max_output_tokens",
                                              "temperature",
                                              "top_p",
                                              "stream",
                                              "store",
                                              "previous_response_id",
                                              "include",
                                              "metadata",
                                              "user",
                                              "prompt_cache_key",
                                              "service_tier",
                                              "truncation"};
  for (auto it = body.begin(); it != body.end(); ++it)
    if (!known.count(it.key()))
      throw ApiError(400, "Unrecognized request argument supplied: " + it.key(), it.key(), "invalid_request_error",
                     "unknown_parameter");
  if (field(body, "previous_response_id"))
    throw ApiError(400,
                   "'previous_response_id' is not supported: this server stores no responses; send the whole input.",
                   "previous_response_id", "invalid_request_error", "unsupported_parameter");
  if (const json* st = field(body, "store"); st && *st != false)
    throw ApiError(400, "'store' must be false: this server stores no responses.", "store", "invalid_request_error",
                   "unsupported_parameter");
  if (const json* tr = field(body, "truncation"); tr && *tr != "disabled")
    throw bad_field("truncation", "only 'disabled' truncation is supported: a prompt that does not fit is refused.");

  json chat = json::object();
  for (const char* k :
       {"model", "temperature", "top_p", "stream", "parallel_tool_calls", "tool_choice", "user", "metadata"})
    if (body.contains(k)) chat[k] = body[k];
  if (const json* m = field(body, "max_output_tokens")) chat["max_tokens"] = *m;
  if (const json* r = field(body, "reasoning")) {
    if (!r->is_object()) throw bad_field("reasoning", "'reasoning' must be an object.");
    if (const json* e = field(*r, "effort")) {
      // K3's levels are low, high and max; the Responses API's map onto them, nearest up.
      const std::string effort = e->is_string() ? e->get<std::string>() : "";
      if (effort == "none") chat["reasoning_effort"] = "none";
      else if (effort == "minimal" || effort == "low") chat["reasoning_effort"] = "low";
      else if (effort == "medium" || effort == "high") chat["reasoning_effort"] = "high";
      else if (effort == "xhigh" || effort == "max") chat["reasoning_effort"] = "max";
      else throw bad_field("reasoning.effort", "'reasoning.effort' must be none, minimal, low, medium, high or xhigh.");
    }
  }
  if (const json* t = field(body, "text")) {
    if (!t->is_object()) throw bad_field("text", "'text' must be an object.");
    if (const json* f = field(*t, "format")) {
      const std::string type = f->is_object() ? f->value("type", "") : "";
      if (type == "json_schema") {
        json js = {{"name", f->value("name", "response")}};
        if (f->contains("schema")) js["schema"] = (*f)["schema"];
        if (f->contains("strict")) js["strict"] = (*f)["strict"];
        chat["response_format"] = {{"type", "json_schema"}, {"json_schema", js}};
      } else if (type == "json_object" || type == "text") {
        chat["response_format"] = {{"type", type}};
      } else {
        throw bad_field("text.format.type", "'text.format.type' must be text, json_object or json_schema.");
      }
    }
  }
  if (const json* tools = field(body, "tools")) {
    if (!tools->is_array()) throw bad_field("tools", "'tools' must be an array.");
    json out = json::array();
    for (size_t i = 0; i < tools->size(); ++i) {
      const json& t = (*tools)[i];
      const std::string q = "tools[" + std::to_string(i) + "]";
      if (!t.is_object() || t.value("type", "") != "function")
        throw bad_field(q + ".type", "only tools of type 'function' are supported (no hosted tools here).");
      json fn = {{"name", t.value("name", "")}};
      if (t.contains("description")) fn["description"] = t["description"];
      if (t.contains("parameters")) fn["parameters"] = t["parameters"];
      out.push_back({{"type", "function"}, {"function", fn}});
    }
    chat["tools"] = out;
  }
  if (const json* tc = field(body, "tool_choice"); tc && tc->is_object() && tc->value("type", "") == "function")
    chat["tool_choice"] = {{"type", "function"},
                           {"function", {{"name", tc->value("name", "")}}}};  // refused by the chat parser

  json messages = json::array();
  if (const json* ins = field(body, "instructions"))
    messages.push_back({{"role", "system"}, {"content", content_text(*ins, "instructions")}});
  const json* input = field(body, "input");
  if (!input)
    throw ApiError(400, "you must provide an input parameter", "input", "invalid_request_error",
                   "missing_required_parameter");
  if (input->is_string()) {
    messages.push_back({{"role", "user"}, {"content", *input}});
  } else if (input->is_array()) {
    std::string pending_reasoning;
    auto assistant = [&]() -> json& {
      // Calls and text of one model turn gather into one assistant message.
      if (messages.empty() || messages.back()["role"] != "assistant") {
        messages.push_back({{"role", "assistant"}, {"content", ""}});
        if (!pending_reasoning.empty()) messages.back()["reasoning_content"] = pending_reasoning;
        pending_reasoning.clear();
      }
      return messages.back();
    };
    for (size_t i = 0; i < input->size(); ++i) {
      const json& item = (*input)[i];
      const std::string p = "input[" + std::to_string(i) + "]";
      if (!item.is_object()) throw bad_field(p, "each input item must be an object.");
      const std::string type = item.value("type", item.contains("role") ? "message" : "");
      if (type == "message") {
        const std::string role = item.value("role", "");
        if (role != "user" && role != "assistant" && role != "system" && role != "developer")
          throw bad_field(p + ".role", "'role' must be user, assistant, system or developer.");
        const std::string text = item.contains("content") ? content_text(item["content"], p + ".content") : "";
        if (role == "assistant") {
          json& a = assistant();
          a["content"] = a["content"].get<std::string>() + text;
        } else {
          messages.push_back({{"role", role}, {"content", text}});
        }
      } else if (type == "function_call") {
        if (!item.contains("call_id") || !item.contains("name") || !item["name"].is_string())
          throw bad_field(p, "a function_call item needs 'call_id', 'name' and 'arguments'.");
        json& a = assistant();
        if (!a.contains("tool_calls")) a["tool_calls"] = json::array();
        a["tool_calls"].push_back(
            {{"id", item["call_id"]},
             {"type", "function"},
             {"function", {{"name", item["name"]}, {"arguments", item.value("arguments", std::string("{}"))}}}});
      } else if (type == "function_call_output") {
        if (!item.contains("call_id")) throw bad_field(p + ".call_id", "a function_call_output item needs 'call_id'.");
        const json out = item.contains("output") ? item["output"] : json("");
        messages.push_back({{"role", "tool"},
                            {"tool_call_id", item["call_id"]},
                            {"content", out.is_string() ? out.get<std::string>() : content_text(out, p + ".output")}});
      } else if (type == "reasoning") {
        std::string text;
        for (const char* k : {"content", "summary"})
          if (item.contains(k) && item[k].is_array() && text.empty())
            for (const json& part : item[k])
              if (part.is_object() && part.contains("text") && part["text"].is_string())
                text += part["text"].get<std::string>();
        pending_reasoning += text;
      } else {
        throw bad_field(p + ".type", "input items of type '" + type + "' are not supported.");
      }
    }
  } else {
    throw bad_field("input", "'input' must be a string or an array of items.");
  }
  chat["messages"] = messages;
  return chat;
}

json response_json(const ResponseMeta& meta, const JobResult& r) {
  json out = response_shell(meta, r.finish_reason == "length" ? "incomplete" : "completed");
  if (r.finish_reason == "length") out["incomplete_details"] = {{"reason", "max_output_tokens"}};
  const std::string base = meta.id.substr(meta.id.find('_') + 1);
  if (!r.reasoning.empty()) out["output"].push_back(reasoning_item("rs_" + base, r.reasoning));
  if (!r.content.empty() || r.tool_calls.empty())
    out["output"].push_back(message_item("msg_" + base, r.content, "completed"));
  for (const ToolCallResult& c : r.tool_calls) out["output"].push_back(call_item(c, "completed"));
  out["output_text"] = r.content;
  out["usage"] = usage(r);
  return out;
}

namespace {

class ResponsesStreamWriter final : public StreamWriter {
 public:
  explicit ResponsesStreamWriter(ResponseMeta meta)
      : meta_(std::move(meta)), base_(meta_.id.substr(meta_.id.find('_') + 1)) {}
  std::string begin() override {
    return event("response.created", {{"response", response_shell(meta_, "in_progress")}}) +
           event("response.in_progress", {{"response", response_shell(meta_, "in_progress")}});
  }
  std::string delta(const Delta& d) override {
    std::string out;
    if (!d.reasoning.empty()) {
      if (open_ != "reasoning") {
        out += close_item();
        out += event("response.output_item.added", {{"output_index", index_}, {"item", reasoning_item(item_id(), "")}});
        open_ = "reasoning";
      }
      text_ += d.reasoning;
      out += event("response.reasoning_text.delta",
                   {{"item_id", item_id()}, {"output_index", index_}, {"content_index", 0}, {"delta", d.reasoning}});
    }
    if (!d.content.empty()) {
      if (open_ != "message") {
        out += close_item();
        json item = message_item(item_id("msg_"), "", "in_progress");
        item["content"] = json::array();
        out += event("response.output_item.added", {{"output_index", index_}, {"item", item}});
        out += event("response.content_part.added",
                     {{"item_id", item_id("msg_")},
                      {"output_index", index_},
                      {"content_index", 0},
                      {"part", {{"type", "output_text"}, {"text", ""}, {"annotations", json::array()}}}});
        open_ = "message";
      }
      text_ += d.content;
      out +=
          event("response.output_text.delta",
                {{"item_id", item_id("msg_")}, {"output_index", index_}, {"content_index", 0}, {"delta", d.content}});
    }
    for (const ToolCallResult& c : d.tool_calls) {
      out += close_item();
      const json added = call_item(c, "in_progress");
      out += event("response.output_item.added", {{"output_index", index_}, {"item", added}});
      out += event("response.function_call_arguments.delta",
                   {{"item_id", added["id"]}, {"output_index", index_}, {"delta", c.arguments}});
      out += event("response.function_call_arguments.done",
                   {{"item_id", added["id"]}, {"output_index", index_}, {"arguments", c.arguments}});
      out += event("response.output_item.done", {{"output_index", index_}, {"item", call_item(c, "completed")}});
      ++index_;
    }
    return out;
  }
  std::string end(const JobResult& r) override {
    std::string out = close_item();
    const json full = response_json(meta_, r);
    return out +
           event(full["status"] == "completed" ? "response.completed" : "response.incomplete", {{"response", full}});
  }
  std::string error(const ApiError& e) override {
    json failed = response_shell(meta_, "failed");
    failed["error"] = {{"code", e.code().empty() ? e.type() : e.code()}, {"message", e.what()}};
    return event("response.failed", {{"response", failed}});
  }

 private:
  std::string item_id(const std::string& prefix = "rs_") const { return prefix + base_ + "_" + std::to_string(index_); }
  std::string event(const std::string& type, json data) {
    data["type"] = type;
    data["sequence_number"] = seq_++;
    return sse_named_event(type, data);
  }
  std::string close_item() {
    std::string out;
    if (open_ == "reasoning") {
      out += event("response.reasoning_text.done",
                   {{"item_id", item_id()}, {"output_index", index_}, {"content_index", 0}, {"text", text_}});
      out += event("response.output_item.done", {{"output_index", index_}, {"item", reasoning_item(item_id(), text_)}});
    } else if (open_ == "message") {
      const json part = {{"type", "output_text"}, {"text", text_}, {"annotations", json::array()}};
      out += event("response.output_text.done",
                   {{"item_id", item_id("msg_")}, {"output_index", index_}, {"content_index", 0}, {"text", text_}});
      out += event("response.content_part.done",
                   {{"item_id", item_id("msg_")}, {"output_index", index_}, {"content_index", 0}, {"part", part}});
      out += event("response.output_item.done",
                   {{"output_index", index_}, {"item", message_item(item_id("msg_"), text_, "completed")}});
    } else {
      return out;
    }
    open_.clear();
    text_.clear();
    ++index_;
    return out;
  }

  ResponseMeta meta_;
  std::string base_;
  std::string open_, text_;
  int index_ = 0;
  uint64_t seq_ = 0;
};

}  // namespace

std::unique_ptr<StreamWriter> make_responses_stream_writer(const ResponseMeta& meta) {
  return std::make_unique<ResponsesStreamWriter>(meta);
}

}  // namespace deltafin::serve

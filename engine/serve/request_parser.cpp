#include "serve/request_parser.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <set>

#include "base/error.h"
#include "serve/api_error.h"
#include "tokenizer/chat_template.h"

namespace deltafin::serve {

using nlohmann::json;

namespace {

std::string type_name(const json& j) {
  if (j.is_number_integer()) return "integer";
  if (j.is_number()) return "number";
  return j.type_name();
}

ApiError wrong_type(const std::string& param, const std::string& expected, const json& got) {
  return ApiError(400, "Invalid type for '" + param + "': expected " + expected + ", but got " + type_name(got) + ".",
                  param, "invalid_request_error", "invalid_type");
}

// Null and absent mean the same thing in OpenAI requests.
const json* field(const json& obj, const char* name) {
  auto it = obj.find(name);
  if (it == obj.end() || it->is_null()) return nullptr;
  return &*it;
}

void only_known_keys(const json& obj, const std::set<std::string>& known, const std::string& prefix) {
  for (auto it = obj.begin(); it != obj.end(); ++it)
    if (!known.count(it.key()))
      throw ApiError(400, "Unrecognized request argument supplied: " + prefix + it.key(), prefix + it.key(),
                     "invalid_request_error", "unknown_parameter");
}

bool get_bool(const json& obj, const char* name, bool fallback) {
  const json* f = field(obj, name);
  if (!f) return fallback;
  if (!f->is_boolean()) throw wrong_type(name, "a boolean", *f);
  return f->get<bool>();
}

double get_number(const json& obj, const char* name, double lo, double hi, double fallback) {
  const json* f = field(obj, name);
  if (!f) return fallback;
  if (!f->is_number()) throw wrong_type(name, "a number", *f);
  const double v = f->get<double>();
  if (!std::isfinite(v) || v < lo || v > hi)
    throw bad_field(name, "'" + std::string(name) + "' must be between " + json(lo).dump() + " and " + json(hi).dump() +
                              ", got " + f->dump() + ".");
  return v;
}

// Integers in [lo, hi]; returns `fallback` when absent.
int64_t get_int(const json& obj, const char* name, int64_t lo, int64_t hi, int64_t fallback) {
  const json* f = field(obj, name);
  if (!f) return fallback;
  if (!f->is_number_integer()) throw wrong_type(name, "an integer", *f);
  if (f->is_number_unsigned() && f->get<uint64_t>() > uint64_t(std::numeric_limits<int64_t>::max()))
    throw bad_field(name, "'" + std::string(name) + "' must be at most " + std::to_string(hi) + ".");
  const int64_t v = f->get<int64_t>();
  if (v < lo || v > hi)
    throw bad_field(name, "'" + std::string(name) + "' must be between " + std::to_string(lo) + " and " +
                              std::to_string(hi) + ", got " + std::to_string(v) + ".");
  return v;
}

// Fields that are accepted only at the value that means "off", since nothing else is honoured.
void must_be_off(const json& obj, const char* name, const std::string& why, const std::string& prefix = {}) {
  const json* f = field(obj, name);
  if (!f) return;
  const bool off = (f->is_boolean() && !f->get<bool>()) || (f->is_number() && f->get<double>() == 0.0) ||
                   (f->is_array() && f->empty()) || (f->is_object() && f->empty());
  if (!off)
    throw ApiError(400, "'" + prefix + name + "' is not supported: " + why, prefix + name, "invalid_request_error",
                   "unsupported_parameter");
}

void check_common(const json& body, const ParseContext& ctx, GenerationRequest& r) {
  const json* model = field(body, "model");
  if (!model)
    throw ApiError(400, "you must provide a model parameter", "model", "invalid_request_error",
                   "missing_required_parameter");
  if (!model->is_string()) throw wrong_type("model", "a string", *model);
  r.model = model->get<std::string>();
  if (r.model != ctx.model_id &&
      std::find(ctx.model_aliases.begin(), ctx.model_aliases.end(), r.model) == ctx.model_aliases.end()) {
    std::string names = "'" + ctx.model_id + "'";
    for (const std::string& a : ctx.model_aliases) names += ", '" + a + "'";
    throw ApiError(404, "The model '" + r.model + "' does not exist; this server serves " + names + ".", "model",
                   "invalid_request_error", "model_not_found");
  }

  if (get_int(body, "n", 1, 1 << 30, 1) != 1)
    throw ApiError(400, "'n' greater than 1 is not supported: one choice per request.", "n", "invalid_request_error",
                   "unsupported_parameter");
  must_be_off(body, "presence_penalty", "penalties would change K3's distribution; send 0 or leave it out.");
  must_be_off(body, "frequency_penalty", "penalties would change K3's distribution; send 0 or leave it out.");
  must_be_off(body, "logit_bias", "biases would change K3's distribution; leave it out.");
  if (const json* u = field(body, "user"); u && !u->is_string()) throw wrong_type("user", "a string", *u);

  r.stream = get_bool(body, "stream", false);
  if (const json* so = field(body, "stream_options")) {
    if (!r.stream)
      throw bad_field("stream_options", "The 'stream_options' parameter is only allowed when 'stream' is enabled.");
    if (!so->is_object()) throw wrong_type("stream_options", "an object", *so);
    only_known_keys(*so, {"include_usage"}, "stream_options.");
    if (const json* iu = field(*so, "include_usage")) {
      if (!iu->is_boolean()) throw wrong_type("stream_options.include_usage", "a boolean", *iu);
      r.include_usage = iu->get<bool>();
    }
  }

  const double temperature = get_number(body, "temperature", 0.0, 2.0, ctx.default_temperature);
  const double top_p = get_number(body, "top_p", 0.0, 1.0, ctx.default_top_p);
  if (top_p <= 0.0) throw bad_field("top_p", "'top_p' must be greater than 0.");
  const int64_t top_k = get_int(body, "top_k", 0, ctx.tokenizer->vocab_size(), 0);
  r.sampling.temperature = static_cast<float>(temperature);
  r.sampling.top_p = static_cast<float>(top_p);
  r.sampling.top_k = static_cast<int>(top_k);
  if (const json* s = field(body, "seed")) {
    if (!s->is_number_integer()) throw wrong_type("seed", "an integer", *s);
    r.sampling.seed = s->is_number_unsigned() ? s->get<uint64_t>() : static_cast<uint64_t>(s->get<int64_t>());
    r.seeded = true;
  } else if (r.sampling.greedy()) {
    r.seeded = true;
  } else {
    // An unseeded sample is still drawn with the exact sampler, from a fresh seed.
    std::random_device rd;
    r.sampling.seed = (uint64_t(rd()) << 32) ^ rd();
  }

  if (const json* stop = field(body, "stop")) {
    auto add = [&](const json& s, const std::string& param) {
      if (!s.is_string()) throw wrong_type(param, "a string", s);
      std::string text = s.get<std::string>();
      if (text.empty()) throw bad_field(param, "stop sequences must not be empty.");
      if (text.size() > 1024) throw bad_field(param, "stop sequences must be at most 1024 bytes.");
      r.stop.push_back(std::move(text));
    };
    if (stop->is_string()) add(*stop, "stop");
    else if (stop->is_array()) {
      if (stop->size() > 4) throw bad_field("stop", "at most 4 stop sequences are allowed.");
      for (size_t i = 0; i < stop->size(); ++i) add((*stop)[i], "stop[" + std::to_string(i) + "]");
    } else throw wrong_type("stop", "a string or an array of strings", *stop);
  }
}

void check_lengths(const json& body, const ParseContext& ctx, GenerationRequest& r, const char* prompt_param,
                   int default_max) {
  const int64_t prompt = static_cast<int64_t>(r.prompt.size());
  if (prompt >= ctx.context_limit)
    throw ApiError(400,
                   "This model's maximum context length is " + std::to_string(ctx.context_limit) +
                       " tokens; the prompt has " + std::to_string(prompt) + " tokens.",
                   prompt_param, "invalid_request_error", "context_length_exceeded");
  const json* mt = field(body, "max_tokens");
  const json* mct = field(body, "max_completion_tokens");
  if (mt && mct && *mt != *mct)
    throw bad_field("max_completion_tokens", "'max_tokens' and 'max_completion_tokens' disagree; send one of them.");
  const char* name = mct ? "max_completion_tokens" : "max_tokens";
  const int64_t room = std::min<int64_t>(ctx.max_tokens_limit, ctx.context_limit - prompt);
  const int64_t fallback = default_max > 0 ? std::min<int64_t>(default_max, room) : room;
  const int64_t asked = get_int(body, name, 1, std::numeric_limits<int64_t>::max(), fallback);
  if (asked > ctx.max_tokens_limit)
    throw bad_field(name, "'" + std::string(name) + "' must be at most " + std::to_string(ctx.max_tokens_limit) +
                              " on this server, got " + std::to_string(asked) + ".");
  if (prompt + asked > ctx.context_limit)
    throw ApiError(400,
                   "This model's maximum context length is " + std::to_string(ctx.context_limit) +
                       " tokens; the prompt (" + std::to_string(prompt) + ") plus '" + name + "' (" +
                       std::to_string(asked) + ") exceeds it.",
                   name, "invalid_request_error", "context_length_exceeded");
  r.max_tokens = static_cast<int>(asked);
}

// The fields check_lengths reads, kept until the request is tokenized.
void keep_length_fields(const json& body, GenerationRequest& r) {
  r.length_fields = json::object();
  for (const char* k : {"max_tokens", "max_completion_tokens"})
    if (const json* f = field(body, k)) r.length_fields[k] = *f;
}

std::string message_text(const json& content, const std::string& param, bool null_ok) {
  if (content.is_null()) {
    if (null_ok) return {};
    throw bad_field(param, "'" + param + "' must not be null.");
  }
  if (content.is_string()) return content.get<std::string>();
  if (!content.is_array()) throw wrong_type(param, "a string or an array of content parts", content);
  std::string text;
  for (size_t j = 0; j < content.size(); ++j) {
    const json& part = content[j];
    const std::string p = param + "[" + std::to_string(j) + "]";
    if (!part.is_object()) throw wrong_type(p, "an object", part);
    const json* type = field(part, "type");
    if (!type || !type->is_string()) throw bad_field(p + ".type", "each content part needs a string 'type'.");
    const std::string t = type->get<std::string>();
    if (t != "text")
      throw ApiError(400, "content parts of type '" + t + "' are not supported: K3 is served text-only.", p + ".type",
                     "invalid_request_error", "unsupported_content");
    only_known_keys(part, {"type", "text"}, p + ".");
    const json* tx = field(part, "text");
    if (!tx || !tx->is_string()) throw bad_field(p + ".text", "a text part needs a string 'text'.");
    text += tx->get<std::string>();
  }
  return text;
}

}  // namespace

json parse_json_body(std::string_view body, int max_depth) {
  int depth = 0;
  bool in_string = false, escaped = false;
  for (char c : body) {
    if (in_string) {
      if (escaped) escaped = false;
      else if (c == '\\') escaped = true;
      else if (c == '"') in_string = false;
      continue;
    }
    if (c == '"') in_string = true;
    else if (c == '{' || c == '[') {
      if (++depth > max_depth)
        throw ApiError(400, "The request body is nested deeper than " + std::to_string(max_depth) + " levels.", {},
                       "invalid_request_error", "invalid_json");
    } else if (c == '}' || c == ']') --depth;
  }
  json j = json::parse(body.begin(), body.end(), nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded())
    throw ApiError(400,
                   "We could not parse the JSON body of your request. The body must be valid JSON (UTF-8) holding "
                   "one object.",
                   {}, "invalid_request_error", "invalid_json");
  if (!j.is_object())
    throw ApiError(400, "The request body must be a JSON object, got " + std::string(j.type_name()) + ".", {},
                   "invalid_request_error", "invalid_json");
  return j;
}

namespace {

ToolCall parse_tool_call(const json& c, const std::string& p) {
  if (!c.is_object()) throw wrong_type(p, "an object", c);
  only_known_keys(c, {"id", "type", "function"}, p + ".");
  if (const json* t = field(c, "type"); t && *t != "function")
    throw bad_field(p + ".type", "tool calls of type " + t->dump() + " are not supported: only 'function'.");
  ToolCall call;
  if (const json* id = field(c, "id")) {
    if (!id->is_string()) throw wrong_type(p + ".id", "a string", *id);
    call.id = id->get<std::string>();
  }
  const json* fn = field(c, "function");
  if (!fn) throw bad_field(p + ".function", "each tool call needs a 'function' with a 'name' and 'arguments'.");
  if (!fn->is_object()) throw wrong_type(p + ".function", "an object", *fn);
  only_known_keys(*fn, {"name", "arguments"}, p + ".function.");
  const json* name = field(*fn, "name");
  if (!name || !name->is_string() || name->get<std::string>().empty())
    throw bad_field(p + ".function.name", "each tool call needs a non-empty string 'name'.");
  call.name = name->get<std::string>();
  if (const json* a = field(*fn, "arguments")) {
    if (a->is_string()) call.arguments = a->get<std::string>();
    else if (a->is_object()) call.arguments = a->dump();
    else throw wrong_type(p + ".function.arguments", "a string holding a JSON object", *a);
    const json args = json::parse(call.arguments, nullptr, /*allow_exceptions=*/false);
    if (!args.is_discarded() && !args.is_object())
      throw bad_field(p + ".function.arguments", "tool call arguments must be a JSON object.");
  }
  return call;
}

void check_tools(const json& tools, const std::string& p) {
  if (!tools.is_array()) throw wrong_type(p, "an array", tools);
  for (size_t i = 0; i < tools.size(); ++i) {
    const json& t = tools[i];
    const std::string q = p + "[" + std::to_string(i) + "]";
    if (!t.is_object()) throw wrong_type(q, "an object", t);
    const json* type = field(t, "type");
    if (!type || *type != "function") throw bad_field(q + ".type", "only tools of type 'function' are supported.");
    const json* fn = field(t, "function");
    if (!fn || !fn->is_object()) throw bad_field(q + ".function", "each tool needs a 'function' object.");
    const json* name = field(*fn, "name");
    if (!name || !name->is_string() || name->get<std::string>().empty())
      throw bad_field(q + ".function.name", "each tool needs a non-empty string 'name'.");
    if (const json* params = field(*fn, "parameters"); params && !params->is_object())
      throw wrong_type(q + ".function.parameters", "an object (a JSON Schema)", *params);
  }
}

ResponseFormat parse_response_format(const json& rf) {
  if (!rf.is_object()) throw wrong_type("response_format", "an object", rf);
  const json* t = field(rf, "type");
  if (!t || !t->is_string()) throw bad_field("response_format.type", "'response_format' needs a string 'type'.");
  ResponseFormat out;
  const std::string type = t->get<std::string>();
  if (type == "text") {
    only_known_keys(rf, {"type"}, "response_format.");
  } else if (type == "json_object") {
    only_known_keys(rf, {"type"}, "response_format.");
    out.kind = ResponseFormat::Kind::JsonObject;
  } else if (type == "json_schema") {
    only_known_keys(rf, {"type", "json_schema"}, "response_format.");
    const json* js = field(rf, "json_schema");
    if (!js) throw bad_field("response_format.json_schema", "a 'json_schema' response format needs 'json_schema'.");
    if (!js->is_object()) throw wrong_type("response_format.json_schema", "an object", *js);
    only_known_keys(*js, {"name", "description", "schema", "strict"}, "response_format.json_schema.");
    if (const json* n = field(*js, "name"); n && !n->is_string())
      throw wrong_type("response_format.json_schema.name", "a string", *n);
    if (const json* sc = field(*js, "schema")) {
      if (!sc->is_object()) throw wrong_type("response_format.json_schema.schema", "an object", *sc);
      out.schema = *sc;
    }
    out.kind = ResponseFormat::Kind::JsonSchema;
  } else {
    throw bad_field("response_format.type",
                    "'response_format.type' must be 'text', 'json_object' or 'json_schema', got '" + type + "'.");
  }
  return out;
}

}  // namespace

ChatRequestParts parse_chat_messages(const json& body, size_t max_messages) {
  ChatRequestParts parts;
  ChatOptions& opt = parts.options;
  if (const json* re = field(body, "reasoning_effort")) {
    if (!re->is_string()) throw wrong_type("reasoning_effort", "a string", *re);
    const std::string v = re->get<std::string>();
    if (v == "none") opt.thinking = false;
    else if (auto e = parse_reasoning_effort(v)) opt.effort = *e;
    else
      throw bad_field("reasoning_effort",
                      "'reasoning_effort' must be one of 'none', 'low', 'high', 'max' (K3's levels), got '" + v + "'.");
  }
  if (const json* tools = field(body, "tools")) {
    check_tools(*tools, "tools");
    opt.tools = *tools;
  }
  if (const json* tc = field(body, "tool_choice")) {
    if (tc->is_object())
      throw ApiError(400,
                     "'tool_choice' naming one function is not supported: K3 cannot be told which tool to call. Use "
                     "'required' (some tool must be called), 'auto' or 'none'.",
                     "tool_choice", "invalid_request_error", "unsupported_parameter");
    if (!tc->is_string()) throw wrong_type("tool_choice", "a string", *tc);
    const std::string v = tc->get<std::string>();
    if (v == "required") opt.tool_choice = ToolChoice::Required;
    else if (v == "none") opt.tool_choice = ToolChoice::None;
    else if (v != "auto")
      throw bad_field("tool_choice", "'tool_choice' must be 'auto', 'required' or 'none', got '" + v + "'.");
  }
  if (const json* rf = field(body, "response_format")) opt.response_format = parse_response_format(*rf);

  const json* msgs = field(body, "messages");
  if (!msgs)
    throw ApiError(400, "you must provide a messages parameter", "messages", "invalid_request_error",
                   "missing_required_parameter");
  if (!msgs->is_array()) throw wrong_type("messages", "an array", *msgs);
  if (msgs->empty()) throw bad_field("messages", "'messages' must hold at least one message.");
  if (msgs->size() > max_messages)
    throw bad_field("messages", "at most " + std::to_string(max_messages) + " messages per request.");
  for (size_t i = 0; i < msgs->size(); ++i) {
    const json& m = (*msgs)[i];
    const std::string p = "messages[" + std::to_string(i) + "]";
    if (!m.is_object()) throw wrong_type(p, "an object", m);
    only_known_keys(m,
                    {"role", "content", "name", "reasoning_content", "tool_calls", "tool_call_id", "tools",
                     "function_call", "refusal"},
                    p + ".");
    const json* role = field(m, "role");
    if (!role || !role->is_string()) throw bad_field(p + ".role", "each message needs a string 'role'.");
    std::string rl = role->get<std::string>();
    if (rl == "developer") rl = "system";
    if (rl == "function")
      throw ApiError(400,
                     "'function' messages (the deprecated function-call API) are not supported: use 'tool' messages.",
                     p + ".role", "invalid_request_error", "unsupported_parameter");
    if (rl != "system" && rl != "user" && rl != "assistant" && rl != "tool")
      throw bad_field(p + ".role", "unknown role '" + rl + "': use system, developer, user, assistant or tool.");
    if (field(m, "function_call"))
      throw bad_field(p + ".function_call", "the deprecated function-call API is not supported: use 'tool_calls'.");
    if (const json* rf = field(m, "refusal"); rf && !rf->is_string()) throw wrong_type(p + ".refusal", "a string", *rf);
    ChatMessage cm;
    cm.role = rl;
    if (const json* tcs = field(m, "tool_calls")) {
      if (rl != "assistant") throw bad_field(p + ".tool_calls", "only assistant messages carry 'tool_calls'.");
      if (!tcs->is_array()) throw wrong_type(p + ".tool_calls", "an array", *tcs);
      for (size_t k = 0; k < tcs->size(); ++k)
        cm.tool_calls.push_back(parse_tool_call((*tcs)[k], p + ".tool_calls[" + std::to_string(k) + "]"));
    }
    if (const json* id = field(m, "tool_call_id")) {
      if (rl != "tool") throw bad_field(p + ".tool_call_id", "'tool_call_id' belongs to tool messages.");
      if (!id->is_string()) throw wrong_type(p + ".tool_call_id", "a string", *id);
      cm.tool_call_id = id->get<std::string>();
    }
    if (const json* tools = field(m, "tools")) {
      if (rl != "system") throw bad_field(p + ".tools", "only system messages declare 'tools' mid-conversation.");
      check_tools(*tools, p + ".tools");
      cm.tools = *tools;
    }
    auto content = m.find("content");
    if (content == m.end()) {
      if (rl != "assistant" && cm.tools.is_null())
        throw bad_field(p + ".content", "each " + rl + " message needs 'content'.");
    } else {
      cm.content = message_text(*content, p + ".content", rl == "assistant" || !cm.tools.is_null());
    }
    if (const json* nm = field(m, "name")) {
      if (!nm->is_string()) throw wrong_type(p + ".name", "a string", *nm);
      cm.name = nm->get<std::string>();
    }
    if (const json* rc = field(m, "reasoning_content")) {
      if (rl != "assistant") throw bad_field(p + ".reasoning_content", "only assistant messages carry reasoning.");
      if (!rc->is_string()) throw wrong_type(p + ".reasoning_content", "a string", *rc);
      cm.reasoning = rc->get<std::string>();
    }
    parts.messages.push_back(std::move(cm));
  }
  return parts;
}

GenerationRequest validate_chat_request(const json& body, const ParseContext& ctx) {
  only_known_keys(body,
                  {"model",
                   "messages",
                   "stream",
                   "stream_options",
                   "max_tokens",
                   "max_completion_tokens",
                   "temperature",
                   "top_p",
                   "top_k",
                   "seed",
                   "stop",
                   "n",
                   "reasoning_effort",
                   "user",
                   "tools",
                   "tool_choice",
                   "parallel_tool_calls",
                   "functions",
                   "function_call",
                   "response_format",
                   "logprobs",
                   "top_logprobs",
                   "logit_bias",
                   "presence_penalty",
                   "frequency_penalty",
                   "store",
                   "metadata",
                   "modalities",
                   "audio",
                   "prediction",
                   "service_tier",
                   "web_search_options"},
                  "");
  GenerationRequest r;
  r.kind = GenerationRequest::Kind::Chat;
  check_common(body, ctx, r);

  r.parallel_tool_calls = get_bool(body, "parallel_tool_calls", true);
  must_be_off(body, "functions", "the deprecated function-call API is not supported: use 'tools'.");
  if (field(body, "function_call"))
    throw ApiError(400, "'function_call' is not supported: use 'tool_choice'.", "function_call",
                   "invalid_request_error", "unsupported_parameter");
  r.logprobs = get_bool(body, "logprobs", false);
  r.top_logprobs = static_cast<int>(get_int(body, "top_logprobs", 0, 20, 0));
  if (r.top_logprobs > 0 && !r.logprobs)
    throw bad_field("top_logprobs", "'top_logprobs' needs 'logprobs' set to true.");
  must_be_off(body, "store", "this server stores nothing.");
  if (const json* m = field(body, "metadata"); m && !m->is_object()) throw wrong_type("metadata", "an object", *m);
  if (field(body, "audio"))
    throw ApiError(400, "'audio' is not supported: K3 is served text-only.", "audio", "invalid_request_error",
                   "unsupported_parameter");
  if (field(body, "prediction"))
    throw ApiError(400, "'prediction' is not supported.", "prediction", "invalid_request_error",
                   "unsupported_parameter");
  if (field(body, "web_search_options"))
    throw ApiError(400, "'web_search_options' is not supported.", "web_search_options", "invalid_request_error",
                   "unsupported_parameter");
  if (const json* st = field(body, "service_tier")) {
    if (!st->is_string()) throw wrong_type("service_tier", "a string", *st);
    if (st->get<std::string>() != "auto" && st->get<std::string>() != "default")
      throw bad_field("service_tier", "'service_tier' must be 'auto' or 'default' here.");
  }
  if (const json* mod = field(body, "modalities")) {
    if (!mod->is_array()) throw wrong_type("modalities", "an array", *mod);
    for (const json& m : *mod)
      if (m != "text") throw bad_field("modalities", "only the 'text' modality is supported.");
  }

  r.chat_parts = parse_chat_messages(body, ctx.max_messages);
  r.thinking = r.chat_parts.options.thinking;
  keep_length_fields(body, r);
  return r;
}

GenerationRequest parse_chat_request(const json& body, const ParseContext& ctx) {
  GenerationRequest r = validate_chat_request(body, ctx);
  tokenize_request(r, ctx);
  return r;
}

GenerationRequest parse_completion_request(const json& body, const ParseContext& ctx) {
  GenerationRequest r = validate_completion_request(body, ctx);
  tokenize_request(r, ctx);
  return r;
}

void tokenize_request(GenerationRequest& r, const ParseContext& ctx) {
  if (r.tokenized) return;
  if (r.kind == GenerationRequest::Kind::Chat) {
    const ChatRequestParts& parts = r.chat_parts;
    ChatOptions head = parts.options;
    head.add_generation_prompt = false;
    head.tool_choice = ToolChoice::Auto;
    head.response_format = {};
    try {
      // The conversation without the per-request tail: a later turn starts with exactly these ids.
      r.turn_boundary = render_chat(*ctx.tokenizer, parts.messages, head).size();
      r.prompt = render_chat(*ctx.tokenizer, parts.messages, parts.options);
    } catch (const Error& e) {
      throw ApiError(400, e.what(), "messages", "invalid_request_error");
    }
    check_lengths(r.length_fields, ctx, r, "messages", 0);
  } else {
    if (r.prompt_text) {
      // A raw prompt starts with [BOS], as the reference does; its text never becomes special ids.
      r.prompt.clear();
      if (auto bos = ctx.tokenizer->special_id("[BOS]")) r.prompt.push_back(*bos);
      const auto ids = ctx.tokenizer->encode(*r.prompt_text, /*allow_special=*/false);
      r.prompt.insert(r.prompt.end(), ids.begin(), ids.end());
    }
    check_lengths(r.length_fields, ctx, r, "prompt", 16);
  }
  r.tokenized = true;
}

GenerationRequest validate_completion_request(const json& body, const ParseContext& ctx) {
  only_known_keys(
      body,
      {"model", "prompt", "suffix", "max_tokens", "temperature", "top_p", "top_k", "n", "stream", "stream_options",
       "logprobs", "echo", "stop", "presence_penalty", "frequency_penalty", "best_of", "logit_bias", "user", "seed"},
      "");
  GenerationRequest r;
  r.kind = GenerationRequest::Kind::Completion;
  check_common(body, ctx, r);
  if (const json* s = field(body, "suffix"); s && !(s->is_string() && s->get<std::string>().empty()))
    throw ApiError(400, "'suffix' is not supported: K3 has no fill-in-the-middle mode.", "suffix",
                   "invalid_request_error", "unsupported_parameter");
  // The legacy form: an integer, the number of most likely alternatives per token (0..5).
  if (field(body, "logprobs")) {
    r.logprobs = true;
    r.top_logprobs = static_cast<int>(get_int(body, "logprobs", 0, 5, 0));
  }
  if (get_bool(body, "echo", false))
    throw ApiError(400, "'echo' is not supported.", "echo", "invalid_request_error", "unsupported_parameter");
  if (get_int(body, "best_of", 1, 1 << 30, 1) != 1)
    throw ApiError(400, "'best_of' greater than 1 is not supported.", "best_of", "invalid_request_error",
                   "unsupported_parameter");

  const json* prompt = field(body, "prompt");
  if (!prompt)
    throw ApiError(400, "you must provide a prompt parameter", "prompt", "invalid_request_error",
                   "missing_required_parameter");
  const json* one = prompt;
  if (prompt->is_array() && !prompt->empty() && ((*prompt)[0].is_string() || (*prompt)[0].is_array())) {
    if (prompt->size() != 1)
      throw ApiError(400,
                     "batched prompts (an array of " + std::to_string(prompt->size()) +
                         ") are not supported: send one prompt per request.",
                     "prompt", "invalid_request_error", "unsupported_parameter");
    one = &(*prompt)[0];
  }
  if (one->is_string()) {
    r.prompt_text = one->get<std::string>();
  } else if (one->is_array()) {
    if (one->empty()) throw bad_field("prompt", "a token prompt must hold at least one id.");
    if (one->size() > size_t(ctx.context_limit))
      throw ApiError(400, "This model's maximum context length is " + std::to_string(ctx.context_limit) + " tokens.",
                     "prompt", "invalid_request_error", "context_length_exceeded");
    for (size_t i = 0; i < one->size(); ++i) {
      const json& id = (*one)[i];
      if (!id.is_number_integer()) throw wrong_type("prompt[" + std::to_string(i) + "]", "an integer token id", id);
      const int64_t v = id.is_number_unsigned() && id.get<uint64_t>() > uint64_t(INT64_MAX) ? -1 : id.get<int64_t>();
      if (v < 0 || v >= ctx.tokenizer->vocab_size())
        throw bad_field("prompt[" + std::to_string(i) + "]",
                        "token id " + id.dump() + " is outside the vocabulary (0.." +
                            std::to_string(ctx.tokenizer->vocab_size() - 1) + ").");
      r.prompt.push_back(static_cast<int32_t>(v));
    }
  } else {
    throw wrong_type("prompt", "a string, an array of token ids, or a one-element array of either", *prompt);
  }
  keep_length_fields(body, r);
  return r;
}

}  // namespace deltafin::serve
